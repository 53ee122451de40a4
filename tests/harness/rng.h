/* Small deterministic PRNG (splitmix64) so every generated case reproduces from its seed. */
#ifndef LIG_TESTS_HARNESS_RNG_H
#define LIG_TESTS_HARNESS_RNG_H

#include <stdint.h>

typedef struct th_rng {
    uint64_t state;
} th_rng;

static inline th_rng th_rng_make(uint64_t seed)
{
    th_rng r;
    r.state = seed ^ 0x9E3779B97F4A7C15ull;
    return r;
}

static inline uint64_t th_rng_next(th_rng *r)
{
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform integer in [lo, hi] (inclusive); lo when hi < lo. */
static inline int64_t th_rng_range(th_rng *r, int64_t lo, int64_t hi)
{
    if (hi <= lo) {
        return lo;
    }
    uint64_t span = (uint64_t)hi - (uint64_t)lo + 1u;
    if (span == 0) { /* the full 64-bit range */
        return (int64_t)th_rng_next(r);
    }
    return (int64_t)((uint64_t)lo + th_rng_next(r) % span);
}

/* Uniform double in [0, 1). */
static inline double th_rng_unit(th_rng *r)
{
    return (double)(th_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* 1 with probability p. */
static inline int th_rng_chance(th_rng *r, double p)
{
    return th_rng_unit(r) < p;
}

#endif /* LIG_TESTS_HARNESS_RNG_H */

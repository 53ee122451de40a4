/*
 * What the two fuzzers (test_fuzz.c: backward; test_fuzz_fwd.c: forward and KL step) share: the
 * seeded, time-budgeted iteration loop and a few small random pickers.
 */
#ifndef LIG_TESTS_FUZZ_UTIL_H
#define LIG_TESTS_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "lig.h"
#include "rng.h"

#define FUZZ_MAX_FAILING_ITERATIONS 10

/* One iteration; returns 1 when it behaved. */
typedef int (*fuzz_iteration_fn)(uint64_t seed, int64_t iter, void *stats);

/* Reads LIG_FUZZ_SEED (default_seed when unset) and LIG_FUZZ_ITER, notes the seed and the budget
 * (`share` of LIG_FUZZ_SECONDS), then runs LIG_FUZZ_ITER's iteration alone, or iterations
 * 0, 1, ... until at least min_iterations ran and the budget is spent, stopping early after
 * FUZZ_MAX_FAILING_ITERATIONS failing ones. Leaves the thread count at its default. */
void fuzz_drive(double share, uint64_t default_seed, int64_t min_iterations, fuzz_iteration_fn one, void *stats);

/* Appends `s` to a ", "-separated list of expected defects. */
void fuzz_note_defect(char *what, size_t size, const char *s);
/* A pre/next_tokens value: mostly unbounded, sometimes small, rarely huge. */
int64_t fuzz_pick_band(th_rng *r);
/* st is NULLPTR and that is allowed, or INVALID and that is allowed. */
int fuzz_status_in(lig_status st, int allow_nullptr, int allow_invalid);

#endif /* LIG_TESTS_FUZZ_UTIL_H */

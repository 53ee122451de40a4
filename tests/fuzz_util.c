#include "fuzz_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_budget.h"
#include "harness.h"

void fuzz_drive(double share, uint64_t default_seed, int64_t min_iterations, fuzz_iteration_fn one, void *stats)
{
    const uint64_t seed = (uint64_t)th_env_int("LIG_FUZZ_SEED", (int64_t)default_seed);
    const double seconds = th_fuzz_seconds(share);
    const int64_t only = th_env_int("LIG_FUZZ_ITER", -1);
    th_note("fuzz seed %" PRIu64 " (LIG_FUZZ_SEED overrides), %.1f s budget (its share of LIG_FUZZ_SECONDS)", seed,
            seconds);
    int failing = 0;
    if (only >= 0) {
        one(seed, only, stats);
    } else {
        const double deadline = th_now() + seconds;
        for (int64_t iter = 0; iter < min_iterations || th_now() < deadline; iter++) {
            if (!one(seed, iter, stats) && ++failing >= FUZZ_MAX_FAILING_ITERATIONS) {
                th_note("stopping after %d failing iterations", failing);
                break;
            }
        }
    }
    lig_set_num_threads(0);
}

void fuzz_note_defect(char *what, size_t size, const char *s)
{
    size_t n = strlen(what);
    snprintf(what + n, size - n, "%s%s", n ? ", " : "", s);
}

int64_t fuzz_pick_band(th_rng *r)
{
    double u = th_rng_unit(r);
    if (u < 0.5) {
        return INT64_MAX;
    }
    if (u < 0.85) {
        return th_rng_range(r, 0, 6);
    }
    return th_rng_chance(r, 0.5) ? INT64_MAX - 1 : (int64_t)1 << 40;
}

int fuzz_status_in(lig_status st, int allow_nullptr, int allow_invalid)
{
    return (allow_nullptr && st == LIG_ERR_PARAM_NULLPTR) || (allow_invalid && st == LIG_ERR_PARAM_INVALID);
}

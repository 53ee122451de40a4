/*
 * LIG_FUZZ_SECONDS (default 20) is the time budget of all fuzz tests together: the backward's
 * fuzz (test_fuzz.c) and the forward / KL-step fuzz (test_fuzz_fwd.c) each run for their share,
 * so the suite's total time does not change with the number of fuzz tests.
 */
#ifndef LIG_TESTS_HARNESS_FUZZ_BUDGET_H
#define LIG_TESTS_HARNESS_FUZZ_BUDGET_H

#include "framework.h"

#define FUZZ_SHARE_BACKWARD 0.5
#define FUZZ_SHARE_FORWARD_KL 0.5

/* Seconds for a fuzz test with the given share of LIG_FUZZ_SECONDS. */
static inline double th_fuzz_seconds(double share)
{
    return share * (double)th_env_int("LIG_FUZZ_SECONDS", 20);
}

#endif /* LIG_TESTS_HARNESS_FUZZ_BUDGET_H */

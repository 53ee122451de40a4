/*
 * Comparing a library result with the float64 reference.
 *
 * Per output: max |lib - ref| <= tol * max |ref| (tolerance by output dtype), exact zeros where
 * nothing contributed, and -- when the data is on the 1/8 grid and every partial sum is
 * representable in fp32 -- bitwise agreement with the reference rounded once (RNE) to the output
 * dtype, since then any fp32 accumulation order is exact.
 */
#ifndef LIG_TESTS_CHECK_H
#define LIG_TESTS_CHECK_H

#include "runner.h"
#include "tcase.h"

/* Running totals over check_result calls, so tests can show (and assert) that they exercised
 * real work rather than matching all-zero outputs. */
typedef struct check_stats {
    int64_t cases;          /* results compared */
    int64_t counted_slots;  /* slots that contributed (valid row, index in range and visible) */
    int64_t nonzero;        /* output elements with a non-zero reference value */
    int64_t exact_outputs;  /* outputs compared bit-exactly (grid data, fp32 sums exact) */
} check_stats;

void check_stats_reset(void);
check_stats check_stats_get(void);

/* Relative tolerance for an output dtype (bf16 1e-2, fp16 2e-3, fp32 1e-4). */
double check_tolerance(lig_dtype out_dtype);

/* Compares a successful result with the reference; `label` prefixes failure messages.
 * Returns 1 when everything matched. */
int check_result(const tcase *tc, const run_result *res, const char *label);

/* Runs the case and expects success matching the reference. Returns 1 on success. */
int check_case(tcase *tc, const char *label);

/* For layouts the SPEC lets the library refuse (innermost stride != 1, stride-0 broadcast):
 * either a clean PARAM_INVALID from phase 1 (message set, nothing written; *refused = 1) or a
 * result matching the reference. Returns 1 when one of the two happened. */
int check_case_or_refused(tcase *tc, const char *label, int *refused);

#endif /* LIG_TESTS_CHECK_H */

/*
 * Comparing a library result with the float64 reference.
 *
 * Per element: exactly 0 where nothing contributed; when the data is on the 1/8 grid and every
 * partial sum is representable in fp32, bitwise agreement with the reference rounded once (RNE)
 * to the output dtype, since then any fp32 accumulation order is exact; otherwise within the
 * element's own bound u_out |ref| + 2 n 2^-24 abs + tiny (error_bounds.h), from the reference's sum of
 * |elementary products| (abs) and the fp32 roundings each of them goes through (n).
 */
#ifndef LIG_TESTS_HARNESS_BACKWARD_CHECKS_H
#define LIG_TESTS_HARNESS_BACKWARD_CHECKS_H

#include "backward_runner.h"
#include "problem_case.h"

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
/* A th_note line with the totals; fails when the results were all zero or fewer than min_work
 * slots counted. */
void check_stats_note(const char *what, int64_t min_work);

/* A relative tolerance per output dtype (bf16 1e-2, fp16 2e-3, fp32 1e-4), for comparisons with
 * something less exact than the reference (finite differences). */
double check_tolerance(lig_dtype out_dtype);

/* What check_output found in one output. */
typedef struct check_outcome {
    int exact;          /* compared bitwise (grid data whose fp32 sums are exact) */
    int64_t bad;        /* elements that failed */
    int64_t first;      /* the first of them, -1 when none */
    const char *why;    /* why it failed */
    double first_bound; /* its bound */
    double worst;       /* max |lib - ref| over the output */
} check_outcome;

/* Compares the n elements of one output of `dtype` with the reference under the rules above,
 * without reporting: abs_sum and terms are the reference's (ref_grads), and an elementary
 * product goes through terms[i] + extra_steps fp32 roundings. */
void check_output(lig_dtype dtype, int grid, int64_t n, const double *lib, const double *ref, const double *abs_sum,
                  const int64_t *terms, int64_t extra_steps, check_outcome *out);

/* Compares a successful result with the reference; `label` prefixes failure messages.
 * Returns 1 when everything matched. */
int check_result(const tcase *tc, const run_result *res, const char *label);

/* Reads the outputs of an instance whose phase 2 succeeded and compares them (not the gaps). */
int check_inst(const run_inst *ri, const tcase *tc, const char *label);

/* Runs the case and expects success matching the reference. Returns 1 on success. */
int check_case(tcase *tc, const char *label);
/* For layouts the contract lets the library refuse (innermost stride != 1, stride-0 broadcast):
 * suite_check (suite.h) with `refused`. */

#endif /* LIG_TESTS_HARNESS_BACKWARD_CHECKS_H */

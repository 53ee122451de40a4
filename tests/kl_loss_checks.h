/* Checks the KL-loss tests share (tests/test_sparse_kl_loss.c, tests/test_sparse_kl_sinks.c): the
 * base problem, bitwise comparison, thread and ring invariance, central finite differences of a
 * float64 loss against analytic gradients, and the error-case protocol (status, message, no
 * executor, nothing written). */
#ifndef LIG_TESTS_KL_LOSS_CHECKS_H
#define LIG_TESTS_KL_LOSS_CHECKS_H

#include "kl_loss_case.h"

/* BSND, B 2, S1 6, S2 9, Nidx1 4, Nidx2 1, D 8, K 7, main N1 8, Dm 24, Dr 8, FLOAT32, head mean,
 * mode 3 without a band, INT64 indices, FLOAT32 d_weights. */
lkcase_desc lkcase_base_desc(void);

/* The base problem grown for the thread tests: B 3, S1 24, S2 40, K 90 (several blocks per unit),
 * two index key heads of 32 heads each, 32 main heads; `dtype` for every float input. */
lkcase_desc lkcase_threads_desc(lig_dtype dtype);

/* Whether the outputs (d_query_index .. loss) of two cases are the same bytes. */
int lkcase_outputs_equal(const lkcase *a, const lkcase *b);

/* Runs the problem (d, seed) with 1-3 threads and ring capacities 0, 1, 3 and checks every result
 * bit for bit against `first`; the thread count and tuning are left at their defaults. */
void lkcase_check_thread_invariance(const lkcase_desc *d, uint64_t seed, const lkcase *first, const char *label);

/* Replaces the index data (query_index, key_index, weights) of the case's float64 copies by
 * continuous values, so that no score sits on the ReLU's kink within a finite-difference step. */
void lkcase_continuous_index_data(lkcase *c, uint64_t seed);

/* Central differences (step 1e-6) of loss(c, ctx) in each element of the float64 query_index,
 * key_index and weights, against grads (dq, dk, dw): |fd - g| <= 1e-6 + rel |fd|. Returns the
 * number checked; *nonzero (may be NULL) gets how many had |fd| > 1e-4. */
int lkcase_check_finite_differences(lkcase *c, double (*loss)(const lkcase *c, void *ctx), void *ctx,
                                    const double *const grads[3], double rel, const char *label, int *nonzero);

/* The case's call must fail in `phase` (1, or 2 after a successful phase 1) with `want`, a message
 * naming one of `names` ('|'-separated), no executor left by phase 1, and no output written. */
void lkcase_expect_failure(lkcase *c, int phase, lig_status want, const char *names, const char *label);

#endif

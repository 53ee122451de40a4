/* The problems of lig_dense_indexer_kl_loss_grad (docs/contract.md 2.9) for the C tests and the
 * libFuzzer target: the dense lse's case (dense_lse_case.h; its lse computed by
 * lig_dense_indexer_softmax_lse, as the pipeline does), a target over each row's visible entries
 * (NaN past them: never read), the outputs, the call, and the float64 reference written here:
 * the scores, the loss by its definition, its analytic gradients (checked against finite
 * differences of the loss in test_dense_kl_grad.c) and a bound on what fp32 scores may move them. */
#ifndef LIG_TESTS_HARNESS_DENSE_KL_CASE_H
#define LIG_TESTS_HARNESS_DENSE_KL_CASE_H

#include "dense_lse_case.h"

typedef struct kl_case {
    lse_case in;            /* query, key, weights, lengths, residuals, and softmax_lse (the lse op's output) */
    tbuf target, dq, dk, dw, sm, loss;
    int64_t W;              /* entries axis of target and softmax_out */
    bool deterministic, with_loss;
    double *Q, *K, *Wt, *T, *L; /* the inputs in float64, row-major logical order */
} kl_case;

/* The case of `d` (W: the longest batch's entries + extra_w; d_weights FLOAT32 when dw_f32, else
 * the weights' dtype): inputs from `seed`, the lse from lig_dense_indexer_softmax_lse (status in
 * *lse_status), targets summing to 0.4 .. 1 per row. Outputs hold the sentinel, snapshotted. */
void kl_case_make(kl_case *c, const lse_desc *d, uint64_t seed, int64_t extra_w, bool dw_f32, lig_status *lse_status);
void kl_case_free(kl_case *c);
lig_status kl_case_call(kl_case *c);

/* The float64 reference on inputs Q, K, W (the case's geometry, its T): loss, and when the arrays
 * are not NULL dQ, dK, dW (shaped like the inputs) and Y (like the target). The lse is the given
 * one (L), or, when `own_lse`, the float64 log-sum-exp of the float64 scores. */
void kl_reference(const kl_case *c, const double *Q, const double *K, const double *W, bool own_lse, double *loss,
                  double *dQ, double *dK, double *dW, double *Y);

/* Every output against the reference (tolerances from the fp32 scores' error, the gradients'
 * dtype and rounding); failures are CHECKs labelled `label`. */
void kl_case_check(kl_case *c, const char *label);

#endif

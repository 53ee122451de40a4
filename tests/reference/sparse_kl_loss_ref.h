/*
 * Float64 reference of the indexer's KL loss with the main attention's target (docs/contract.md
 * 2.5), written from the contract only: the teacher's probabilities, the target, the loss and dI
 * directly from the formulas, the index scores through the reference forward (ref_fwd_score), the
 * gradients through the reference backward (ref_backward) with dy = dI.
 *
 * Arrays are logical and contiguous, rows as in indexer_ref.h:
 *   mq [rows_q][N1m][Dm]  mk [rows_k][Dm]  mqr [rows_q][N1m][Dr]  mkr [rows_k][Dr]
 *   smax, ssum, lse [rows_q][N1m]   idx, dI [rows_q][N2][K]
 */
#ifndef LIG_TESTS_SPARSE_KL_LOSS_REF_H
#define LIG_TESTS_SPARSE_KL_LOSS_REF_H

#include <stdint.h>

#include "reference/indexer_ref.h"

typedef struct ref_kl_loss_case {
    const ref_problem *p;                  /* the indexer: N1 = Nidx1, N2 = Nidx2, D, K, lengths, mode */
    int64_t N1m, Dm, Dr;                   /* the main attention; Dr = 0 without rope */
    const double *mq, *mk, *mqr, *mkr;     /* mqr, mkr NULL when Dr = 0 */
    const double *smax, *ssum, *lse;       /* lse NULL: smax and ssum; else lse alone */
    double scale;
    int l1;                                /* 0: p = (1/N1m) sum_h P; 1: p = sum_h P / sum_j sum_h P */
    int cann;                              /* CANN's kernel (l1 = 0): dI = y - p, and the loss with p and
                                              y clamped below at 1e-8 on every counted slot */
    const double *qi, *ki, *w;             /* the indexer's query, key, weights */
    const int64_t *idx;
    const double *sinks;                   /* [N1m] or NULL: the head-mean targets (l1 = 0) divide by
                                              N1m - sum_h exp(sinks[h] - max_h) / sum_h (or - lse_h) */
} ref_kl_loss_case;

/* P[h] at one (row, batch-local key s): exp(scale * (mq . mk + mqr . mkr) - max) / sum, or - lse. */
double ref_kl_teacher_prob(const ref_kl_loss_case *c, int64_t row, int64_t key_row, int64_t h);

/* The loss (sum over units in order); dI (may be NULL) gets d loss / d I on counted slots, 0 on
 * the others. abs_loss (may be NULL) gets the sum of |terms|. */
double ref_kl_loss(const ref_kl_loss_case *c, double *dI, double *abs_loss);

#endif

/*
 * Float64 reference of the lightning indexer's forward (contract 2.1 with the visibility rules of
 * section 3) and of the fused KL training step (README, "KL step"), written from the contract
 * only. It shares the problem description, row bookkeeping and pointwise visibility rule with
 * indexer_ref.h (tested there); the scoring and the selection are its own.
 *
 * Arrays are logical and contiguous, as in indexer_ref.h:
 *   q [rows_q][N1][D]   k [rows_k][N2][D]   w [rows_q][N1]   idx, values [rows_q][N2][K]
 * with K = p->K = sparse_count.
 */
#ifndef LIG_TESTS_INDEXER_FWD_REF_H
#define LIG_TESTS_INDEXER_FWD_REF_H

#include <stdint.h>

#include "reference/indexer_ref.h"

/* I[b,t,g,s] = sum over the heads h of group g of w * ReLU(q_h . k_s), ReLU(x) = x > 0 ? x : 0,
 * applied as a select (a head whose product is not > 0 -- NaN included -- adds exactly 0).
 * `row` is a query row, `s` a batch-local key of that row's batch (the caller checks that it
 * exists). When `scale` is not NULL it receives sum_h |w| * sum_d |q_hd * k_sd| over the finite
 * terms (the size of the terms, for tolerances and exactness bounds; non-finite terms make the
 * result non-finite whatever the summation order). */
double ref_fwd_score(const ref_problem *p, const double *q, const double *k, const double *w, int64_t row,
                     const ref_row *info, int64_t g, int64_t s, double *scale);

/* Ranking of two candidates: 1 when (sa, ka) ranks strictly before (sb, kb): higher score
 * first, a NaN score ranks as -inf, ties to the lower key index. */
int ref_fwd_better(double sa, int64_t ka, double sb, int64_t kb);
/* The same ranking as a qsort comparison: -1 when (sa, ka) ranks first, 1 when (sb, kb) does, else 0. */
int ref_fwd_order(double sa, int64_t ka, double sb, int64_t kb);

/* What the reference saw, summed over the rows it processed (optional). */
typedef struct ref_fwd_stats {
    int64_t units;          /* (valid row, key head) pairs */
    int64_t visible;        /* visible keys over all units */
    int64_t selected;       /* slots holding a key */
    int64_t padded;         /* slots of valid rows holding -1 */
    int64_t ordered_ties;   /* adjacent selected slots with equal scores (ordered by index) */
    int64_t boundary_ties;  /* units where a key left out scores exactly the K-th score */
    int64_t zero_selected;  /* selected slots whose score is exactly 0 */
    double max_scale;       /* largest term-size sum of any visible key (see ref_fwd_score) */
} ref_fwd_stats;

/* One (row, key head): the K best visible keys, best first, then -1 / -inf. Invalid rows get
 * -1 / -inf everywhere. `idx` and `values` point at the unit's K slots. */
void ref_forward_unit(const ref_problem *p, const double *q, const double *k, const double *w, int64_t row,
                      int64_t g, int64_t *idx, double *values, ref_fwd_stats *stats);

/* The whole forward (requires ref_seq_ok(p)). `stats` may be NULL. */
void ref_forward(const ref_problem *p, const double *q, const double *k, const double *w, int64_t *idx,
                 double *values, ref_fwd_stats *stats);

/*
 * The KL step on `rows` rows of K slots. counted[r*K + j] says whether slot j of row r counts
 * (values and target are read only there). Per row, over the counted slots C:
 *   log_softmax_j = v_j - max_C v - log sum_C exp(v - max_C v)
 *   loss_r = sum_{j in C, p_j > 0} p_j * (log p_j - log_softmax_j)
 *   dy_j   = softmax_j * sum_C p - p_j on C, 0 elsewhere
 * Returns sum_r loss_r (in row order). dy may be NULL. abs_loss (may be NULL) receives
 * sum_r sum_j |p_j * (log p_j - log_softmax_j)|, the size of the summed terms.
 */
double ref_kl(int64_t rows, int64_t K, const double *values, const unsigned char *counted, const double *target,
              double *dy, double *abs_loss);

#endif /* LIG_TESTS_INDEXER_FWD_REF_H */

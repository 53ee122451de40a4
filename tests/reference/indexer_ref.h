/*
 * Float64 reference of the lightning indexer, written from the contract (docs/contract.md sections 2-4) only.
 *
 * All arrays are logical and contiguous, with the two layouts unified as "rows":
 *   BSND: query row = b*S1 + t, key row = b*S2 + s;  TND: the row is the T index.
 *   q  [rows_q][N1][D]   k  [rows_k][N2][D]   w  [rows_q][N1]
 *   idx, dy  [rows_q][N2][K]   (the short [.., K] forms have the same memory order)
 * Indices are batch-local, as in the operator.
 */
#ifndef LIG_TESTS_INDEXER_REF_H
#define LIG_TESTS_INDEXER_REF_H

#include <stddef.h>
#include <stdint.h>

typedef enum ref_layout { REF_BSND = 0, REF_TND = 1 } ref_layout;

typedef struct ref_problem {
    ref_layout layout;
    int64_t B;            /* batches (TND: length of the sequence arrays) */
    int64_t S1, S2;       /* BSND: padded sequence lengths; TND: T1 and T2 */
    int64_t N1, N2, D, K; /* N2 divides N1 */
    const int64_t *seq_q; /* BSND: NULL or [B] valid lengths; TND: [B] inclusive cumulative ends */
    const int64_t *seq_k;
    int64_t sparse_mode;  /* 0 or 3 */
    int64_t pre_tokens;   /* >= 0, INT64_MAX = no band */
    int64_t next_tokens;
} ref_problem;

/* Where a query row sits. */
typedef struct ref_row {
    int valid;        /* inside its batch's valid length */
    int64_t b, t;     /* batch and batch-local row (meaningful when valid) */
    int64_t lq, lk;   /* the batch's query and key lengths */
    int64_t key_base; /* global key row of the batch's key 0 */
} ref_row;

typedef enum ref_slot {
    REF_SLOT_COUNTED = 0,
    REF_SLOT_PADDING,     /* index -1 */
    REF_SLOT_MASKED,      /* existing key outside the visible range */
    REF_SLOT_BAD_INDEX,   /* < -1 or >= Lk in a valid row: an input error */
    REF_SLOT_ROW_INVALID  /* the row is outside the valid length: nothing is read */
} ref_slot;

int64_t ref_rows_q(const ref_problem *p);
int64_t ref_rows_k(const ref_problem *p);

/* 1 when the sequence arrays are well formed (BSND: each optional array within 0..S;
 * TND: both present, non-decreasing, in 0..T). `why` (may be NULL) gets a reason otherwise. */
int ref_seq_ok(const ref_problem *p, char *why, size_t why_size);

/* Requires ref_seq_ok(p). */
void ref_row_info(const ref_problem *p, int64_t row, ref_row *out);

/* Section 3 visibility of batch-local key s from batch-local row t; never overflows. */
int ref_visible(int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens, int64_t t, int64_t s,
                int64_t lq, int64_t lk);

/* The visible keys of a valid row clipped to [0, lk): [*lo, *hi], empty when *lo > *hi. */
void ref_visible_range(const ref_problem *p, const ref_row *row, int64_t *lo, int64_t *hi);

ref_slot ref_classify(const ref_problem *p, const ref_row *row, int64_t index);

/* Flat position (row*N2*K + g*K + j) of the first out-of-range index in a valid row, or -1. */
int64_t ref_find_bad_index(const ref_problem *p, const int64_t *idx);

/* Forward score at each selected slot, I[row][g][j] = sum_h w * ReLU(q.k) over the group,
 * for counted slots; 0 for the others. */
void ref_forward_slots(const ref_problem *p, const double *q, const double *k, const double *w,
                       const int64_t *idx, double *scores);

/* Backward results. dq/dk/dw have the shapes of q/k/w. The *_abs arrays (optional, may be NULL)
 * receive the sum of |elementary product| over everything summed into each element: |w dy k_d|
 * (dQ), |w dy q_d| (dK), |dy q_d k_d| over d and the slots (dW, whose terms S dy are themselves
 * sums). An element with abs == 0 got nothing (must be exactly 0); the bound tells when fp32
 * sums are exact, and how large fp32's error can be. */
typedef struct ref_grads {
    double *dq, *dk, *dw;
    double *dq_abs, *dk_abs, *dw_abs;
} ref_grads;

/* How many non-zero terms each element sums (each array optional): slots with S > 0 (dQ, dW),
 * (row, head, slot) contributions (dK). */
typedef struct ref_grad_terms {
    int64_t *dq, *dk, *dw;
} ref_grad_terms;

/* Requires ref_seq_ok(p) and ref_find_bad_index(p, idx) == -1. Reads dy only at counted slots
 * and idx only in valid rows. */
void ref_backward(const ref_problem *p, const double *q, const double *k, const double *w,
                  const int64_t *idx, const double *dy, const ref_grads *out);
/* The same, with the term counts too (terms may be NULL). */
void ref_backward_counted(const ref_problem *p, const double *q, const double *k, const double *w,
                          const int64_t *idx, const double *dy, const ref_grads *out, const ref_grad_terms *terms);

/* L = sum over counted slots of dy * I at that slot: the loss whose gradient the backward is. */
double ref_loss(const ref_problem *p, const double *q, const double *k, const double *w,
                const int64_t *idx, const double *dy);

#endif /* LIG_TESTS_INDEXER_REF_H */

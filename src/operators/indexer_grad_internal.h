/* Addressing and masking helpers shared by the backward's passes. */
#ifndef LIG_OPERATORS_INDEXER_GRAD_INTERNAL_H
#define LIG_OPERATORS_INDEXER_GRAD_INTERNAL_H

#include "plan/indexer_grad_plan.h"

/* A unit is one (batch, valid query row, key head): the work of one row of the operator. */
typedef struct lig_unit {
    int64_t b, t, g;
    int64_t lo, hi; /* keys lo..hi (inclusive) are visible and exist; empty when lo > hi */
} lig_unit;

/* Batch of valid row r: the last b with row_prefix[b] <= r, found by bisection. */
static inline int64_t lig_batch_of_row(const lig_indexer_grad_plan *p, int64_t r) {
    int64_t lo = 0, hi = p->B - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (p->bt.row_prefix[mid] <= r) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* The visible key range of row t in batch b (SPEC section 3), clipped to [0, Lk). */
static inline lig_unit lig_unit_decode(const lig_indexer_grad_plan *p, int64_t u) {
    lig_unit x;
    const int64_t r = u / p->N2;
    x.g = u - r * p->N2;
    x.b = lig_batch_of_row(p, r);
    x.t = r - p->bt.row_prefix[x.b];
    const int64_t lq = p->bt.lq[x.b], lk = p->bt.lk[x.b];
    int64_t lo, hi;
    if (p->sparse_mode == 0) {
        /* t - pre <= s <= t + next, written so that INT64_MAX bands cannot overflow */
        lo = p->pre_tokens >= x.t ? 0 : x.t - p->pre_tokens;
        hi = p->next_tokens >= lk ? lk - 1 : x.t + p->next_tokens;
    } else {
        /* right-down causal: diag - pre <= s <= diag with diag = Lk - Lq + t */
        const int64_t diag = lk - lq + x.t;
        hi = diag;
        lo = diag < 0 || p->pre_tokens >= diag ? 0 : diag - p->pre_tokens;
    }
    x.lo = lo;
    x.hi = hi < lk - 1 ? hi : lk - 1;
    return x;
}

/* Element pointers in the normalised addressing of plan/indexer_grad_plan.h. */
static inline char *lig_q_row_ptr(const lig_view4 *v, const lig_indexer_grad_plan *p, int64_t b, int64_t t,
                                  int64_t head) {
    return v->data + (size_t)(b * v->batch + (p->bt.q_base[b] + t) * v->row + head * v->head) * v->esize;
}

static inline char *lig_k_row_ptr(const lig_view4 *v, const lig_indexer_grad_plan *p, int64_t b, int64_t s,
                                  int64_t head) {
    return v->data + (size_t)(b * v->batch + (p->bt.k_base[b] + s) * v->row + head * v->head) * v->esize;
}

/* Passes of lig_indexer_grad (operators/indexer_grad*.c). */

/* Reads every index of every valid row: fails (naming the lowest bad slot) on a value < -1
 * or >= Lk; otherwise stores each unit's counted slots in counts[u] when counts != NULL. */
lig_status lig_grad_check_indices(const lig_indexer_grad_plan *p, int64_t *counts, int threads);

#endif

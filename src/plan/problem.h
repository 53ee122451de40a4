/* What the forward and the backward share: the problem's geometry, the per-batch rows, the
 * normalised addressing of both layouts, and the visibility rule (SPEC sections 2-3).
 *
 * Addressing: element (b, t, h, d) of a query-row tensor lives at
 *   b * batch + (q_base[b] + t) * row + h * head + d * dim        (strides in elements)
 * and key rows likewise with k_base; BSND has bases 0, TND has batch stride 0. */
#ifndef LIG_PLAN_PROBLEM_H
#define LIG_PLAN_PROBLEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/seq_lengths.h"
#include "lig.h"

typedef struct lig_view4 {
    char *data;
    lig_dtype dtype;
    size_t esize;
    int64_t batch, row, head, dim;
} lig_view4;

typedef struct lig_problem {
    bool tnd;
    int64_t B, N1, N2, G, D, K; /* K: selected slots per (b, t, g) */
    int64_t S1, S2;             /* BSND extents; TND: T1, T2 */
    int64_t sparse_mode, pre_tokens, next_tokens;
    lig_batches bt;             /* per-batch lengths and row bases */
    int64_t units;              /* (b, valid t, g) triples, enumerated batch-major */
    int64_t key_rows;           /* rows of the key tensor: B*S2 (BSND) or T2 (TND) */
    int64_t key_batch;          /* key row of (b, s) = b * key_batch + k_base[b] + s */
} lig_problem;

/* One unit of work: a (batch, valid query row, key head) triple and its visible keys. */
typedef struct lig_unit {
    int64_t b, t, g;
    int64_t lo, hi; /* keys lo..hi (inclusive) are visible and exist; none when lo > hi */
} lig_unit;

/* Batch of valid row r: the last b with row_prefix[b] <= r, found by bisection. */
static inline int64_t lig_batch_of_row(const lig_problem *p, int64_t r) {
    int64_t lo = 0, hi = p->B - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (p->bt.row_prefix[mid] <= r) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

static inline lig_unit lig_unit_decode(const lig_problem *p, int64_t u) {
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

static inline char *lig_q_row_ptr(const lig_view4 *v, const lig_problem *p, int64_t b, int64_t t, int64_t head) {
    return v->data + (size_t)(b * v->batch + (p->bt.q_base[b] + t) * v->row + head * v->head) * v->esize;
}

static inline char *lig_k_row_ptr(const lig_view4 *v, const lig_problem *p, int64_t b, int64_t s, int64_t head) {
    return v->data + (size_t)(b * v->batch + (p->bt.k_base[b] + s) * v->row + head * v->head) * v->esize;
}

/* Workspace regions are 64-byte aligned; a workspace carries 64 spare bytes so that any
 * base pointer can be aligned. */
#define LIG_WS_ALIGN 64u

static inline uint64_t lig_ws_take(uint64_t *cursor, uint64_t bytes) {
    const uint64_t at = *cursor;
    *cursor = (at + bytes + LIG_WS_ALIGN - 1) & ~(uint64_t)(LIG_WS_ALIGN - 1);
    return at;
}

static inline char *lig_ws_base(void *workspace) {
    return (char *)(((uintptr_t)workspace + LIG_WS_ALIGN - 1) & ~(uintptr_t)(LIG_WS_ALIGN - 1));
}

#endif

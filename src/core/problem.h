/* The backend-neutral problem: what phase 1 hands a backend after validation (docs/contract.md
 * sections 2-4). Geometry, per-batch sequence lengths (batches), the normalised addressing of
 * both layouts (views), the units of work and the visibility rule (the mask or per-row key
 * ranges), and the descriptors of the backward and the KL operators (the forwards' is in
 * core/fwd_problem.h). Backends read these; none of them depends on a backend.
 *
 * Addressing: element (b, t, h, d) of a query-row tensor lives at
 *   b * batch + (q_base[b] + t) * row + h * head + d * dim        (strides in elements)
 * and key rows likewise with k_base; BSND has bases 0, TND has batch stride 0. */
#ifndef LIG_CORE_PROBLEM_H
#define LIG_CORE_PROBLEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/size.h"
#include "core/dtype_convert.h"
#include "lig.h"

/* ---- sequence lengths ---------------------------------------------------------------- */

typedef struct lig_batches {
    int64_t B;
    /* One allocation of 5*B + 1 values: per batch the valid query and key lengths and the
     * first query/key row (TND; 0 for BSND), then the valid query rows before each batch. */
    int64_t *lq, *lk, *q_base, *k_base, *row_prefix;
} lig_batches;

/* Bytes of a lig_batches allocation (saturating, core/size.h): B is only bounded by a shape. */
static inline uint64_t lig_batches_bytes(int64_t B) {
    return lig_size_mul(sizeof(int64_t), lig_size_add(lig_size_mul(5, (uint64_t)B), 1));
}

/* BSND: B, S1, S2 from the shapes; the arrays are optional lengths (0..S).
 * TND: B comes from the arrays (required cumulative ends), S1/S2 are T1/T2.
 * paged: the key array is required and holds per-batch lengths (0..S2) whatever the layout.
 * Reads the host arrays, validates them (messages name the arrays), fills *out (free with
 * lig_batches_free). */
lig_status lig_batches_resolve(bool tnd, bool paged, int64_t B, int64_t S1, int64_t S2,
                               const lig_tensor *actual_seq_lengths_query,
                               const lig_tensor *actual_seq_lengths_key, lig_batches *out);
void lig_batches_free(lig_batches *batches);

/* ---- geometry, views, units ---------------------------------------------------------- */

typedef struct lig_view4 {
    char *data;
    lig_dtype dtype;
    size_t esize;
    int64_t batch, row, head, dim;
} lig_view4;

/* Per-row key ranges, the visibility rule that replaces the mask where an operator takes its keys
 * per row (the logits, contract 2.6): valid row r sees keys lo[r] .. hi[r] (inclusive, batch-local;
 * none when lo > hi). Owned by the operator's problem, which the lig_problem points into. */
typedef struct lig_key_ranges {
    int64_t *lo, *hi;
} lig_key_ranges;

typedef struct lig_problem {
    bool tnd;
    int64_t B, N1, N2, G, D, K; /* K: selected slots per (b, t, g) */
    int64_t S1, S2;             /* BSND extents; TND: T1, T2 */
    int64_t sparse_mode, pre_tokens, next_tokens;
    lig_batches bt;             /* per-batch lengths and row bases */
    int64_t units;              /* (b, valid t, g) triples, enumerated batch-major */
    int64_t key_rows;           /* rows of the key tensor: B*S2 (BSND or paged) or T2 (TND) */
    int64_t key_batch;          /* key row of (b, s) = b * key_batch + k_base[b] + s */
    const lig_key_ranges *ranges; /* NULL: the mask decides what each row sees */
} lig_problem;

/* Stores the mask arguments and resolves the sequence lengths into rows and units. `paged`: the
 * keys come from a paged cache (S2 = its capacity per batch), whose key lengths are required and
 * per batch whatever the layout. On failure nothing needs freeing; on success free with
 * lig_problem_free. */
lig_status lig_problem_resolve(lig_problem *p, bool paged, int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
                               const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key);
void lig_problem_free(lig_problem *p);

/* The rows of an operator with per-row key ranges (contract 2.6): `batches` batches of
 * rows_per_batch rows each (all valid, bases 0), row r's keys [lo[r], hi[r]) in `ranges` (checked;
 * made inclusive here, and pointed to by p->ranges: it must outlive p), each batch's key length its
 * rows' largest end. Fills what lig_problem_resolve fills; free with lig_problem_free. */
lig_status lig_problem_resolve_ranges(lig_problem *p, bool paged, int64_t batches, int64_t rows_per_batch,
                                      lig_key_ranges *ranges);

/* The normalised view of a query- or key-row tensor; `has_head` is false for the short slot
 * forms ([B,S1,K] / [T1,K]), `has_dim` false for weights. */
lig_view4 lig_problem_view(const lig_problem *p, const lig_tensor *t, bool has_head, bool has_dim);

/* A paged key cache [num_blocks, block_size, N2, D]: batch stride = between blocks. */
lig_view4 lig_problem_cache_view(const lig_tensor *cache);
/* The key scales of a paged cache, [num_blocks, block_size, N2]: addressed as the cache without D. */
lig_view4 lig_problem_cache_scale_view(const lig_tensor *scales);

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
    if (p->ranges) { /* the operator's own ranges replace the mask */
        x.lo = p->ranges->lo[r];
        x.hi = p->ranges->hi[r];
        return x;
    }
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

/* Element (b, row, head, 0) of a view addressed by the tensor's own row index (no base):
 * the rows no unit owns, e.g. those past a batch's valid length. */
static inline char *lig_view_row_ptr(const lig_view4 *v, int64_t b, int64_t row, int64_t head) {
    return v->data + (size_t)(b * v->batch + row * v->row + head * v->head) * v->esize;
}

/* ---- the operators' problems ----------------------------------------------------------- */

/* LightningIndexerGrad (contract 2.2). `dense` (the dense KL gradient, contract 2.9): no
 * sparse_indices (idx unused), every visible key lo..hi of a unit is one of its slots, in key
 * order, and dy comes from the operator (pr.K is then the most keys any unit may have). */
typedef struct lig_grad_problem {
    lig_problem pr;
    bool deterministic, dense;
    lig_view4 q, k, w, dy, idx, dq, dk, dw;
} lig_grad_problem;

static inline bool lig_grad_dense(const lig_grad_problem *g) { return g->dense; }

/* The slots of a unit of a dense problem: its visible keys. */
static inline int64_t lig_grad_dense_slots(const lig_unit *x) { return x->hi >= x->lo ? x->hi - x->lo + 1 : 0; }

/* The fused KL step: rows of K slots along the last axis of same-shaped tensors of any rank
 * (sparse_values, the target p, dy, optionally sparse_indices). */
typedef struct lig_slot_view {
    char *data;
    lig_dtype dtype;
    int64_t esize;
    int64_t strides[LIG_MAX_DIMS]; /* in elements; the last one walks the slots */
} lig_slot_view;

typedef struct lig_kl_dy_problem {
    int64_t ndim;                /* >= 1 */
    int64_t shape[LIG_MAX_DIMS];
    int64_t rows, K;             /* rows = product of all extents but the last */
    lig_slot_view values, target, dy, indices;
    bool has_indices;
    char *loss;                  /* one FLOAT32 */
} lig_kl_dy_problem;

/* Element offset of slot j of row r in a slot view. */
static inline int64_t lig_slot_offset(const lig_kl_dy_problem *p, const lig_slot_view *v, int64_t r, int64_t j) {
    int64_t off = j * v->strides[p->ndim - 1];
    for (int64_t d = p->ndim - 2; d >= 0; d--) {
        const int64_t i = r % p->shape[d];
        r /= p->shape[d];
        off += i * v->strides[d];
    }
    return off;
}

/* The indexer's KL loss with the main attention's target (contract 2.5): the backward's problem
 * (query_index, key_index, weights, sparse_indices and the gradients; its dy view unused) plus the
 * main attention. Main query rows and the statistics are addressed like the index query
 * (lig_q_row_ptr with the head axis = the main heads), main key rows like the index keys. */
typedef struct lig_grad_kl_loss_problem {
    lig_grad_problem g;
    int64_t N1m, Dm, Dr;        /* main heads, latent and rope dims (Dr = 0 without rope) */
    lig_view4 mq, mk, mqr, mkr; /* main query / key, their rope parts (when Dr > 0 or has_rope) */
    bool has_rope, has_lse;
    lig_view4 smax, ssum, lse;  /* statistics, [rows][N1m] through lig_q_row_ptr; has_lse: lse only */
    bool has_sinks;
    lig_view4 sinks;            /* FLOAT32 [N1m]: head h at data + h * head * esize (has_sinks) */
    float scale;                /* rounded once to fp32 */
    lig_kl_target target;
    char *loss;                 /* one FLOAT32 */
} lig_grad_kl_loss_problem;

#endif

/* The backend-neutral problem: what phase 1 hands a backend after validation (docs/contract.md
 * sections 2-4). Geometry, per-batch sequence lengths (batches), the normalised addressing of
 * both layouts (views), the units of work and the visibility rule, and one descriptor per
 * operator. Backends read these; none of them depends on a backend.
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

typedef struct lig_problem {
    bool tnd;
    bool paged;                 /* keys come from a block table (the forward over a paged cache) */
    int64_t block_size, num_blocks; /* paged: the cache's blocks */
    int64_t B, N1, N2, G, D, K; /* K: selected slots per (b, t, g) */
    int64_t S1, S2;             /* BSND extents; TND: T1, T2 */
    int64_t sparse_mode, pre_tokens, next_tokens;
    lig_batches bt;             /* per-batch lengths and row bases */
    int64_t units;              /* (b, valid t, g) triples, enumerated batch-major */
    int64_t key_rows;           /* rows of the key tensor: B*S2 (BSND) or T2 (TND) */
    int64_t key_batch;          /* key row of (b, s) = b * key_batch + k_base[b] + s */
    /* The logits operator (contract 2.6): per valid row its own keys row_lo[r] .. row_hi[r]
     * (inclusive, batch-local; none when lo > hi), which replace the mask. NULL otherwise.
     * One allocation (row_hi = row_lo + rows), owned: lig_problem_free frees it. */
    int64_t *row_lo, *row_hi;
} lig_problem;

/* Stores the mask arguments and resolves the sequence lengths into rows and units. On
 * failure nothing needs freeing; on success free with lig_problem_free. */
lig_status lig_problem_resolve(lig_problem *p, int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
                               const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key);
void lig_problem_free(lig_problem *p);

/* The logits operator's rows (contract 2.6): `batches` batches of rows_per_batch rows each (all
 * valid, bases 0), row r's keys [start[r], end[r]) in `ranges` (2 x rows values: the starts, then
 * the ends, already checked; taken over by p, freed on failure too), each batch's key length its
 * rows' largest end. Fills what lig_problem_resolve fills; free with lig_problem_free. */
lig_status lig_problem_resolve_ranges(lig_problem *p, int64_t batches, int64_t rows_per_batch, int64_t *ranges);

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
    if (p->row_lo) { /* the logits operator's own ranges */
        x.lo = p->row_lo[r];
        x.hi = p->row_hi[r];
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

/* LightningIndexerGrad (contract 2.2). */
typedef struct lig_grad_problem {
    lig_problem pr;
    bool deterministic;
    lig_view4 q, k, w, dy, idx, dq, dk, dw;
} lig_grad_problem;

/* A paged key cache's block table: entry (b, j) at table + (b * batch + j * step) * esize. */
typedef struct lig_block_table {
    char *data;
    lig_dtype dtype;
    size_t esize;
    int64_t batch, step;
    int64_t blocks; /* entries per batch */
} lig_block_table;

/* LightningIndexer (docs/contract.md 2.1): pr.K = sparse_count. With pr.paged, k views the cache: its
 * batch stride steps over blocks, its row stride over a block's rows.
 * The quantized forward (contract 2.4, `quant`) is the same problem with q and k FLOAT8_E4M3FN or
 * INT8, w of any float dtype, and two scale views: sk per (key row, key head), addressed as k
 * without its D axis (paged: [num_blocks, block_size, N2]), and sq per (query row, head),
 * addressed as w, or absent (has_sq false: every sq is 1). */
typedef struct lig_fwd_problem {
    lig_problem pr;
    lig_view4 q, k, w, idx, val;
    bool has_values;
    lig_block_table table; /* pr.paged */
    bool quant;
    bool has_sq;
    lig_view4 sq, sk; /* quant */
    /* The logits operator (contract 2.6; pr.row_lo holds its ranges): no_topk when sparse_indices
     * is NULL (idx unused); logits, when has_logits, is [row][key head][column] FLOAT32 with its
     * column stride in `dim`: column j is key j, or key lo + j when `compressed`; `clean` fills the
     * columns a row does not score with -inf. */
    bool no_topk, has_logits, compressed, clean;
    lig_view4 logits;
    int64_t logits_cols;
    /* A schedule (pieces > 0, paged only): piece w runs the global key blocks piece_start[w] ..
     * piece_start[w + 1] - 1, where batch b's blocks of pr.block_size keys (ceil(lk[b] / block_size)
     * of them) are numbered from batch_block0[b]. One allocation (batch_block0 = piece_start +
     * pieces + 1), owned. */
    int64_t pieces;
    int64_t *piece_start, *batch_block0;
} lig_fwd_problem;

/* Block number j of batch b (from the table; the caller has checked it). */
static inline int64_t lig_table_block(const lig_block_table *t, int64_t b, int64_t j) {
    return lig_load_int(t->dtype, t->data + (size_t)(b * t->batch + j * t->step) * t->esize);
}

/* Element (key s of batch b, head g) of a key-row view -- the keys or the key scales --
 * contiguous or paged (the view's batch stride then steps over the cache's blocks). */
static inline char *lig_fwd_key_elem(const lig_fwd_problem *pb, const lig_view4 *v, int64_t b, int64_t s, int64_t g) {
    if (!pb->pr.paged) return lig_k_row_ptr(v, &pb->pr, b, s, g);
    const int64_t bs = pb->pr.block_size, block = lig_table_block(&pb->table, b, s / bs);
    return v->data + (size_t)(block * v->batch + (s % bs) * v->row + g * v->head) * v->esize;
}

/* Key row s of batch b, head g: contiguous or paged. */
static inline char *lig_fwd_key_row(const lig_fwd_problem *pb, int64_t b, int64_t s, int64_t g) {
    return lig_fwd_key_elem(pb, &pb->k, b, s, g);
}

/* The fused KL step: rows of K slots along the last axis of same-shaped tensors of any rank
 * (sparse_values, the target p, dy, optionally sparse_indices). */
typedef struct lig_slot_view {
    char *data;
    lig_dtype dtype;
    int64_t esize;
    int64_t strides[LIG_MAX_DIMS]; /* in elements; the last one walks the slots */
} lig_slot_view;

typedef struct lig_kl_problem {
    int64_t ndim;                /* >= 1 */
    int64_t shape[LIG_MAX_DIMS];
    int64_t rows, K;             /* rows = product of all extents but the last */
    lig_slot_view values, target, dy, indices;
    bool has_indices;
    char *loss;                  /* one FLOAT32 */
} lig_kl_problem;

/* Element offset of slot j of row r in a slot view. */
static inline int64_t lig_slot_offset(const lig_kl_problem *p, const lig_slot_view *v, int64_t r, int64_t j) {
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
typedef struct lig_kl_loss_problem {
    lig_grad_problem g;
    int64_t N1m, Dm, Dr;        /* main heads, latent and rope dims (Dr = 0 without rope) */
    lig_view4 mq, mk, mqr, mkr; /* main query / key, their rope parts (when Dr > 0 or has_rope) */
    bool has_rope, has_lse;
    lig_view4 smax, ssum, lse;  /* statistics, [rows][N1m] through lig_q_row_ptr; has_lse: lse only */
    float scale;                /* rounded once to fp32 */
    lig_kl_target target;
    char *loss;                 /* one FLOAT32 */
} lig_kl_loss_problem;

#endif

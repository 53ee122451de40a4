/* The forwards' problem (docs/contract.md 2.1, 2.4, 2.6): a base every forward has -- the query,
 * key and weights views and the top-k outputs -- plus optional parts, each NULL when the call has
 * none: paged keys (a block table over a cache), quantization scales, per-row key ranges, a logits
 * output and a schedule of pieces. The operators are the combinations:
 *   lig_indexer         the base;
 *   lig_indexer_paged   + paged;
 *   lig_quant_indexer   + scales (+ paged);
 *   lig_quant_logits    + scales + ranges (+ paged, + logits, + schedule; the top-k optional);
 *   lig_sparse_logits   + scales + ranges + sparse (+ paged; no top-k, no logits part).
 * api/ builds each part once; a backend reads the parts present and nothing else. */
#ifndef LIG_CORE_FWD_PROBLEM_H
#define LIG_CORE_FWD_PROBLEM_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dtype_convert.h"
#include "core/problem.h"

/* Paged keys: the block table (entry (b, j) at data + (b * batch + j * step) * esize) and the cache
 * [num_blocks, block_size, N2, D] it points into. The keys' view (and the key scales') then steps
 * over blocks with its batch stride and over a block's rows with its row stride. */
typedef struct lig_paged_keys {
    char *data;
    lig_dtype dtype;
    size_t esize;
    int64_t batch, step;
    int64_t blocks; /* entries per batch */
    int64_t block_size, num_blocks;
} lig_paged_keys;

/* The quantized forward's dequantization scales (contract 2.4; q and k FLOAT8_E4M3FN or INT8, w of
 * any float dtype): sk per (key row, key head), addressed as the keys without their D axis (paged:
 * [num_blocks, block_size, N2]); sq per (query row, head), addressed as w, or absent (has_sq false:
 * every sq is 1). MXFP4 (FLOAT4_E2M1X2 q and k): both present, UINT8 or INT32, each with its
 * axis of blocks (words) in dim (0 when the tensor left the one-element axis out). */
typedef struct lig_quant_scales {
    lig_view4 sk, sq;
    bool has_sq;
} lig_quant_scales;

/* The logits output (contract 2.6): [row][key head][column] FLOAT32, its column stride in
 * view.dim; column j is key j, or key lo + j when `compressed`; `clean` fills the columns a row
 * does not score with -inf. */
typedef struct lig_logits_out {
    lig_view4 view;
    int64_t cols;
    bool compressed, clean;
} lig_logits_out;

/* A schedule of pieces (paged keys, no top-k): piece w runs the global key blocks start[w] ..
 * start[w + 1] - 1, where batch b's blocks of block_size keys (ceil(lk[b] / block_size) of them)
 * are numbered from batch_block0[b]. */
typedef struct lig_fwd_schedule {
    int64_t pieces;
    int64_t *start, *batch_block0;
} lig_fwd_schedule;

/* The sparse logits' blocks and output (contract 2.8, DeepGEMM's fp8_fp4_sparse_mqa_logits): row r
 * (the rows of the query, in order) scores the first count[r] of its block ids, each the keys
 * id * block_kv + off + o (o < block_kv; off = lo[r] % block_kv when unaligned, else 0) that lie in
 * its range, into columns j * block_kv + o of `out` ([row][key head][column], cols = max_blocks *
 * block_kv, any float dtype: the fp32 score rounded once); every other column gets -inf. The ids
 * are a copy of the caller's tensor in its own index dtype (ids_esize bytes each, row-major). */
typedef struct lig_sparse_blocks {
    char *ids;
    lig_dtype ids_dtype;
    size_t ids_esize;
    int64_t *count; /* per row */
    int64_t max_blocks, block_kv, cols;
    bool unaligned;
    lig_view4 out;
} lig_sparse_blocks;

/* Block id j of row r. */
static inline int64_t lig_sparse_block_id(const lig_sparse_blocks *s, int64_t r, int64_t j) {
    return lig_load_int(s->ids_dtype, s->ids + (size_t)(r * s->max_blocks + j) * s->ids_esize);
}

/* The first key of block id `id` of a row whose range starts at lo. */
static inline int64_t lig_sparse_block_start(const lig_sparse_blocks *s, int64_t lo, int64_t id) {
    return id * s->block_kv + (s->unaligned ? lo % s->block_kv : 0);
}

typedef struct lig_fwd_problem {
    lig_problem pr;          /* pr.K = sparse_count (0 without a top-k); pr.ranges = ranges */
    lig_view4 q, k, w, idx, val;
    bool has_topk;           /* sparse_indices given: idx is written */
    bool has_values;         /* sparse_values given: val is written */
    const lig_paged_keys *paged;
    const lig_quant_scales *scales;
    const lig_key_ranges *ranges;
    const lig_logits_out *logits;
    const lig_fwd_schedule *schedule;
    const lig_sparse_blocks *sparse;
} lig_fwd_problem;

/* Block number j of batch b (from the table; the caller has checked it). */
static inline int64_t lig_table_block(const lig_paged_keys *t, int64_t b, int64_t j) {
    return lig_load_int(t->dtype, t->data + (size_t)(b * t->batch + j * t->step) * t->esize);
}

/* Element (key s of batch b, head g) of a paged key-row view -- the keys or the key scales. */
static inline char *lig_paged_key_elem(const lig_paged_keys *t, const lig_view4 *v, int64_t b, int64_t s, int64_t g) {
    const int64_t bs = t->block_size, block = lig_table_block(t, b, s / bs);
    return v->data + (size_t)(block * v->batch + (s % bs) * v->row + g * v->head) * v->esize;
}

#endif

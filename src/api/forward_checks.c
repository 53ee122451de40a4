/* See forward_checks.h. Each check validates its arguments once; the order of an operator's list
 * is the order of its messages (the first failure wins). */
#include "api/forward_checks.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "api/problem_arguments.h"
#include "core/error.h"
#include "core/tensor.h"

/* ---- the tables of tensor arguments ----------------------------------------------------- */

typedef struct arg_spec {
    size_t field; /* offsetof(lig_fwd_call, <tensor>) */
    const char *name;
    lig_argument_role role;
} arg_spec;

#define ARG(field, name, role) {offsetof(lig_fwd_call, field), name, role}
/* Rows that several tables hold, each spliced where its table lists it: a table's order is the
 * order of its messages (the first failure wins), so every table still reads in its own order. */
#define QKW_ARGS(key_name) ARG(query, "query", LIG_ARG_INPUT), ARG(key, key_name, LIG_ARG_INPUT), \
                           ARG(weights, "weights", LIG_ARG_INPUT)
#define LENGTH_ARGS ARG(actual_seq_lengths_query, "actual_seq_lengths_query", LIG_ARG_HOST_LENGTHS), \
                    ARG(actual_seq_lengths_key, "actual_seq_lengths_key", LIG_ARG_HOST_LENGTHS)
#define SCALE_ARGS ARG(query_dequant_scale, "query_dequant_scale", LIG_ARG_OPTIONAL_INPUT), \
                   ARG(key_dequant_scale, "key_dequant_scale", LIG_ARG_INPUT)
#define TOPK_ARGS(indices_role) ARG(sparse_indices, "sparse_indices", indices_role), \
                                ARG(sparse_values, "sparse_values", LIG_ARG_OPTIONAL_OUTPUT)

/* Every optional tensor may be NULL; the indexers' sequence lengths and the logits' key ranges and
 * schedule are read by phase 1 on the host. */
static const arg_spec indexer_args[] = {
    QKW_ARGS("key"), ARG(block_table, "block_table", LIG_ARG_OPTIONAL_INPUT), LENGTH_ARGS, TOPK_ARGS(LIG_ARG_OUTPUT),
};
static const arg_spec indexer_paged_args[] = {
    QKW_ARGS("key_cache"), ARG(block_table, "block_table", LIG_ARG_INPUT), LENGTH_ARGS, TOPK_ARGS(LIG_ARG_OUTPUT),
};
/* block_table's presence depends on layout_key: check_quant_layouts checks it */
static const arg_spec quant_indexer_args[] = {
    QKW_ARGS("key"), ARG(block_table, "block_table", LIG_ARG_OPTIONAL_INPUT), LENGTH_ARGS, SCALE_ARGS,
    TOPK_ARGS(LIG_ARG_OUTPUT),
};
/* the logits' inputs (lig_quant_logits, lig_sparse_logits): q/k/w, scales, table, key ranges */
#define RANGE_INPUT_ARGS QKW_ARGS("key"), SCALE_ARGS, ARG(block_table, "block_table", LIG_ARG_OPTIONAL_INPUT), \
                         ARG(key_start, "key_start", LIG_ARG_HOST_LENGTHS), ARG(key_end, "key_end", LIG_ARG_HOST_LENGTHS)
static const arg_spec quant_logits_args[] = {
    RANGE_INPUT_ARGS,
    ARG(schedule, "schedule", LIG_ARG_HOST_LENGTHS),
    ARG(logits, "logits", LIG_ARG_OPTIONAL_OUTPUT),
    TOPK_ARGS(LIG_ARG_OPTIONAL_OUTPUT),
};
static const arg_spec sparse_logits_args[] = {
    RANGE_INPUT_ARGS,
    ARG(sparse_kv_block_indices, "sparse_kv_block_indices", LIG_ARG_HOST_LENGTHS),
    ARG(sparse_logits, "sparse_logits", LIG_ARG_OUTPUT),
};
#undef RANGE_INPUT_ARGS
#undef TOPK_ARGS
#undef SCALE_ARGS
#undef LENGTH_ARGS
#undef QKW_ARGS
#undef ARG

/* ---- the checks ------------------------------------------------------------------------- */

typedef lig_status (*check_fn)(lig_fwd_call *c);

static bool is_quant(const lig_fwd_call *c) {
    return c->op == LIG_OP_QUANT_INDEXER || c->op == LIG_OP_QUANT_LOGITS || c->op == LIG_OP_SPARSE_LOGITS;
}

/* The required tensors, then the indexers' layout string, the workspace-size and executor pointers. */
static lig_status check_pointers(lig_fwd_call *c) {
    const bool layout = c->op == LIG_OP_INDEXER || c->op == LIG_OP_INDEXER_PAGED;
    return lig_check_phase1_pointers(&c->args, layout, c->layout, c->workspace_size, c->executor);
}

/* CANN's modes: 0 is per-token-head (one scale per token and head), the only one it defines. */
static lig_status check_quant_mode(int64_t mode, const char *name) {
    if (mode == 0) return LIG_SUCCESS;
    return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected 0 (one scale per token and head), got %lld", name,
                    (long long)mode);
}

static lig_status check_quant_modes(lig_fwd_call *c) {
    const lig_status st = check_quant_mode(c->query_quant_mode, "query_quant_mode");
    return st != LIG_SUCCESS ? st : check_quant_mode(c->key_quant_mode, "key_quant_mode");
}

static lig_status check_key_end_present(lig_fwd_call *c) {
    if (c->key_end) return LIG_SUCCESS;
    return lig_fail(LIG_ERR_PARAM_NULLPTR, "key_end: expected a [B,S1] or [T1] tensor of range ends, got NULL");
}

/* The indexers' layout ("BSND" or "TND", not NULL: check_pointers). */
static lig_status check_layout(lig_fwd_call *c) {
    bool tnd = false; /* set only for a valid layout */
    const lig_status st = lig_check_layout(c->layout, &tnd);
    c->pr.tnd = tnd;
    c->paged = c->op == LIG_OP_INDEXER_PAGED;
    return st;
}

/* The quantized operators' layouts: layout_query "BSND" or "TND"; layout_key "PA_BSND" (paged:
 * block_table required), or the query's layout (block_table NULL). */
static lig_status check_quant_layouts(lig_fwd_call *c) {
    const char *lq = c->layout, *lk = c->layout_key;
    if (!lq) return lig_fail(LIG_ERR_PARAM_NULLPTR, "layout_query: expected \"BSND\" or \"TND\", got NULL");
    if (!lk) return lig_fail(LIG_ERR_PARAM_NULLPTR, "layout_key: expected \"BSND\", \"TND\" or \"PA_BSND\", got NULL");
    bool tnd;
    if (lig_check_layout(lq, &tnd) != LIG_SUCCESS) /* reworded: this operator has two layouts */
        return lig_fail(LIG_ERR_PARAM_INVALID, "layout_query: expected \"BSND\" or \"TND\", got \"%.32s\"", lq);
    c->pr.tnd = tnd;
    c->paged = strcmp(lk, "PA_BSND") == 0;
    if (!c->paged && strcmp(lk, lq) != 0)
        return lig_fail(LIG_ERR_PARAM_INVALID, "layout_key: expected \"%s\" (like layout_query) or \"PA_BSND\", got \"%.32s\"",
                        lq, lk);
    if (c->paged && !c->block_table)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "block_table: expected a [B,max_blocks_per_seq] tensor for layout_key "
                        "\"PA_BSND\", got NULL");
    if (!c->paged && c->block_table)
        return lig_fail(LIG_ERR_PARAM_INVALID, "block_table: expected NULL for layout_key \"%s\" (a table is for "
                        "\"PA_BSND\"), got a tensor", lk);
    return LIG_SUCCESS;
}

/* query, key (or the paged cache and its table) and weights: ranks, dtypes, shapes; fills c->pr. */
static lig_status check_qkw(lig_fwd_call *c) {
    const bool tnd = c->pr.tnd;
    return c->paged ? lig_problem_check_paged_qkw(c->query, c->key, c->block_table, c->weights, tnd, is_quant(c), &c->pr)
                    : lig_problem_check_fwd_qkw(c->query, c->key, c->weights, tnd, is_quant(c), &c->pr);
}

static lig_status check_scale_dtype(const lig_tensor *t, const char *name) {
    if (t->dtype == LIG_FLOAT32 || t->dtype == LIG_FLOAT16) return LIG_SUCCESS;
    if (t->dtype == LIG_UINT8 || t->dtype == LIG_INT32) /* e8m0 block scales with 8-bit codes: DeepGEMM's MXFP8 */
        return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected dtype FLOAT32 or FLOAT16 (e8m0 block scales are MXFP4's, "
                        "FLOAT4_E2M1X2 codes; MXFP8, e4m3 codes with e8m0 block scales, is not supported), got %s", name,
                        lig_dtype_name(t->dtype));
    return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected dtype FLOAT32 or FLOAT16, got %s", name,
                    lig_dtype_name(t->dtype));
}

/* An MXFP4 block-scale tensor: UINT8 (one e8m0 byte a block of 32 values) or INT32 (four bytes a
 * word, block 4j + i in bits 8i..8i+7 of word j, DeepGEMM's q_sf / kv_sf), shaped `base` (rank
 * `rank`: the weights' for the query, the keys' without D for the keys) plus a last axis of the
 * blocks: UINT8 nblk bytes, or up to whole words of them (4*ceil(nblk/4), the quantizer's padding);
 * INT32 ceil(nblk/4) words. A last axis of one element may be left out (DeepGEMM's [.., H] int32
 * for D <= 128). */
static lig_status check_mxfp4_scales(const lig_tensor *t, const char *name, int64_t rank, const int64_t *base,
                                     const char *like, int64_t D) {
    if (t->dtype != LIG_UINT8 && t->dtype != LIG_INT32)
        return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected dtype UINT8 (e8m0 bytes) or INT32 (four e8m0 bytes a "
                        "word) for a FLOAT4_E2M1X2 query, got %s", name, lig_dtype_name(t->dtype));
    const int64_t nblk = (D + 31) / 32, words = (nblk + 3) / 4;
    const bool bytes = t->dtype == LIG_UINT8;
    const int64_t lo = bytes ? nblk : words, hi = bytes ? 4 * words : words;
    int64_t expect[LIG_MAX_DIMS];
    for (int64_t i = 0; i < rank; i++) expect[i] = base[i];
    char why[96];
    if (t->ndim == rank && lo == 1) /* the one block (word) without its axis */
        return lig_check_shape(t, name, rank, expect, like);
    const int64_t last = t->ndim == rank + 1 ? t->shape[rank] : lo;
    expect[rank] = last >= lo && last <= hi ? last : lo;
    snprintf(why, sizeof why, "%s, then %s%lld %s for D = %lld", like, lo < hi ? "at least " : "", (long long)lo,
             bytes ? (lo < hi ? "bytes (at most whole words)" : "bytes") : "words", (long long)D);
    return lig_check_shape(t, name, rank + 1, expect, why);
}

/* MXFP4 (FLOAT4_E2M1X2 q and k): both block scales are required (DeepGEMM: the query's scale
 * argument is what makes the call FP4, and no per-token scale exists beside the block scales). */
static lig_status check_fp4_scales(lig_fwd_call *c) {
    const lig_tensor *sq = c->query_dequant_scale, *sk = c->key_dequant_scale;
    if (!sq)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "query_dequant_scale: expected the query's MXFP4 block scales (UINT8 or "
                        "INT32) for a FLOAT4_E2M1X2 query, got NULL");
    lig_status st = check_mxfp4_scales(sk, "key_dequant_scale", c->key->ndim - 1, c->key->shape, "like key without D",
                                       c->pr.D);
    if (st != LIG_SUCCESS) return st;
    return check_mxfp4_scales(sq, "query_dequant_scale", c->weights->ndim, c->weights->shape, "like weights", c->pr.D);
}

/* key_dequant_scale: key's shape without D ([B,S2,N2], [T2,N2], paged [num_blocks,block_size,N2]);
 * query_dequant_scale (optional): weights' shape. MXFP4: check_fp4_scales. */
static lig_status check_scales(lig_fwd_call *c) {
    lig_status st;
    const lig_tensor *sq = c->query_dequant_scale, *sk = c->key_dequant_scale;
    if (c->query->dtype == LIG_FLOAT4_E2M1X2) return check_fp4_scales(c);
    if ((st = check_scale_dtype(sk, "key_dequant_scale")) != LIG_SUCCESS) return st;
    if ((st = lig_check_shape(sk, "key_dequant_scale", c->key->ndim - 1, c->key->shape, "like key without D")) != LIG_SUCCESS)
        return st;
    if (!sq) return LIG_SUCCESS;
    if ((st = check_scale_dtype(sq, "query_dequant_scale")) != LIG_SUCCESS) return st;
    return lig_check_shape(sq, "query_dequant_scale", c->weights->ndim, c->weights->shape, "like weights");
}

/* sparse_values: the query's dtype or FLOAT32; for the quantized forwards (whose query is no
 * float) any float dtype. */
static lig_status check_values_dtype(const lig_fwd_call *c) {
    const lig_tensor *v = c->sparse_values;
    if (is_quant(c)) return lig_check_float_dtype(v, "sparse_values");
    if (v->dtype != c->query->dtype && v->dtype != LIG_FLOAT32)
        return lig_fail(LIG_ERR_PARAM_INVALID, "sparse_values: expected dtype %s (like query) or FLOAT32, got %s",
                        lig_dtype_name(c->query->dtype), lig_dtype_name(v->dtype));
    return LIG_SUCCESS;
}

/* sparse_count, sparse_indices (dtype, slot shape) and sparse_values (dtype, shape); sets pr.K. */
static lig_status check_topk(lig_fwd_call *c) {
    lig_status st;
    if (c->sparse_count < 1)
        return lig_fail(LIG_ERR_PARAM_INVALID, "sparse_count: expected a value >= 1, got %lld", (long long)c->sparse_count);
    if ((st = lig_check_index_dtype(c->sparse_indices, "sparse_indices")) != LIG_SUCCESS) return st;
    if ((st = lig_problem_check_slots(&c->pr, c->sparse_indices, "sparse_indices", c->sparse_count,
                                      "rows like query, N2 like key, K = sparse_count", &c->short_form)) != LIG_SUCCESS)
        return st;
    c->pr.K = c->sparse_count;
    if (!c->sparse_values) return LIG_SUCCESS;
    if ((st = check_values_dtype(c)) != LIG_SUCCESS) return st;
    return lig_check_shape(c->sparse_values, "sparse_values", c->sparse_indices->ndim, c->sparse_indices->shape,
                           "like sparse_indices");
}

/* The logits operator's outputs: logits and/or the top-k (sparse_values only with sparse_indices). */
static lig_status check_logits_outputs(lig_fwd_call *c) {
    lig_status st;
    if (!c->logits && !c->sparse_indices)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "logits, sparse_indices: expected at least one of the two outputs, got "
                        "NULL for both");
    if (!c->sparse_indices && c->sparse_values)
        return lig_fail(LIG_ERR_PARAM_INVALID, "sparse_values: expected NULL without sparse_indices (no top-k), got a "
                        "tensor");
    if (c->sparse_indices && (st = check_topk(c)) != LIG_SUCCESS) return st;
    if (!c->sparse_indices) c->pr.K = 0;
    if (!c->logits) return LIG_SUCCESS;
    if (c->logits->dtype != LIG_FLOAT32)
        return lig_fail(LIG_ERR_PARAM_INVALID, "logits: expected dtype FLOAT32, got %s", lig_dtype_name(c->logits->dtype));
    lig_problem columns = c->pr; /* takes W from the tensor; pr keeps its K */
    if ((st = lig_problem_check_slots(&columns, c->logits, "logits", -1, "rows like query, N2 like key, W columns",
                                      &c->logits_short)) != LIG_SUCCESS)
        return st;
    c->logits_cols = columns.K;
    return LIG_SUCCESS;
}

static lig_status check_mask(lig_fwd_call *c) { return lig_check_mask_args(c->sparse_mode, c->pre_tokens, c->next_tokens); }

/* key_start / key_end: [B,S1] (BSND query) or [T1] (TND), INT32 or INT64. */
static lig_status check_range_tensor(const lig_tensor *t, const char *name, const lig_problem *pr) {
    if (!lig_dtype_is_index(t->dtype))
        return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected dtype INT32 or INT64, got %s", name, lig_dtype_name(t->dtype));
    const int64_t expect[2] = {pr->B, pr->S1};
    return pr->tnd ? lig_check_shape(t, name, 1, expect + 1, "T1 like query")
                   : lig_check_shape(t, name, 2, expect, "B, S1 like query");
}

static lig_status check_ranges(lig_fwd_call *c) {
    lig_status st;
    if (c->key_start && (st = check_range_tensor(c->key_start, "key_start", &c->pr)) != LIG_SUCCESS) return st;
    return check_range_tensor(c->key_end, "key_end", &c->pr);
}

/* What can be checked of a schedule before the ranges are read: a paged cache, no top-k, dtype
 * INT32, shape [W+1, 2] with W >= 1 (its entries: quant_logits_schedule.c). */
static lig_status check_schedule(lig_fwd_call *c) {
    const lig_tensor *s = c->schedule;
    if (!s) return LIG_SUCCESS;
    if (!c->paged)
        return lig_fail(LIG_ERR_PARAM_INVALID, "schedule: expected NULL for a key layout other than \"PA_BSND\" (a "
                        "schedule splits a paged cache's blocks), got a tensor");
    if (c->sparse_indices)
        return lig_fail(LIG_ERR_PARAM_INVALID, "schedule: expected NULL with sparse_indices (a schedule splits the "
                        "logits only), got a tensor");
    if (s->dtype != LIG_INT32)
        return lig_fail(LIG_ERR_PARAM_INVALID, "schedule: expected dtype INT32, got %s", lig_dtype_name(s->dtype));
    if (s->ndim != 2 || s->shape[0] < 2 || s->shape[1] != 2) {
        char got[LIG_SHAPE_BUF];
        return lig_fail(LIG_ERR_PARAM_INVALID, "schedule: expected shape [W+1,2] with W >= 1 workers, got %s",
                        lig_format_shape(got, sizeof got, s->ndim, s->shape));
    }
    return LIG_SUCCESS;
}

/* The sparse logits' block list and output: sparse_block_kv >= 1; sparse_kv_block_indices INT32 or
 * INT64 [B,S1,M] | [T1,M] (one list per query row, shared by its key heads); sparse_logits a float
 * dtype shaped like a slot output with M * sparse_block_kv columns. Its ids are read with the
 * ranges (api/sparse_blocks.c). */
static lig_status check_sparse_blocks(lig_fwd_call *c) {
    const lig_tensor *ids = c->sparse_kv_block_indices, *out = c->sparse_logits;
    const lig_problem *pr = &c->pr;
    lig_status st;
    if (!ids)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "sparse_kv_block_indices: expected a [B,S1,blocks] or [T1,blocks] tensor "
                        "of block ids, got NULL");
    if (c->sparse_block_kv < 1)
        return lig_fail(LIG_ERR_PARAM_INVALID, "sparse_block_kv: expected a value >= 1 (DeepGEMM: 8 or 16), got %lld",
                        (long long)c->sparse_block_kv);
    if ((st = lig_check_index_dtype(ids, "sparse_kv_block_indices")) != LIG_SUCCESS) return st;
    const int64_t rank = pr->tnd ? 2 : 3, M = ids->ndim == rank ? ids->shape[rank - 1] : 0;
    const int64_t expect[3] = {pr->tnd ? pr->S1 : pr->B, pr->S1, M};
    if ((st = lig_check_shape(ids, "sparse_kv_block_indices", rank, pr->tnd ? expect + 1 : expect,
                              pr->tnd ? "T1 like query, then the blocks" : "B, S1 like query, then the blocks")) != LIG_SUCCESS)
        return st;
    const uint64_t cols = lig_size_mul((uint64_t)M, (uint64_t)c->sparse_block_kv);
    if (cols > (uint64_t)INT64_MAX)
        return lig_fail(LIG_ERR_PARAM_INVALID, "sparse_block_kv: expected blocks x sparse_block_kv columns below 2^63, "
                        "got %lld x %lld", (long long)M, (long long)c->sparse_block_kv);
    c->max_blocks = M;
    c->pr.K = 0; /* no top-k */
    if ((st = lig_check_float_dtype(out, "sparse_logits")) != LIG_SUCCESS) return st;
    lig_problem columns = c->pr; /* pr keeps its K */
    return lig_problem_check_slots(&columns, out, "sparse_logits", (int64_t)cols,
                                   "rows like query, N2 like key, blocks x sparse_block_kv columns", &c->sparse_short);
}

static lig_status check_placement(lig_fwd_call *c) { return lig_check_placement(&c->args, &c->placed); }

/* ---- the operators ------------------------------------------------------------------------ */

typedef struct fwd_operator {
    lig_op op;
    const arg_spec *args;
    size_t n_args;
    const check_fn *checks; /* NULL-terminated */
    const char *tnd_table_rows; /* TND: why block_table has the rows it must have (NULL: B like the lengths) */
} fwd_operator;

static const check_fn indexer_checks[] = {check_pointers, check_layout, check_qkw, check_topk, check_mask,
                                          check_placement, NULL};
static const check_fn quant_indexer_checks[] = {check_pointers, check_quant_modes, check_quant_layouts, check_qkw,
                                                check_scales, check_topk, check_mask, check_placement, NULL};
static const check_fn quant_logits_checks[] = {check_pointers, check_key_end_present, check_quant_layouts, check_qkw,
                                               check_scales, check_logits_outputs, check_ranges, check_schedule,
                                               check_placement, NULL};
static const check_fn sparse_logits_checks[] = {check_pointers, check_key_end_present, check_quant_layouts, check_qkw,
                                                check_scales, check_sparse_blocks, check_ranges, check_placement, NULL};

#define OPERATOR(op, args, checks, rows) {op, args, sizeof(args) / sizeof((args)[0]), checks, rows}
static const fwd_operator operators[] = {
    OPERATOR(LIG_OP_INDEXER, indexer_args, indexer_checks, NULL),
    OPERATOR(LIG_OP_INDEXER_PAGED, indexer_paged_args, indexer_checks, NULL),
    OPERATOR(LIG_OP_QUANT_INDEXER, quant_indexer_args, quant_indexer_checks, NULL),
    /* BSND: B batches of S1 rows; TND: one sequence of T1 rows over the T2 keys (DeepGEMM's
     * fp8_mqa_logits), a paged cache then having one table row */
    OPERATOR(LIG_OP_QUANT_LOGITS, quant_logits_args, quant_logits_checks, "one row per batch; TND: one sequence"),
    OPERATOR(LIG_OP_SPARSE_LOGITS, sparse_logits_args, sparse_logits_checks, "one row per batch; TND: one sequence"),
};
#undef OPERATOR

static const fwd_operator *operator_of(lig_op op) {
    for (size_t i = 0; i < sizeof operators / sizeof operators[0]; i++)
        if (operators[i].op == op) return &operators[i];
    return NULL;
}

lig_status lig_fwd_check_arguments(lig_fwd_call *c) {
    const fwd_operator *o = operator_of(c->op);
    if (!o) return lig_fail(LIG_ERR_INNER, "executor: expected a forward operator, got %#x", (unsigned)c->op);
    for (size_t i = 0; i < o->n_args; i++) {
        const lig_tensor *const *t = (const lig_tensor *const *)(const void *)((const char *)c + o->args[i].field);
        c->list[i] = (lig_argument){*t, o->args[i].name, o->args[i].role};
    }
    c->args = (lig_arguments){c->list, o->n_args};
    c->pr.K = -1;
    lig_status st = LIG_SUCCESS;
    for (const check_fn *f = o->checks; *f && st == LIG_SUCCESS; f++) st = (*f)(c);
    return st;
}

lig_status lig_fwd_check_resolved(const lig_fwd_call *c) {
    const lig_problem *pr = &c->pr;
    const lig_tensor *table = c->block_table;
    if (c->paged && table->shape[0] != pr->B) {
        const fwd_operator *o = operator_of(c->op);
        const int64_t expect[2] = {pr->B, table->shape[1]};
        const char *why = !pr->tnd ? "B like query" : o->tnd_table_rows ? o->tnd_table_rows : "B like actual_seq_lengths_query";
        return lig_check_shape(table, "block_table", 2, expect, why);
    }
    /* sparse_indices INT32 holds key positions below 2^31 only: INT64 past that S2 */
    const lig_tensor *idx = c->sparse_indices;
    if (idx && idx->dtype == LIG_INT32 && pr->S2 > (int64_t)INT32_MAX + 1)
        return lig_fail(LIG_ERR_PARAM_INVALID,
                        "sparse_indices: expected dtype INT64 for key lengths above 2^31 (S2 = %lld), got INT32",
                        (long long)pr->S2);
    return LIG_SUCCESS;
}

/* The quantized indexer's logits (docs/contract.md 2.6): lig_quant_indexer's scores (contract 2.4)
 * over per-row key ranges [key_start, key_end), written as fp32 logits and/or their top-k, in the
 * forms DeepGEMM's fp8_mqa_logits / fp8_paged_mqa_logits take. Phase 1 shares the quantized
 * forward's input checks (api/quant_checks.h), its output checks and problem (api/forward_plan.h);
 * the ranges replace the lengths and the mask (lig_problem_resolve_ranges). An optional schedule
 * (DeepGEMM's get_paged_mqa_logits_metadata form, api/quant_logits_schedule.c) makes its pieces
 * the operator's units. Phase 2 is its own entry, lig_quant_logits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/argument_checks.h"
#include "api/forward_plan.h"
#include "api/problem_arguments.h"
#include "api/quant_checks.h"
#include "api/quant_logits_schedule.h"
#include "core/error.h"
#include "core/tensor.h"

/* The operator's table of tensor arguments (argument_checks.h). */
enum { LOGITS_ARGUMENTS = 12 };

typedef struct logits_call {
    lig_fwd_args a;
    const lig_tensor *key_start, *key_end, *logits, *schedule;
    bool clean, compressed;
} logits_call;

static lig_arguments logits_arguments(const logits_call *c, lig_argument list[LOGITS_ARGUMENTS]) {
    const lig_fwd_args *a = &c->a;
    const lig_argument table[LOGITS_ARGUMENTS] = {
        {a->query, "query", LIG_ARG_INPUT},
        {a->key, "key", LIG_ARG_INPUT},
        {a->weights, "weights", LIG_ARG_INPUT},
        {a->query_dequant_scale, "query_dequant_scale", LIG_ARG_OPTIONAL_INPUT},
        {a->key_dequant_scale, "key_dequant_scale", LIG_ARG_INPUT},
        {a->block_table, "block_table", LIG_ARG_OPTIONAL_INPUT},
        {c->key_start, "key_start", LIG_ARG_HOST_LENGTHS},
        {c->key_end, "key_end", LIG_ARG_HOST_LENGTHS},
        {c->schedule, "schedule", LIG_ARG_HOST_LENGTHS},
        {c->logits, "logits", LIG_ARG_OPTIONAL_OUTPUT},
        {a->sparse_indices, "sparse_indices", LIG_ARG_OPTIONAL_OUTPUT},
        {a->sparse_values, "sparse_values", LIG_ARG_OPTIONAL_OUTPUT},
    };
    memcpy(list, table, sizeof table);
    return (lig_arguments){list, LOGITS_ARGUMENTS};
}

/* The outputs asked for: logits and/or the top-k (sparse_values only with sparse_indices). */
static lig_status check_outputs(const logits_call *c, lig_problem *pr, bool *short_form, int64_t *W) {
    lig_status st;
    if (!c->logits && !c->a.sparse_indices)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "logits, sparse_indices: expected at least one of the two outputs, got "
                        "NULL for both");
    if (!c->a.sparse_indices && c->a.sparse_values)
        return lig_fail(LIG_ERR_PARAM_INVALID, "sparse_values: expected NULL without sparse_indices (no top-k), got a "
                        "tensor");
    *short_form = false;
    if (c->a.sparse_indices && (st = lig_fwd_check_outputs(pr, &c->a, short_form)) != LIG_SUCCESS) return st;
    if (!c->a.sparse_indices) pr->K = 0;
    *W = 0;
    if (!c->logits) return LIG_SUCCESS;
    if (c->logits->dtype != LIG_FLOAT32)
        return lig_fail(LIG_ERR_PARAM_INVALID, "logits: expected dtype FLOAT32, got %s", lig_dtype_name(c->logits->dtype));
    lig_problem columns = *pr; /* takes W from the tensor; pr keeps its K */
    bool logits_short;
    if ((st = lig_problem_check_slots(&columns, c->logits, "logits", -1, "rows like query, N2 like key, W columns",
                                      &logits_short)) != LIG_SUCCESS)
        return st;
    *W = columns.K;
    return LIG_SUCCESS;
}

/* key_start / key_end: [B,S1] (BSND query) or [T1] (TND), INT32 or INT64. */
static lig_status check_range_tensor(const lig_tensor *t, const char *name, const lig_problem *pr) {
    if (!lig_dtype_is_index(t->dtype))
        return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected dtype INT32 or INT64, got %s", name, lig_dtype_name(t->dtype));
    const int64_t expect[2] = {pr->B, pr->S1};
    return pr->tnd ? lig_check_shape(t, name, 1, expect + 1, "T1 like query")
                   : lig_check_shape(t, name, 2, expect, "B, S1 like query");
}

static int64_t read_range(const lig_tensor *t, int64_t r, int64_t S1) {
    if (t->ndim == 1) return lig_load_int(t->dtype, (const char *)t->data + (size_t)(r * t->strides[0]) * lig_dtype_size(t->dtype));
    const int64_t b = r / S1, i = r % S1;
    return lig_load_int(t->dtype,
                        (const char *)t->data + (size_t)(b * t->strides[0] + i * t->strides[1]) * lig_dtype_size(t->dtype));
}

/* Reads the ranges (starts, then ends: 2 x rows values, owned by the caller on success), checks
 * 0 <= start <= end <= bound and that W columns hold every row's scores. */
static lig_status read_ranges(const logits_call *c, const lig_problem *pr, int64_t rows, int64_t W, int64_t **out) {
    const int64_t bound = pr->S2;
    const char *what = pr->paged ? "max_blocks_per_seq x block_size" : pr->tnd ? "T2" : "S2";
    int64_t *v = malloc(sizeof(int64_t) * (size_t)(2 * rows + 1));
    if (!v) return lig_fail(LIG_ERR_RUNTIME, "key_end: expected memory for %lld ranges, got none", (long long)rows);
    int64_t need = 0; /* the columns the logits must have */
    for (int64_t r = 0; r < rows; r++) {
        const int64_t s = c->key_start ? read_range(c->key_start, r, pr->S1) : 0, e = read_range(c->key_end, r, pr->S1);
        const int64_t b = pr->tnd ? 0 : r / pr->S1, i = pr->tnd ? r : r % pr->S1;
        char at[48];
        if (pr->tnd) snprintf(at, sizeof at, "[%lld]", (long long)i);
        else snprintf(at, sizeof at, "[%lld,%lld]", (long long)b, (long long)i);
        lig_status st = LIG_SUCCESS;
        if (s < 0 || s > bound)
            st = lig_fail(LIG_ERR_PARAM_INVALID, "key_start: expected values in [0, %lld] (%s), got %lld at %s",
                          (long long)bound, what, (long long)s, at);
        else if (e < s || e > bound)
            st = lig_fail(LIG_ERR_PARAM_INVALID, "key_end: expected values in [key_start = %lld, %lld] (%s), got %lld at %s",
                          (long long)s, (long long)bound, what, (long long)e, at);
        if (st != LIG_SUCCESS) {
            free(v);
            return st;
        }
        v[r] = s;
        v[rows + r] = e;
        const int64_t cols = c->compressed ? e - s : e;
        need = cols > need ? cols : need;
    }
    if (c->logits && W < need) {
        free(v);
        return lig_fail(LIG_ERR_PARAM_INVALID, "logits: expected at least %lld columns (the %s), got %lld", (long long)need,
                        c->compressed ? "longest key range, compressed" : "largest key_end", (long long)W);
    }
    *out = v;
    return LIG_SUCCESS;
}

/* The problem of the checked call: pr resolved with the ranges, then the views and the logits. */
static lig_status plan(const logits_call *c, lig_problem pr, bool short_form, int64_t W, lig_placement placed,
                       uint64_t *workspace_size, lig_executor **executor) {
    lig_status st;
    /* BSND: B batches of S1 rows; TND: one sequence of T1 rows over the T2 keys (DeepGEMM's
     * fp8_mqa_logits), a paged cache then having one table row */
    const int64_t batches = pr.tnd ? 1 : pr.B, per = pr.S1, rows = batches * per;
    if (pr.paged && c->a.block_table->shape[0] != batches) {
        const int64_t expect[2] = {batches, c->a.block_table->shape[1]};
        return lig_check_shape(c->a.block_table, "block_table", 2, expect, "one row per batch; TND: one sequence");
    }
    if (c->a.sparse_indices && (st = lig_fwd_check_index_range(c->a.sparse_indices, pr.S2)) != LIG_SUCCESS) return st;
    int64_t *ranges = NULL;
    if ((st = read_ranges(c, &pr, rows, W, &ranges)) != LIG_SUCCESS) return st;
    if ((st = lig_problem_resolve_ranges(&pr, batches, per, ranges)) != LIG_SUCCESS) return st;
    int64_t *pieces = NULL, npieces = 0;
    if (c->schedule && (st = lig_logits_schedule_read(c->schedule, &pr, &pieces, &npieces)) != LIG_SUCCESS) {
        lig_problem_free(&pr);
        return st;
    }
    lig_fwd_problem *pb = lig_fwd_problem_make(pr, &c->a, short_form);
    if (!pb) {
        free(pieces);
        return lig_fail(LIG_ERR_RUNTIME, "executor: expected memory for a plan, got none");
    }
    pb->has_logits = c->logits != NULL;
    pb->compressed = c->compressed;
    pb->clean = c->clean;
    if (c->logits) {
        bool logits_short = c->logits->ndim == (pb->pr.tnd ? 2 : 3);
        pb->logits = lig_problem_view(&pb->pr, c->logits, !logits_short, true);
        pb->logits_cols = W;
    }
    pb->pieces = npieces;
    pb->piece_start = pieces;
    pb->batch_block0 = pieces ? pieces + npieces + 1 : NULL;
    return lig_fwd_plan_publish(LIG_OP_QUANT_LOGITS, placed, pb, workspace_size, executor);
}

lig_status lig_quant_logits_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights, const lig_tensor *query_dequant_scale,
    const lig_tensor *key_dequant_scale, const lig_tensor *block_table, const lig_tensor *key_start,
    const lig_tensor *key_end, const char *layout_query, const char *layout_key, bool clean_logits, bool compressed,
    const lig_tensor *logits, int64_t sparse_count, const lig_tensor *sparse_indices, const lig_tensor *sparse_values,
    const lig_tensor *schedule, uint64_t *workspace_size, lig_executor **executor) {
    const logits_call c = {
        .a = {.query = query, .key = key, .block_table = block_table, .weights = weights, .key_name = "key",
              .query_dequant_scale = query_dequant_scale, .key_dequant_scale = key_dequant_scale,
              .sparse_count = sparse_count, .sparse_indices = sparse_indices, .sparse_values = sparse_values,
              .quant = true},
        .key_start = key_start, .key_end = key_end, .logits = logits, .schedule = schedule,
        .clean = clean_logits, .compressed = compressed};
    lig_argument list[LOGITS_ARGUMENTS];
    const lig_arguments args = logits_arguments(&c, list);
    lig_status st = lig_check_phase1_pointers(&args, false, NULL, workspace_size, executor);
    if (st != LIG_SUCCESS) return st;
    if (!key_end)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "key_end: expected a [B,S1] or [T1] tensor of range ends, got NULL");
    lig_problem pr;
    if ((st = lig_quant_check_inputs(&c.a, layout_query, layout_key, &pr)) != LIG_SUCCESS) return st;
    bool short_form;
    int64_t W;
    if ((st = check_outputs(&c, &pr, &short_form, &W)) != LIG_SUCCESS) return st;
    if (key_start && (st = check_range_tensor(key_start, "key_start", &pr)) != LIG_SUCCESS) return st;
    if ((st = check_range_tensor(key_end, "key_end", &pr)) != LIG_SUCCESS) return st;
    if (schedule && (st = lig_logits_schedule_check_use(schedule, &pr, sparse_indices)) != LIG_SUCCESS) return st;
    lig_placement placed;
    if ((st = lig_check_placement(&args, &placed)) != LIG_SUCCESS) return st;
    return plan(&c, pr, short_form, W, placed, workspace_size, executor);
}

lig_status lig_quant_logits(void *workspace, uint64_t workspace_size, lig_executor *executor, void *stream) {
    return lig_executor_run(executor, LIG_OP_QUANT_LOGITS, workspace, workspace_size, stream);
}

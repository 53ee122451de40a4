/* QuantLightningIndexer (docs/contract.md 2.4): the forward on FLOAT8_E4M3FN or INT8 queries and
 * keys with per-(token, head) dequantization scales, in CANN's argument order. Phase 1 checks what
 * is its own (the quant modes, the two layouts, the scales) and then shares the forward's checks,
 * problem and planner (api/forward_plan.h); phase 2 is its own entry, lig_quant_indexer, so that
 * an executor of one forward is never run as the other's. */
#include <string.h>

#include "api/argument_checks.h"
#include "api/forward_plan.h"
#include "api/problem_arguments.h"
#include "api/quant_checks.h"
#include "core/error.h"
#include "core/tensor.h"

/* CANN's modes: 0 is per-token-head (one scale per token and head), the only one it defines. */
static lig_status check_quant_mode(int64_t mode, const char *name) {
    if (mode == 0) return LIG_SUCCESS;
    return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected 0 (one scale per token and head), got %lld", name,
                    (long long)mode);
}

/* layout_key: "PA_BSND" (paged: block_table required), or the query's layout (block_table NULL). */
static lig_status check_key_layout(const char *layout_query, const char *layout_key, const lig_tensor *block_table,
                                   bool *paged) {
    *paged = strcmp(layout_key, "PA_BSND") == 0;
    if (!*paged && strcmp(layout_key, layout_query) != 0)
        return lig_fail(LIG_ERR_PARAM_INVALID, "layout_key: expected \"%s\" (like layout_query) or \"PA_BSND\", got \"%.32s\"",
                        layout_query, layout_key);
    if (*paged && !block_table)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "block_table: expected a [B,max_blocks_per_seq] tensor for layout_key "
                        "\"PA_BSND\", got NULL");
    if (!*paged && block_table)
        return lig_fail(LIG_ERR_PARAM_INVALID, "block_table: expected NULL for layout_key \"%s\" (a table is for "
                        "\"PA_BSND\"), got a tensor", layout_key);
    return LIG_SUCCESS;
}

static lig_status check_scale_dtype(const lig_tensor *t, const char *name) {
    if (t->dtype == LIG_FLOAT32 || t->dtype == LIG_FLOAT16) return LIG_SUCCESS;
    return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected dtype FLOAT32 or FLOAT16, got %s", name,
                    lig_dtype_name(t->dtype));
}

/* key_dequant_scale: key's shape without D ([B,S2,N2], [T2,N2], paged [num_blocks,block_size,N2]);
 * query_dequant_scale (optional): weights' shape. */
static lig_status check_scales(const lig_tensor *query_dequant_scale, const lig_tensor *key_dequant_scale,
                               const lig_tensor *key, const lig_tensor *weights) {
    lig_status st;
    if ((st = check_scale_dtype(key_dequant_scale, "key_dequant_scale")) != LIG_SUCCESS) return st;
    if ((st = lig_check_shape(key_dequant_scale, "key_dequant_scale", key->ndim - 1, key->shape,
                              "like key without D")) != LIG_SUCCESS)
        return st;
    if (!query_dequant_scale) return LIG_SUCCESS;
    if ((st = check_scale_dtype(query_dequant_scale, "query_dequant_scale")) != LIG_SUCCESS) return st;
    return lig_check_shape(query_dequant_scale, "query_dequant_scale", weights->ndim, weights->shape, "like weights");
}

lig_status lig_quant_check_inputs(const lig_fwd_args *a, const char *layout_query, const char *layout_key,
                                  lig_problem *pr) {
    lig_status st;
    if (!layout_query)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "layout_query: expected \"BSND\" or \"TND\", got NULL");
    if (!layout_key)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "layout_key: expected \"BSND\", \"TND\" or \"PA_BSND\", got NULL");
    bool tnd;
    if (lig_check_layout(layout_query, &tnd) != LIG_SUCCESS) /* reworded: this operator has two layouts */
        return lig_fail(LIG_ERR_PARAM_INVALID, "layout_query: expected \"BSND\" or \"TND\", got \"%.32s\"", layout_query);
    bool paged;
    if ((st = check_key_layout(layout_query, layout_key, a->block_table, &paged)) != LIG_SUCCESS) return st;
    st = paged ? lig_problem_check_quant_paged_qkw(a->query, a->key, a->block_table, a->weights, layout_query, pr)
               : lig_problem_check_quant_qkw(a->query, a->key, a->weights, layout_query, pr);
    if (st != LIG_SUCCESS) return st;
    return check_scales(a->query_dequant_scale, a->key_dequant_scale, a->key, a->weights);
}

lig_status lig_quant_indexer_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights, const lig_tensor *query_dequant_scale,
    const lig_tensor *key_dequant_scale, const lig_tensor *actual_seq_lengths_query,
    const lig_tensor *actual_seq_lengths_key, const lig_tensor *block_table, int64_t query_quant_mode,
    int64_t key_quant_mode, const char *layout_query, const char *layout_key, int64_t sparse_count,
    int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens, const lig_tensor *sparse_indices,
    const lig_tensor *sparse_values, uint64_t *workspace_size, lig_executor **executor) {
    const lig_fwd_args a = {.query = query, .key = key, .block_table = block_table, .weights = weights,
                            .key_name = "key", .query_dequant_scale = query_dequant_scale,
                            .key_dequant_scale = key_dequant_scale, .actual_seq_lengths_query = actual_seq_lengths_query,
                            .actual_seq_lengths_key = actual_seq_lengths_key, .sparse_count = sparse_count,
                            .sparse_mode = sparse_mode, .pre_tokens = pre_tokens, .next_tokens = next_tokens,
                            .sparse_indices = sparse_indices, .sparse_values = sparse_values, .quant = true};
    /* block_table's presence depends on layout_key: check_key_layout checks it */
    lig_status st = lig_fwd_check_pointers(&a, false, NULL, workspace_size, executor);
    if (st != LIG_SUCCESS) return st;
    if ((st = check_quant_mode(query_quant_mode, "query_quant_mode")) != LIG_SUCCESS) return st;
    if ((st = check_quant_mode(key_quant_mode, "key_quant_mode")) != LIG_SUCCESS) return st;
    lig_problem pr;
    if ((st = lig_quant_check_inputs(&a, layout_query, layout_key, &pr)) != LIG_SUCCESS) return st;
    return lig_plan_forward(LIG_OP_QUANT_INDEXER, pr, &a, workspace_size, executor);
}

lig_status lig_quant_indexer(void *workspace, uint64_t workspace_size, lig_executor *executor, void *stream) {
    return lig_executor_run(executor, LIG_OP_QUANT_INDEXER, workspace, workspace_size, stream);
}

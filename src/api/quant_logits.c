/* The quantized indexer's logits (docs/contract.md 2.6): lig_quant_indexer's scores (contract 2.4)
 * over per-row key ranges [key_start, key_end), written as fp32 logits and/or their top-k, in the
 * forms DeepGEMM's fp8_mqa_logits / fp8_paged_mqa_logits take. Phase 1 is the forwards'
 * (api/forward_build.h): the ranges replace the lengths and the mask, the problem gains the ranges
 * and logits parts, and an optional schedule (DeepGEMM's get_paged_mqa_logits_metadata form,
 * api/quant_logits_schedule.c) makes its pieces the walk's jobs. Phase 2 is its own entry,
 * lig_quant_logits. */
#include "api/forward_build.h"

lig_status lig_quant_logits_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights, const lig_tensor *query_dequant_scale,
    const lig_tensor *key_dequant_scale, const lig_tensor *block_table, const lig_tensor *key_start,
    const lig_tensor *key_end, const char *layout_query, const char *layout_key, bool clean_logits, bool compressed,
    const lig_tensor *logits, int64_t sparse_count, const lig_tensor *sparse_indices, const lig_tensor *sparse_values,
    const lig_tensor *schedule, uint64_t *workspace_size, lig_executor **executor) {
    lig_fwd_call c = {.op = LIG_OP_QUANT_LOGITS, .query = query, .key = key, .block_table = block_table,
                      .weights = weights, .query_dequant_scale = query_dequant_scale,
                      .key_dequant_scale = key_dequant_scale, .key_start = key_start, .key_end = key_end,
                      .schedule = schedule, .logits = logits, .sparse_indices = sparse_indices,
                      .sparse_values = sparse_values, .layout = layout_query, .layout_key = layout_key,
                      .sparse_count = sparse_count, .clean_logits = clean_logits, .compressed = compressed,
                      .workspace_size = workspace_size, .executor = executor};
    return lig_fwd_phase1(&c);
}

lig_status lig_quant_logits(void *workspace, uint64_t workspace_size, lig_executor *executor, void *stream) {
    return lig_executor_run(executor, LIG_OP_QUANT_LOGITS, workspace, workspace_size, stream);
}

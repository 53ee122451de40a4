/* QuantLightningIndexer (docs/contract.md 2.4): the forward on FLOAT8_E4M3FN or INT8 queries and
 * keys with per-(token, head) dequantization scales, in CANN's argument order. Phase 1 is the
 * forwards' (api/forward_build.h: its own checks are the quant modes, the two layouts and the
 * scales); phase 2 is its own entry, lig_quant_indexer, so that an executor of one forward is never
 * run as the other's. */
#include "api/forward_build.h"

lig_status lig_quant_indexer_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights, const lig_tensor *query_dequant_scale,
    const lig_tensor *key_dequant_scale, const lig_tensor *actual_seq_lengths_query,
    const lig_tensor *actual_seq_lengths_key, const lig_tensor *block_table, int64_t query_quant_mode,
    int64_t key_quant_mode, const char *layout_query, const char *layout_key, int64_t sparse_count,
    int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens, const lig_tensor *sparse_indices,
    const lig_tensor *sparse_values, uint64_t *workspace_size, lig_executor **executor) {
    lig_fwd_call c = {.op = LIG_OP_QUANT_INDEXER, .query = query, .key = key, .block_table = block_table,
                      .weights = weights, .query_dequant_scale = query_dequant_scale,
                      .key_dequant_scale = key_dequant_scale, .actual_seq_lengths_query = actual_seq_lengths_query,
                      .actual_seq_lengths_key = actual_seq_lengths_key, .layout = layout_query,
                      .layout_key = layout_key, .query_quant_mode = query_quant_mode, .key_quant_mode = key_quant_mode,
                      .sparse_count = sparse_count, .sparse_mode = sparse_mode, .pre_tokens = pre_tokens,
                      .next_tokens = next_tokens, .sparse_indices = sparse_indices, .sparse_values = sparse_values,
                      .workspace_size = workspace_size, .executor = executor};
    return lig_fwd_phase1(&c);
}

lig_status lig_quant_indexer(void *workspace, uint64_t workspace_size, lig_executor *executor, void *stream) {
    return lig_executor_run(executor, LIG_OP_QUANT_INDEXER, workspace, workspace_size, stream);
}

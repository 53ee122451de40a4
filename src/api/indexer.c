/* LightningIndexer (docs/contract.md sections 2.1, 3-6): the entries. Keys come from a key tensor
 * (BSND or TND, like the query) or from a paged key cache read through a block table; phase 1 is
 * the forwards' (api/forward_build.h), phase 2 runs the plan (both in lig_indexer). */
#include "api/forward_build.h"

lig_status lig_indexer_get_workspace_size(const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights,
                                          const lig_tensor *actual_seq_lengths_query,
                                          const lig_tensor *actual_seq_lengths_key, const char *layout,
                                          int64_t sparse_count, int64_t sparse_mode, int64_t pre_tokens,
                                          int64_t next_tokens, const lig_tensor *sparse_indices,
                                          const lig_tensor *sparse_values, uint64_t *workspace_size,
                                          lig_executor **executor) {
    lig_fwd_call c = {.op = LIG_OP_INDEXER, .query = query, .key = key, .weights = weights,
                      .actual_seq_lengths_query = actual_seq_lengths_query,
                      .actual_seq_lengths_key = actual_seq_lengths_key, .layout = layout, .sparse_count = sparse_count,
                      .sparse_mode = sparse_mode, .pre_tokens = pre_tokens, .next_tokens = next_tokens,
                      .sparse_indices = sparse_indices, .sparse_values = sparse_values,
                      .workspace_size = workspace_size, .executor = executor};
    return lig_fwd_phase1(&c);
}

lig_status lig_indexer_paged_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key_cache, const lig_tensor *block_table, const lig_tensor *weights,
    const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key, const char *layout,
    int64_t sparse_count, int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
    const lig_tensor *sparse_indices, const lig_tensor *sparse_values, uint64_t *workspace_size,
    lig_executor **executor) {
    lig_fwd_call c = {.op = LIG_OP_INDEXER_PAGED, .query = query, .key = key_cache, .block_table = block_table,
                      .weights = weights, .actual_seq_lengths_query = actual_seq_lengths_query,
                      .actual_seq_lengths_key = actual_seq_lengths_key, .layout = layout, .sparse_count = sparse_count,
                      .sparse_mode = sparse_mode, .pre_tokens = pre_tokens, .next_tokens = next_tokens,
                      .sparse_indices = sparse_indices, .sparse_values = sparse_values,
                      .workspace_size = workspace_size, .executor = executor};
    return lig_fwd_phase1(&c);
}

lig_status lig_indexer(void *workspace, uint64_t workspace_size, lig_executor *executor, void *stream) {
    return lig_executor_run(executor, LIG_OP_INDEXER, workspace, workspace_size, stream);
}

/* LightningIndexer: phase 1 validates (docs/contract.md sections 2.1, 3-6) and has the backend plan the
 * problem; phase 2 runs the plan. Keys come from a key tensor (BSND or TND, like the query)
 * or from a paged key cache read through a block table. */
#include "api/argument_checks.h"
#include "api/forward_plan.h"
#include "api/problem_arguments.h"

/* Both entries, once their arguments are in `a`: the key tensor's or the paged cache's checks,
 * then the forward's shared ones (api/forward_plan.h). */
static lig_status plan_indexer(const lig_fwd_args *a, const char *layout, uint64_t *workspace_size,
                               lig_executor **executor) {
    lig_status st = lig_fwd_check_pointers(a, true, layout, workspace_size, executor);
    if (st != LIG_SUCCESS) return st;
    lig_problem pr;
    if (a->block_table_required)
        st = lig_problem_check_paged_qkw(a->query, a->key, a->block_table, a->weights, layout, &pr);
    else
        st = lig_problem_check_qkw(a->query, a->key, a->weights, layout, &pr);
    if (st != LIG_SUCCESS) return st;
    return lig_plan_forward(LIG_OP_INDEXER, pr, a, workspace_size, executor);
}

lig_status lig_indexer_get_workspace_size(const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights,
                                          const lig_tensor *actual_seq_lengths_query,
                                          const lig_tensor *actual_seq_lengths_key, const char *layout,
                                          int64_t sparse_count, int64_t sparse_mode, int64_t pre_tokens,
                                          int64_t next_tokens, const lig_tensor *sparse_indices,
                                          const lig_tensor *sparse_values, uint64_t *workspace_size,
                                          lig_executor **executor) {
    const lig_fwd_args a = {.query = query, .key = key, .weights = weights, .key_name = "key",
                            .actual_seq_lengths_query = actual_seq_lengths_query,
                            .actual_seq_lengths_key = actual_seq_lengths_key, .sparse_count = sparse_count,
                            .sparse_mode = sparse_mode, .pre_tokens = pre_tokens, .next_tokens = next_tokens,
                            .sparse_indices = sparse_indices, .sparse_values = sparse_values};
    return plan_indexer(&a, layout, workspace_size, executor);
}

lig_status lig_indexer_paged_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key_cache, const lig_tensor *block_table, const lig_tensor *weights,
    const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key, const char *layout,
    int64_t sparse_count, int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
    const lig_tensor *sparse_indices, const lig_tensor *sparse_values, uint64_t *workspace_size,
    lig_executor **executor) {
    const lig_fwd_args a = {.query = query, .key = key_cache, .block_table = block_table, .weights = weights,
                            .key_name = "key_cache", .block_table_required = true,
                            .actual_seq_lengths_query = actual_seq_lengths_query,
                            .actual_seq_lengths_key = actual_seq_lengths_key, .sparse_count = sparse_count,
                            .sparse_mode = sparse_mode, .pre_tokens = pre_tokens, .next_tokens = next_tokens,
                            .sparse_indices = sparse_indices, .sparse_values = sparse_values};
    return plan_indexer(&a, layout, workspace_size, executor);
}

lig_status lig_indexer(void *workspace, uint64_t workspace_size, lig_executor *executor, void *stream) {
    return lig_executor_run(executor, LIG_OP_INDEXER, workspace, workspace_size, stream);
}

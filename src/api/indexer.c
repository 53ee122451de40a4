/* LightningIndexer: phase 1 validates (docs/contract.md sections 2.1, 3-6) and has the backend plan the
 * problem; phase 2 runs the plan. Keys come from a key tensor (BSND or TND, like the query)
 * or from a paged key cache read through a block table. */
#include "api/argument_checks.h"
#include "api/forward_plan.h"
#include "api/problem_arguments.h"

lig_status lig_indexer_get_workspace_size(const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights,
                                          const lig_tensor *actual_seq_lengths_query,
                                          const lig_tensor *actual_seq_lengths_key, const char *layout,
                                          int64_t sparse_count, int64_t sparse_mode, int64_t pre_tokens,
                                          int64_t next_tokens, const lig_tensor *sparse_indices,
                                          const lig_tensor *sparse_values, uint64_t *workspace_size,
                                          lig_executor **executor) {
    const lig_argument list[] = {
        {query, "query", LIG_ARG_INPUT},
        {key, "key", LIG_ARG_INPUT},
        {weights, "weights", LIG_ARG_INPUT},
        {actual_seq_lengths_query, "actual_seq_lengths_query", LIG_ARG_HOST_LENGTHS},
        {actual_seq_lengths_key, "actual_seq_lengths_key", LIG_ARG_HOST_LENGTHS},
        {sparse_indices, "sparse_indices", LIG_ARG_OUTPUT},
        {sparse_values, "sparse_values", LIG_ARG_OPTIONAL_OUTPUT},
    };
    const lig_arguments args = {list, sizeof list / sizeof list[0]};
    lig_status st = lig_check_phase1_pointers(&args, true, layout, workspace_size, executor);
    if (st != LIG_SUCCESS) return st;
    lig_problem pr;
    if ((st = lig_problem_check_qkw(query, key, weights, layout, &pr)) != LIG_SUCCESS) return st;
    const lig_fwd_args a = {.arguments = &args, .query = query, .key = key, .weights = weights,
                            .actual_seq_lengths_query = actual_seq_lengths_query,
                            .actual_seq_lengths_key = actual_seq_lengths_key, .sparse_count = sparse_count,
                            .sparse_mode = sparse_mode, .pre_tokens = pre_tokens, .next_tokens = next_tokens,
                            .sparse_indices = sparse_indices, .sparse_values = sparse_values};
    return lig_plan_forward(LIG_OP_INDEXER, pr, &a, workspace_size, executor);
}

lig_status lig_indexer_paged_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key_cache, const lig_tensor *block_table, const lig_tensor *weights,
    const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key, const char *layout,
    int64_t sparse_count, int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
    const lig_tensor *sparse_indices, const lig_tensor *sparse_values, uint64_t *workspace_size,
    lig_executor **executor) {
    const lig_argument list[] = {
        {query, "query", LIG_ARG_INPUT},
        {key_cache, "key_cache", LIG_ARG_INPUT},
        {block_table, "block_table", LIG_ARG_INPUT},
        {weights, "weights", LIG_ARG_INPUT},
        {actual_seq_lengths_query, "actual_seq_lengths_query", LIG_ARG_HOST_LENGTHS},
        {actual_seq_lengths_key, "actual_seq_lengths_key", LIG_ARG_HOST_LENGTHS},
        {sparse_indices, "sparse_indices", LIG_ARG_OUTPUT},
        {sparse_values, "sparse_values", LIG_ARG_OPTIONAL_OUTPUT},
    };
    const lig_arguments args = {list, sizeof list / sizeof list[0]};
    lig_status st = lig_check_phase1_pointers(&args, true, layout, workspace_size, executor);
    if (st != LIG_SUCCESS) return st;
    lig_problem pr;
    if ((st = lig_problem_check_paged_qkw(query, key_cache, block_table, weights, layout, &pr)) != LIG_SUCCESS)
        return st;
    const lig_fwd_args a = {.arguments = &args, .query = query, .key = key_cache, .block_table = block_table,
                            .weights = weights, .actual_seq_lengths_query = actual_seq_lengths_query,
                            .actual_seq_lengths_key = actual_seq_lengths_key, .sparse_count = sparse_count,
                            .sparse_mode = sparse_mode, .pre_tokens = pre_tokens, .next_tokens = next_tokens,
                            .sparse_indices = sparse_indices, .sparse_values = sparse_values};
    return lig_plan_forward(LIG_OP_INDEXER, pr, &a, workspace_size, executor);
}

lig_status lig_indexer(void *workspace, uint64_t workspace_size, lig_executor *executor, void *stream) {
    return lig_executor_run(executor, LIG_OP_INDEXER, workspace, workspace_size, stream);
}

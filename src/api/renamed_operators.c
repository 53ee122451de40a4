/* The operators' names before 0.2 (lig.h, "Names before 0.2"): each forwards to the operator now
 * named for what it returns, so that programs and bindings written against them keep working. */
#include "lig.h"

lig_status lig_indexer_kl_grad_get_workspace_size(const lig_tensor *sparse_values, const lig_tensor *sparse_indices,
                                                  const lig_tensor *target, const lig_tensor *loss,
                                                  const lig_tensor *dy, uint64_t *workspace_size,
                                                  lig_executor **executor) {
    return lig_kl_loss_and_dy_get_workspace_size(sparse_values, sparse_indices, target, loss, dy, workspace_size,
                                                 executor);
}

lig_status lig_indexer_kl_grad(void *workspace, uint64_t workspace_size, lig_executor *executor, void *stream) {
    return lig_kl_loss_and_dy(workspace, workspace_size, executor, stream);
}

lig_status lig_sparse_indexer_kl_loss_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *query_index, const lig_tensor *key_index,
    const lig_tensor *weights, const lig_tensor *sparse_indices, const lig_tensor *softmax_max,
    const lig_tensor *softmax_sum, const lig_tensor *softmax_lse, const lig_tensor *query_rope,
    const lig_tensor *key_rope, const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key,
    double scale, const char *layout, int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
    lig_kl_target target, bool deterministic, const lig_tensor *d_query_index, const lig_tensor *d_key_index,
    const lig_tensor *d_weights, const lig_tensor *loss, uint64_t *workspace_size, lig_executor **executor) {
    return lig_sparse_indexer_grad_kl_loss_get_workspace_size(
        query, key, query_index, key_index, weights, sparse_indices, softmax_max, softmax_sum, softmax_lse, query_rope,
        key_rope, actual_seq_lengths_query, actual_seq_lengths_key, scale, layout, sparse_mode, pre_tokens,
        next_tokens, target, deterministic, d_query_index, d_key_index, d_weights, loss, workspace_size, executor);
}

lig_status lig_sparse_indexer_kl_loss(void *workspace, uint64_t workspace_size, lig_executor *executor, void *stream) {
    return lig_sparse_indexer_grad_kl_loss(workspace, workspace_size, executor, stream);
}

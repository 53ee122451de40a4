/* The sparse ("candidate") logits (docs/contract.md 2.8): DeepGEMM 2.8's fp8_fp4_sparse_mqa_logits
 * and its paged form in C. A forward of the lig_quant_logits family: the same checks, ranges and
 * engines (api/forward_build.h), plus the per-row block lists (api/sparse_blocks.c) that make the
 * problem's sparse part, so that every score it writes is that operator's logit to the bit. Phase 2
 * is its own entry, lig_sparse_logits. */
#include "api/forward_build.h"

lig_status lig_sparse_logits_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights, const lig_tensor *query_dequant_scale,
    const lig_tensor *key_dequant_scale, const lig_tensor *block_table, const lig_tensor *key_start,
    const lig_tensor *key_end, const char *layout_query, const char *layout_key,
    const lig_tensor *sparse_kv_block_indices, int64_t sparse_block_kv, bool use_unaligned_ks,
    const lig_tensor *sparse_logits, uint64_t *workspace_size, lig_executor **executor) {
    lig_fwd_call c = {.op = LIG_OP_SPARSE_LOGITS, .query = query, .key = key, .block_table = block_table,
                      .weights = weights, .query_dequant_scale = query_dequant_scale,
                      .key_dequant_scale = key_dequant_scale, .key_start = key_start, .key_end = key_end,
                      .sparse_kv_block_indices = sparse_kv_block_indices, .sparse_logits = sparse_logits,
                      .layout = layout_query, .layout_key = layout_key, .sparse_block_kv = sparse_block_kv,
                      .use_unaligned_ks = use_unaligned_ks, .workspace_size = workspace_size, .executor = executor};
    return lig_fwd_phase1(&c);
}

lig_status lig_sparse_logits(void *workspace, uint64_t workspace_size, lig_executor *executor, void *stream) {
    return lig_executor_run(executor, LIG_OP_SPARSE_LOGITS, workspace, workspace_size, stream);
}

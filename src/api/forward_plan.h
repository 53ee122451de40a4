/* What the forwards' phase 1 share once their query/key/weights checks have passed: the slot
 * tensors, the masks, overlap and device checks, the sequence lengths, the problem and the
 * backend's plan. lig_indexer_get_workspace_size and lig_indexer_paged_get_workspace_size
 * (api/indexer.c) and lig_quant_indexer_get_workspace_size (api/quant_indexer.c) end here. */
#ifndef LIG_API_FORWARD_PLAN_H
#define LIG_API_FORWARD_PLAN_H

#include "api/argument_checks.h"
#include "api/executor.h"
#include "core/problem.h"

/* The tensors of one forward call. `arguments` is the operator's table of them (for the overlap
 * and device checks). `key` is the key tensor or the paged cache (block_table NULL unless
 * paged). The scales are the quantized forward's (both NULL otherwise; query_dequant_scale may be
 * NULL there too). */
typedef struct lig_fwd_args {
    const lig_arguments *arguments;
    const lig_tensor *query, *key, *block_table, *weights;
    const lig_tensor *query_dequant_scale, *key_dequant_scale;
    const lig_tensor *actual_seq_lengths_query, *actual_seq_lengths_key;
    int64_t sparse_count, sparse_mode, pre_tokens, next_tokens;
    const lig_tensor *sparse_indices, *sparse_values;
    bool quant;
} lig_fwd_args;

/* Checks the rest of the arguments, builds the lig_fwd_problem from `pr` (the geometry the
 * query/key/weights checks filled) and publishes the backend's plan as an executor of `op`. */
lig_status lig_plan_forward(lig_op op, lig_problem pr, const lig_fwd_args *a, uint64_t *workspace_size,
                            lig_executor **executor);

#endif

/* What the forwards' phase 1 share once their query/key/weights checks have passed: the slot
 * tensors, the masks, overlap and device checks, the sequence lengths, the problem and the
 * backend's plan. lig_indexer_get_workspace_size and lig_indexer_paged_get_workspace_size
 * (api/indexer.c) and lig_quant_indexer_get_workspace_size (api/quant_indexer.c) end here. */
#ifndef LIG_API_FORWARD_PLAN_H
#define LIG_API_FORWARD_PLAN_H

#include "api/argument_checks.h"
#include "api/executor.h"
#include "core/problem.h"

/* The tensors of one forward call. `key` is the key tensor or the paged cache (block_table NULL
 * unless paged); key_name names it in messages. block_table_required: the paged indexer's table
 * (the quantized forward checks the table against layout_key itself). The scales are the
 * quantized forward's (both NULL otherwise; query_dequant_scale may be NULL there too). */
typedef struct lig_fwd_args {
    const lig_tensor *query, *key, *block_table, *weights;
    const char *key_name;
    bool block_table_required;
    const lig_tensor *query_dequant_scale, *key_dequant_scale;
    const lig_tensor *actual_seq_lengths_query, *actual_seq_lengths_key;
    int64_t sparse_count, sparse_mode, pre_tokens, next_tokens;
    const lig_tensor *sparse_indices, *sparse_values;
    bool quant;
} lig_fwd_args;

/* The forwards' pointer checks (lig_check_phase1_pointers) on their table of tensor arguments:
 * query, key, weights, block_table, the sequence lengths, the scales, sparse_indices and
 * sparse_values, in that order. */
lig_status lig_fwd_check_pointers(const lig_fwd_args *a, bool check_layout, const char *layout,
                                  const uint64_t *workspace_size, lig_executor *const *executor);

/* Checks the rest of the arguments, builds the lig_fwd_problem from `pr` (the geometry the
 * query/key/weights checks filled) and publishes the backend's plan as an executor of `op`. */
lig_status lig_plan_forward(lig_op op, lig_problem pr, const lig_fwd_args *a, uint64_t *workspace_size,
                            lig_executor **executor);

/* sparse_count, sparse_indices (dtype, slot shape: *short_form) and sparse_values (dtype, shape)
 * of `a`, sparse_indices present; sets pr->K. */
lig_status lig_fwd_check_outputs(lig_problem *pr, const lig_fwd_args *a, bool *short_form);

/* sparse_indices INT32 holds key positions below 2^31 only: INT64 past that S2. */
lig_status lig_fwd_check_index_range(const lig_tensor *sparse_indices, int64_t S2);

/* The forward problem of the checked arguments `a` on the resolved `pr` (taken over): the views
 * of every tensor of `a` present (sparse_indices may be NULL: no top-k). NULL when out of memory
 * (pr freed). */
lig_fwd_problem *lig_fwd_problem_make(lig_problem pr, const lig_fwd_args *a, bool short_form);

/* Has the backend of `placed` plan `pb` (taken over) and publishes it as an executor of `op`. */
lig_status lig_fwd_plan_publish(lig_op op, lig_placement placed, lig_fwd_problem *pb, uint64_t *workspace_size,
                                lig_executor **executor);

#endif

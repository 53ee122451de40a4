/* Phase-1 pieces the operators over compressed keys share (lig_dense_indexer_softmax_lse and
 * lig_dense_indexer_kl_loss_grad, contract 2.7 and 2.9): their query, key and weights, the
 * softmax_lse tensor one writes and the other reads (their residuals and rule:
 * lig_problem_resolve_compressed, problem_arguments.h). */
#ifndef LIG_API_COMPRESSED_ARGUMENTS_H
#define LIG_API_COMPRESSED_ARGUMENTS_H

#include "api/argument_checks.h"
#include "core/problem.h"

/* The opening of such a phase 1: the table's pointers and the layout, then query, key and weights
 * (lig_check_compressed_qkw) into *pr, with nothing selected (pr->K = 0). */
lig_status lig_compressed_phase1_begin(const lig_arguments *args, const char *layout, uint64_t *workspace_size,
                                       lig_executor **executor, const lig_tensor *query, const lig_tensor *key,
                                       const lig_tensor *weights, lig_problem *pr);

/* The rule's scalars (mask_mode, cmp_ratio), before the lengths so that a bad mode is named
 * whatever the lengths, then the placement of the table's tensors. */
lig_status lig_compressed_phase1_rule(const lig_arguments *args, int64_t mask_mode, int64_t cmp_ratio,
                                      lig_placement *placed);

/* query, key and weights as the forward checks them, except that weights may also be FLOAT32
 * with FLOAT16 / BFLOAT16 queries (CANN's V4 operators take FLOAT32 weights only). Fills the
 * geometry of *pr as lig_problem_check_qkw does. */
lig_status lig_check_compressed_qkw(const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights,
                                    const char *layout, lig_problem *pr);

/* softmax_lse: FLOAT32 [B,N2,S1] (BSND) or [N2,T1] (TND). */
lig_status lig_check_softmax_lse(const lig_problem *pr, const lig_tensor *lse);

/* The view of a checked softmax_lse: element (b, t, g) at lig_q_row_ptr(&view, pr, b, t, g). */
lig_view4 lig_softmax_lse_view(const lig_problem *pr, const lig_tensor *lse);

#endif

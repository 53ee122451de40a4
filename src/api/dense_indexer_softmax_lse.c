/* lig_dense_indexer_softmax_lse: the indexer's log-sum-exp over every visible compressed key
 * (docs/contract.md 2.7). Phase 1 validates every argument (the forward's query, key and weights,
 * the lengths, the compressed-key rule of each batch and the output), builds the problem and has
 * the backend of the tensors plan it; phase 2 runs the plan. Nothing here touches tensor data
 * except the host sequence lengths and residuals. */
#include <stdlib.h>

#include "api/argument_checks.h"
#include "api/compressed_arguments.h"
#include "api/executor.h"
#include "api/problem_arguments.h"
#include "core/dense_lse_problem.h"
#include "core/error.h"
#include "core/tensor.h"

static void free_problem(void *p) {
    lig_dense_lse_problem *pb = p;
    lig_problem_free(&pb->pr);
    free(pb->rule.residual);
    free(pb);
}

lig_status lig_dense_indexer_softmax_lse_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights,
    const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key,
    const lig_tensor *cmp_residual_k, const char *layout, int64_t mask_mode, int64_t cmp_ratio,
    const lig_tensor *softmax_lse, uint64_t *workspace_size, lig_executor **executor) {
    const lig_argument list[] = {
        LIG_ARGUMENT(query, LIG_ARG_INPUT), LIG_ARGUMENT(key, LIG_ARG_INPUT), LIG_ARGUMENT(weights, LIG_ARG_INPUT),
        LIG_ARGUMENT(softmax_lse, LIG_ARG_OUTPUT), LIG_ARGUMENT(actual_seq_lengths_query, LIG_ARG_HOST_LENGTHS),
        LIG_ARGUMENT(actual_seq_lengths_key, LIG_ARG_HOST_LENGTHS), LIG_ARGUMENT(cmp_residual_k, LIG_ARG_HOST_LENGTHS)};
    const lig_arguments args = LIG_ARGUMENTS_OF(list);
    lig_problem pr;
    lig_status st = lig_compressed_phase1_begin(&args, layout, workspace_size, executor, query, key, weights, &pr);
    if (st != LIG_SUCCESS) return st;
    if ((st = lig_check_softmax_lse(&pr, softmax_lse)) != LIG_SUCCESS) return st;
    lig_placement placed;
    if ((st = lig_compressed_phase1_rule(&args, mask_mode, cmp_ratio, &placed)) != LIG_SUCCESS) return st;

    lig_dense_lse_problem *pb = calloc(1, sizeof *pb);
    if (!pb) return lig_fail(LIG_ERR_RUNTIME, "executor: expected memory for a plan, got none");
    if ((st = lig_problem_resolve_compressed(&pr, actual_seq_lengths_query, actual_seq_lengths_key, cmp_residual_k,
                                             mask_mode, cmp_ratio, &pb->rule)) != LIG_SUCCESS) {
        free(pb);
        return st;
    }
    pb->pr = pr;
    pb->q = lig_problem_view(&pb->pr, query, true, true);
    pb->k = lig_problem_view(&pb->pr, key, true, true);
    pb->w = lig_problem_view(&pb->pr, weights, true, false);
    pb->lse = lig_softmax_lse_view(&pb->pr, softmax_lse);
    return lig_executor_plan(LIG_OP_DENSE_INDEXER_SOFTMAX_LSE, placed, pb, free_problem, workspace_size, executor);
}

lig_status lig_dense_indexer_softmax_lse(void *workspace, uint64_t workspace_size, lig_executor *executor,
                                         void *stream) {
    return lig_executor_run(executor, LIG_OP_DENSE_INDEXER_SOFTMAX_LSE, workspace, workspace_size, stream);
}

/* LightningIndexerGrad: phase 1 validates every argument (docs/contract.md sections 3-6) and has the
 * backend of the tensors plan the problem; phase 2 runs the plan. Nothing here touches tensor
 * data except the host-side sequence-length arrays. */
#include <stdlib.h>

#include "api/executor.h"
#include "api/problem_arguments.h"
#include "api/argument_checks.h"
#include "core/error.h"
#include "core/tensor.h"

static void free_problem(void *p) {
    lig_grad_problem *pb = p;
    lig_problem_free(&pb->pr);
    free(pb);
}

lig_status lig_indexer_grad_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *dy, const lig_tensor *sparse_indices,
    const lig_tensor *weights, const lig_tensor *actual_seq_lengths_query,
    const lig_tensor *actual_seq_lengths_key, int64_t head_num, const char *layout, int64_t sparse_mode,
    int64_t pre_tokens, int64_t next_tokens, bool deterministic, const lig_tensor *d_query,
    const lig_tensor *d_key, const lig_tensor *d_weights, uint64_t *workspace_size, lig_executor **executor) {
    const lig_argument list[] = {
        LIG_ARGUMENT(query, LIG_ARG_INPUT), LIG_ARGUMENT(key, LIG_ARG_INPUT), LIG_ARGUMENT(dy, LIG_ARG_INPUT),
        LIG_ARGUMENT(sparse_indices, LIG_ARG_INPUT), LIG_ARGUMENT(weights, LIG_ARG_INPUT),
        LIG_ARGUMENT(d_query, LIG_ARG_OUTPUT), LIG_ARGUMENT(d_key, LIG_ARG_OUTPUT),
        LIG_ARGUMENT(d_weights, LIG_ARG_OUTPUT),
        LIG_ARGUMENT(actual_seq_lengths_query, LIG_ARG_HOST_LENGTHS),
        LIG_ARGUMENT(actual_seq_lengths_key, LIG_ARG_HOST_LENGTHS)};
    const lig_arguments args = LIG_ARGUMENTS_OF(list);
    lig_status st = lig_check_phase1_pointers(&args, true, layout, workspace_size, executor);
    if (st != LIG_SUCCESS) return st;

    lig_problem pr;
    if ((st = lig_problem_check_qkw(query, key, weights, layout, &pr)) != LIG_SUCCESS) return st;
    const lig_named_tensor like_query[] = {{dy, "dy"}, {d_query, "d_query"}, {d_key, "d_key"}};
    for (size_t i = 0; i < sizeof like_query / sizeof like_query[0]; i++)
        if ((st = lig_check_same_dtype(like_query[i].tensor, like_query[i].name, query, "query")) != LIG_SUCCESS)
            return st;
    if (d_weights->dtype != query->dtype && d_weights->dtype != LIG_FLOAT32)
        return lig_fail(LIG_ERR_PARAM_INVALID, "d_weights: expected dtype %s (like query) or FLOAT32, got %s",
                        lig_dtype_name(query->dtype), lig_dtype_name(d_weights->dtype));
    if ((st = lig_check_index_dtype(sparse_indices, "sparse_indices")) != LIG_SUCCESS) return st;
    bool short_form;
    if ((st = lig_problem_check_slots(&pr, sparse_indices, "sparse_indices", -1, "rows like query, N2 like key",
                                      &short_form)) != LIG_SUCCESS)
        return st;
    if ((st = lig_check_shape(dy, "dy", sparse_indices->ndim, sparse_indices->shape, "like sparse_indices")) !=
        LIG_SUCCESS)
        return st;
    if ((st = lig_check_shape(d_query, "d_query", query->ndim, query->shape, "like query")) != LIG_SUCCESS) return st;
    if ((st = lig_check_shape(d_key, "d_key", key->ndim, key->shape, "like key")) != LIG_SUCCESS) return st;
    if ((st = lig_check_shape(d_weights, "d_weights", weights->ndim, weights->shape, "like weights")) != LIG_SUCCESS)
        return st;

    /* scalars */
    if (head_num != 0 && head_num != pr.N1)
        return lig_fail(LIG_ERR_PARAM_INVALID, "head_num: expected %lld (N1 of query) or 0, got %lld",
                        (long long)pr.N1, (long long)head_num);
    if ((st = lig_check_mask_args(sparse_mode, pre_tokens, next_tokens)) != LIG_SUCCESS) return st;

    lig_placement placed;
    if ((st = lig_check_placement(&args, &placed)) != LIG_SUCCESS) return st;

    lig_grad_problem *pb = calloc(1, sizeof *pb);
    if (!pb) return lig_fail(LIG_ERR_RUNTIME, "executor: expected memory for a plan, got none");
    const lig_grad_tensors t = {.query = query, .key = key, .weights = weights, .sparse_indices = sparse_indices,
                                .d_query = d_query, .d_key = d_key, .d_weights = d_weights};
    if ((st = lig_grad_problem_fill(pb, pr, &t, short_form, deterministic, sparse_mode, pre_tokens, next_tokens,
                                    actual_seq_lengths_query, actual_seq_lengths_key)) != LIG_SUCCESS) {
        free(pb);
        return st;
    }
    pb->dy = lig_problem_view(&pb->pr, dy, !short_form, true);

    return lig_executor_plan(LIG_OP_INDEXER_GRAD, placed, pb, free_problem, workspace_size, executor);
}

lig_status lig_indexer_grad(void *workspace, uint64_t workspace_size, lig_executor *executor, void *stream) {
    return lig_executor_run(executor, LIG_OP_INDEXER_GRAD, workspace, workspace_size, stream);
}

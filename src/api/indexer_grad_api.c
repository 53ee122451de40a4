/* LightningIndexerGrad phase 1: validate every argument (SPEC sections 2-5), then build the
 * plan and size its workspace. Nothing here touches tensor data except the host-side
 * sequence-length arrays. */
#include <stdlib.h>
#include <string.h>

#include "api/error.h"
#include "api/executor.h"
#include "api/tensor.h"
#include "api/problem.h"
#include "api/validate.h"
#include "plan/indexer_grad_plan.h"
#include "runtime/threadpool.h"

static void free_plan(void *p) {
    lig_indexer_grad_plan *plan = p;
    lig_batches_free(&plan->pr.bt);
    free(plan);
}

lig_status lig_indexer_grad_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *dy, const lig_tensor *sparse_indices,
    const lig_tensor *weights, const lig_tensor *actual_seq_lengths_query,
    const lig_tensor *actual_seq_lengths_key, int64_t head_num, const char *layout, int64_t sparse_mode,
    int64_t pre_tokens, int64_t next_tokens, bool deterministic, const lig_tensor *d_query,
    const lig_tensor *d_key, const lig_tensor *d_weights, uint64_t *workspace_size, lig_executor **executor) {
    lig_status st;
    const lig_named_tensor required[] = {
        {query, "query"},   {key, "key"},     {dy, "dy"},           {sparse_indices, "sparse_indices"},
        {weights, "weights"}, {d_query, "d_query"}, {d_key, "d_key"}, {d_weights, "d_weights"},
    };
    if ((st = lig_check_phase1_pointers(required, sizeof required / sizeof required[0], true, layout, workspace_size,
                                        executor)) != LIG_SUCCESS)
        return st;

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

    /* outputs may overlap neither the inputs, nor each other, nor themselves */
    const lig_named_tensor inputs[] = {
        {query, "query"}, {key, "key"}, {dy, "dy"}, {sparse_indices, "sparse_indices"}, {weights, "weights"},
        {actual_seq_lengths_query, "actual_seq_lengths_query"}, {actual_seq_lengths_key, "actual_seq_lengths_key"},
    };
    const lig_named_tensor outputs[] = {{d_query, "d_query"}, {d_key, "d_key"}, {d_weights, "d_weights"}};
    if ((st = lig_check_outputs_disjoint(outputs, 3, inputs, 7)) != LIG_SUCCESS) return st;

    lig_indexer_grad_plan *plan = calloc(1, sizeof *plan);
    if (!plan) return lig_fail(LIG_ERR_RUNTIME, "executor: expected memory for a plan, got none");
    st = lig_problem_resolve(&pr, sparse_mode, pre_tokens, next_tokens, actual_seq_lengths_query,
                             actual_seq_lengths_key);
    if (st != LIG_SUCCESS) {
        free(plan);
        return st;
    }
    plan->pr = pr;
    plan->deterministic = deterministic;
    /* any zero extent: nothing to multiply (SPEC 5: workspace 0, zero-filled outputs) */
    plan->empty = pr.units == 0 || pr.K == 0 || pr.D == 0 || pr.G == 0 || pr.key_rows == 0;
    plan->q = lig_problem_view(&pr, query, true, true);
    plan->dq = lig_problem_view(&pr, d_query, true, true);
    plan->w = lig_problem_view(&pr, weights, true, false);
    plan->dw = lig_problem_view(&pr, d_weights, true, false);
    plan->idx = lig_problem_view(&pr, sparse_indices, !short_form, true);
    plan->dy = lig_problem_view(&pr, dy, !short_form, true);
    plan->k = lig_problem_view(&pr, key, true, true);
    plan->dk = lig_problem_view(&pr, d_key, true, true);

    lig_indexer_grad_plan_workspace(plan, lig_get_num_threads());

    lig_executor *e = lig_executor_create(LIG_EXECUTOR_INDEXER_GRAD, plan, free_plan);
    if (!e) return lig_fail(LIG_ERR_RUNTIME, "executor: expected memory for an executor, got none");
    *workspace_size = plan->ws.total;
    *executor = e;
    return LIG_SUCCESS;
}

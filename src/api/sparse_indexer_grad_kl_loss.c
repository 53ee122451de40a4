/* lig_sparse_indexer_grad_kl_loss: the indexer's KL loss with the target taken from the main attention
 * (docs/contract.md 2.5), and its V2 with attention sinks. Phase 1 validates every argument (the indexer's like the backward's, the
 * main attention's and its statistics), builds the problem and has the backend of the tensors plan
 * it; phase 2 runs the plan. Nothing here touches tensor data except the host sequence lengths. */
#include <math.h>
#include <stdlib.h>

#include "api/argument_checks.h"
#include "api/executor.h"
#include "api/problem_arguments.h"
#include "core/error.h"
#include "core/tensor.h"

static void free_problem(void *p) {
    lig_grad_kl_loss_problem *pb = p;
    lig_problem_free(&pb->g.pr);
    free(pb);
}

/* The main attention's query and key (and their rope parts): rank of the layout, the index
 * tensors' dtype, the rows of query_index / key_index, one key head, D of the query. */
static lig_status check_main_pair(const lig_problem *pr, const lig_tensor *q, const char *qn, const lig_tensor *k,
                                  const char *kn, const lig_tensor *like, int64_t *heads, int64_t *dims) {
    lig_status st;
    const int64_t rank = pr->tnd ? 3 : 4;
    if ((st = lig_check_rank(q, qn, rank, pr->tnd ? "[T1,N1,D]" : "[B,S1,N1,D]")) != LIG_SUCCESS) return st;
    if ((st = lig_check_rank(k, kn, rank, pr->tnd ? "[T2,1,D]" : "[B,S2,1,D]")) != LIG_SUCCESS) return st;
    if ((st = lig_check_same_dtype(q, qn, like, "query_index")) != LIG_SUCCESS) return st;
    if ((st = lig_check_same_dtype(k, kn, like, "query_index")) != LIG_SUCCESS) return st;
    *heads = q->shape[rank - 2];
    *dims = q->shape[rank - 1];
    int64_t expect[4], n = 0;
    if (!pr->tnd) expect[n++] = pr->B;
    expect[n++] = pr->S1;
    expect[n++] = *heads;
    expect[n++] = *dims;
    if ((st = lig_check_shape(q, qn, n, expect, "rows like query_index")) != LIG_SUCCESS) return st;
    n = 0;
    if (!pr->tnd) expect[n++] = pr->B;
    expect[n++] = pr->S2;
    expect[n++] = 1;
    expect[n++] = *dims;
    /* MLA: one latent key head shared by every main head */
    return lig_check_shape(k, kn, n, expect, "rows like key_index, one head, D like the query");
}

/* Statistics: softmax_lse alone, or softmax_max with softmax_sum. */
static lig_status check_statistics_present(const lig_tensor *smax, const lig_tensor *ssum, const lig_tensor *lse) {
    if (lse) {
        if (smax || ssum)
            return lig_fail(LIG_ERR_PARAM_INVALID,
                            "%s: expected NULL when softmax_lse is given (the statistics are softmax_lse, or "
                            "softmax_max with softmax_sum), got a tensor",
                            smax ? "softmax_max" : "softmax_sum");
        return LIG_SUCCESS;
    }
    if (!smax)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "softmax_max: expected a tensor (or softmax_lse instead), got NULL");
    if (!ssum)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "softmax_sum: expected a tensor (or softmax_lse instead), got NULL");
    return LIG_SUCCESS;
}

/* The sinks: FLOAT32, one logit per main query head, [N1]. */
static lig_status check_sinks(const lig_tensor *sinks, int64_t n1) {
    if (sinks->dtype != LIG_FLOAT32)
        return lig_fail(LIG_ERR_PARAM_INVALID, "sinks: expected dtype FLOAT32, got %s", lig_dtype_name(sinks->dtype));
    const int64_t expect[1] = {n1};
    return lig_check_shape(sinks, "sinks", 1, expect, "[N1], one per head of query");
}

/* Both versions (V1 is V2 with sinks NULL: exactly V1's plan). */
lig_status lig_sparse_indexer_grad_kl_loss_v2_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *query_index, const lig_tensor *key_index,
    const lig_tensor *weights, const lig_tensor *sparse_indices, const lig_tensor *softmax_max,
    const lig_tensor *softmax_sum, const lig_tensor *softmax_lse, const lig_tensor *query_rope,
    const lig_tensor *key_rope, const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key,
    const lig_tensor *sinks, double scale, const char *layout, int64_t sparse_mode, int64_t pre_tokens,
    int64_t next_tokens, lig_kl_target target, bool deterministic, const lig_tensor *d_query_index,
    const lig_tensor *d_key_index, const lig_tensor *d_weights, const lig_tensor *loss, uint64_t *workspace_size,
    lig_executor **executor) {
    /* which statistics, and whether the rope pair, are given is checked below */
    const lig_argument list[] = {
        LIG_ARGUMENT(query, LIG_ARG_INPUT), LIG_ARGUMENT(key, LIG_ARG_INPUT), LIG_ARGUMENT(query_index, LIG_ARG_INPUT),
        LIG_ARGUMENT(key_index, LIG_ARG_INPUT), LIG_ARGUMENT(weights, LIG_ARG_INPUT),
        LIG_ARGUMENT(sparse_indices, LIG_ARG_INPUT), LIG_ARGUMENT(softmax_max, LIG_ARG_OPTIONAL_INPUT),
        LIG_ARGUMENT(softmax_sum, LIG_ARG_OPTIONAL_INPUT), LIG_ARGUMENT(softmax_lse, LIG_ARG_OPTIONAL_INPUT),
        LIG_ARGUMENT(query_rope, LIG_ARG_OPTIONAL_INPUT), LIG_ARGUMENT(key_rope, LIG_ARG_OPTIONAL_INPUT),
        LIG_ARGUMENT(sinks, LIG_ARG_OPTIONAL_INPUT),
        LIG_ARGUMENT(d_query_index, LIG_ARG_OUTPUT), LIG_ARGUMENT(d_key_index, LIG_ARG_OUTPUT),
        LIG_ARGUMENT(d_weights, LIG_ARG_OUTPUT), LIG_ARGUMENT(loss, LIG_ARG_OUTPUT),
        LIG_ARGUMENT(actual_seq_lengths_query, LIG_ARG_HOST_LENGTHS),
        LIG_ARGUMENT(actual_seq_lengths_key, LIG_ARG_HOST_LENGTHS)};
    const lig_arguments args = LIG_ARGUMENTS_OF(list);
    lig_status st = lig_check_phase1_pointers(&args, true, layout, workspace_size, executor);
    if (st != LIG_SUCCESS) return st;
    if ((st = check_statistics_present(softmax_max, softmax_sum, softmax_lse)) != LIG_SUCCESS) return st;
    if (!query_rope != !key_rope)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "%s: expected a tensor (%s is given; both or neither), got NULL",
                        query_rope ? "key_rope" : "query_rope", query_rope ? "query_rope" : "key_rope");

    /* the indexer, as the backward checks it */
    lig_problem pr;
    if ((st = lig_problem_check_index_qkw(query_index, key_index, weights, layout, &pr)) != LIG_SUCCESS) return st;
    if ((st = lig_check_index_dtype(sparse_indices, "sparse_indices")) != LIG_SUCCESS) return st;
    bool short_form;
    if ((st = lig_problem_check_slots(&pr, sparse_indices, "sparse_indices", -1,
                                      "rows like query_index, N2 like key_index", &short_form)) != LIG_SUCCESS)
        return st;

    /* the main attention */
    int64_t n1m, dm, n1r = 0, dr = 0;
    if ((st = check_main_pair(&pr, query, "query", key, "key", query_index, &n1m, &dm)) != LIG_SUCCESS) return st;
    if (query_rope) {
        if ((st = check_main_pair(&pr, query_rope, "query_rope", key_rope, "key_rope", query_index, &n1r, &dr)) !=
            LIG_SUCCESS)
            return st;
        if (n1r != n1m)
            return lig_fail(LIG_ERR_PARAM_INVALID, "query_rope: expected N1 = %lld heads (like query), got %lld",
                            (long long)n1m, (long long)n1r);
    }
    const lig_named_tensor stats[] = {{softmax_max, "softmax_max"}, {softmax_sum, "softmax_sum"},
                                      {softmax_lse, "softmax_lse"}};
    for (size_t i = 0; i < 3; i++)
        if (stats[i].tensor && (st = lig_problem_check_statistic(&pr, stats[i].tensor, stats[i].name, n1m)) != LIG_SUCCESS)
            return st;
    if (sinks && (st = check_sinks(sinks, n1m)) != LIG_SUCCESS) return st;

    /* outputs */
    if ((st = lig_check_same_dtype(d_query_index, "d_query_index", query_index, "query_index")) != LIG_SUCCESS)
        return st;
    if ((st = lig_check_same_dtype(d_key_index, "d_key_index", query_index, "query_index")) != LIG_SUCCESS) return st;
    if (d_weights->dtype != query_index->dtype && d_weights->dtype != LIG_FLOAT32)
        return lig_fail(LIG_ERR_PARAM_INVALID, "d_weights: expected dtype %s (like query_index) or FLOAT32, got %s",
                        lig_dtype_name(query_index->dtype), lig_dtype_name(d_weights->dtype));
    if ((st = lig_check_shape(d_query_index, "d_query_index", query_index->ndim, query_index->shape,
                              "like query_index")) != LIG_SUCCESS)
        return st;
    if ((st = lig_check_shape(d_key_index, "d_key_index", key_index->ndim, key_index->shape, "like key_index")) !=
        LIG_SUCCESS)
        return st;
    if ((st = lig_check_shape(d_weights, "d_weights", weights->ndim, weights->shape, "like weights")) != LIG_SUCCESS)
        return st;
    if ((st = lig_check_loss_scalar(loss)) != LIG_SUCCESS) return st;

    /* scalars */
    const float scale32 = (float)scale;
    if (!isfinite(scale32))
        return lig_fail(LIG_ERR_PARAM_INVALID, "scale: expected a finite value (in fp32), got %g", scale);
    if (target != LIG_KL_TARGET_HEAD_MEAN && target != LIG_KL_TARGET_L1 && target != LIG_KL_TARGET_CANN)
        return lig_fail(LIG_ERR_PARAM_INVALID,
                        "target: expected LIG_KL_TARGET_HEAD_MEAN (0), LIG_KL_TARGET_L1 (1) or LIG_KL_TARGET_CANN (2), "
                        "got %d",
                        (int)target);
    if ((st = lig_check_mask_args(sparse_mode, pre_tokens, next_tokens)) != LIG_SUCCESS) return st;

    lig_placement placed;
    if ((st = lig_check_placement(&args, &placed)) != LIG_SUCCESS) return st;

    lig_grad_kl_loss_problem *pb = calloc(1, sizeof *pb);
    if (!pb) return lig_fail(LIG_ERR_RUNTIME, "executor: expected memory for a plan, got none");
    const lig_grad_tensors t = {.query = query_index, .key = key_index, .weights = weights,
                                .sparse_indices = sparse_indices, .d_query = d_query_index, .d_key = d_key_index,
                                .d_weights = d_weights};
    if ((st = lig_grad_problem_fill(&pb->g, pr, &t, short_form, deterministic, sparse_mode, pre_tokens, next_tokens,
                                    actual_seq_lengths_query, actual_seq_lengths_key)) != LIG_SUCCESS) {
        free(pb);
        return st;
    }
    pb->g.dy = (lig_view4){.dtype = LIG_FLOAT32, .esize = 4}; /* dI is computed, never read from a tensor */
    const lig_problem *resolved = &pb->g.pr;
    pb->N1m = n1m;
    pb->Dm = dm;
    pb->Dr = dr;
    pb->has_rope = query_rope != NULL;
    pb->mq = lig_problem_view(resolved, query, true, true);
    pb->mk = lig_problem_view(resolved, key, true, true);
    if (query_rope) {
        pb->mqr = lig_problem_view(resolved, query_rope, true, true);
        pb->mkr = lig_problem_view(resolved, key_rope, true, true);
    }
    pb->has_lse = softmax_lse != NULL;
    if (softmax_lse) pb->lse = lig_problem_statistic_view(resolved, softmax_lse);
    else {
        pb->smax = lig_problem_statistic_view(resolved, softmax_max);
        pb->ssum = lig_problem_statistic_view(resolved, softmax_sum);
    }
    pb->has_sinks = sinks != NULL;
    if (sinks)
        pb->sinks = (lig_view4){.data = sinks->data, .dtype = LIG_FLOAT32, .esize = 4, .head = sinks->strides[0]};
    pb->scale = scale32;
    pb->target = target;
    pb->loss = loss->data;

    return lig_executor_plan(LIG_OP_SPARSE_INDEXER_GRAD_KL_LOSS, placed, pb, free_problem, workspace_size, executor);
}

lig_status lig_sparse_indexer_grad_kl_loss_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *query_index, const lig_tensor *key_index,
    const lig_tensor *weights, const lig_tensor *sparse_indices, const lig_tensor *softmax_max,
    const lig_tensor *softmax_sum, const lig_tensor *softmax_lse, const lig_tensor *query_rope,
    const lig_tensor *key_rope, const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key,
    double scale, const char *layout, int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
    lig_kl_target target, bool deterministic, const lig_tensor *d_query_index, const lig_tensor *d_key_index,
    const lig_tensor *d_weights, const lig_tensor *loss, uint64_t *workspace_size, lig_executor **executor) {
    return lig_sparse_indexer_grad_kl_loss_v2_get_workspace_size(
        query, key, query_index, key_index, weights, sparse_indices, softmax_max, softmax_sum, softmax_lse, query_rope,
        key_rope, actual_seq_lengths_query, actual_seq_lengths_key, NULL, scale, layout, sparse_mode, pre_tokens,
        next_tokens, target, deterministic, d_query_index, d_key_index, d_weights, loss, workspace_size, executor);
}

lig_status lig_sparse_indexer_grad_kl_loss(void *workspace, uint64_t workspace_size, lig_executor *executor,
                                      void *stream) {
    return lig_executor_run(executor, LIG_OP_SPARSE_INDEXER_GRAD_KL_LOSS, workspace, workspace_size, stream);
}

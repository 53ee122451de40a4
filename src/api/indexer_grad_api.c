/* LightningIndexerGrad phase 1: validate every argument (SPEC sections 2-5), then build the
 * plan and size its workspace. Nothing here touches tensor data except the host-side
 * sequence-length arrays. */
#include <stdlib.h>
#include <string.h>

#include "api/error.h"
#include "api/executor.h"
#include "api/tensor.h"
#include "api/validate.h"
#include "plan/indexer_grad_plan.h"
#include "runtime/threadpool.h"

/* The normalised view of a query-row tensor: [B,S,N,X] (BSND) or [T,N,X] (TND).
 * `has_head` is false for the short [B,S,K] / [T,K] forms, `has_dim` false for weights. */
static lig_view4 make_view(const lig_tensor *t, bool tnd, bool has_head, bool has_dim) {
    lig_view4 v = {.data = t->data, .dtype = t->dtype, .esize = lig_dtype_size(t->dtype)};
    int64_t i = 0;
    v.batch = tnd ? 0 : t->strides[i++];
    v.row = t->strides[i++];
    v.head = has_head ? t->strides[i++] : 0;
    v.dim = has_dim ? t->strides[i] : 0;
    return v;
}

static void free_plan(void *p) {
    lig_indexer_grad_plan *plan = p;
    lig_batches_free(&plan->bt);
    free(plan);
}

void lig_indexer_grad_plan_free(lig_indexer_grad_plan *plan) { free_plan(plan); }

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
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!required[i].tensor)
            return lig_fail(LIG_ERR_PARAM_NULLPTR, "%s: expected a tensor, got NULL", required[i].name);
    if (!layout) return lig_fail(LIG_ERR_PARAM_NULLPTR, "layout: expected \"BSND\" or \"TND\", got NULL");
    if (!workspace_size)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "workspace_size: expected a pointer to receive the size, got NULL");
    if (!executor) return lig_fail(LIG_ERR_PARAM_NULLPTR, "executor: expected a pointer to receive the plan, got NULL");

    bool tnd;
    if ((st = lig_check_layout(layout, &tnd)) != LIG_SUCCESS) return st;
    const int64_t row_rank = tnd ? 3 : 4; /* rank of query / key */
    if ((st = lig_check_rank(query, "query", row_rank, tnd ? "[T1,N1,D]" : "[B,S1,N1,D]")) != LIG_SUCCESS) return st;
    if ((st = lig_check_rank(key, "key", row_rank, tnd ? "[T2,N2,D]" : "[B,S2,N2,D]")) != LIG_SUCCESS) return st;
    if ((st = lig_check_rank(weights, "weights", row_rank - 1, tnd ? "[T1,N1]" : "[B,S1,N1]")) != LIG_SUCCESS) return st;

    /* dtypes: one float type for the four inputs, matching outputs, integer indices */
    if ((st = lig_check_float_dtype(query, "query")) != LIG_SUCCESS) return st;
    const lig_named_tensor like_query[] = {{key, "key"}, {dy, "dy"}, {weights, "weights"},
                                           {d_query, "d_query"}, {d_key, "d_key"}};
    for (size_t i = 0; i < sizeof like_query / sizeof like_query[0]; i++)
        if ((st = lig_check_same_dtype(like_query[i].tensor, like_query[i].name, query, "query")) != LIG_SUCCESS)
            return st;
    if (d_weights->dtype != query->dtype && d_weights->dtype != LIG_FLOAT32)
        return lig_fail(LIG_ERR_PARAM_INVALID, "d_weights: expected dtype %s (like query) or FLOAT32, got %s",
                        lig_dtype_name(query->dtype), lig_dtype_name(d_weights->dtype));
    if ((st = lig_check_index_dtype(sparse_indices, "sparse_indices")) != LIG_SUCCESS) return st;

    /* shapes */
    const int64_t *qs = query->shape, *ks = key->shape;
    const int64_t B = tnd ? -1 : qs[0];
    const int64_t S1 = qs[row_rank - 3], N1 = qs[row_rank - 2], D = qs[row_rank - 1];
    const int64_t S2 = ks[row_rank - 3], N2 = ks[row_rank - 2];
    {
        int64_t expect[4];
        int64_t n = 0;
        if (!tnd) expect[n++] = B;
        expect[n++] = S2;
        expect[n++] = N2;
        expect[n++] = D;
        if ((st = lig_check_shape(key, "key", n, expect, "batch and D like query")) != LIG_SUCCESS) return st;
    }
    if (N2 == 0 ? N1 != 0 : N1 % N2 != 0)
        return lig_fail(LIG_ERR_PARAM_INVALID,
                        "key: expected a head count N2 that divides query's N1 = %lld, got N2 = %lld", (long long)N1,
                        (long long)N2);
    {
        int64_t expect[3];
        int64_t n = 0;
        if (!tnd) expect[n++] = B;
        expect[n++] = S1;
        expect[n++] = N1;
        if ((st = lig_check_shape(weights, "weights", n, expect, "like query without D")) != LIG_SUCCESS) return st;
    }
    /* sparse_indices: [B,S1,N2,K] | [T1,N2,K], or without N2 when N2 == 1 */
    const int64_t si_rank = sparse_indices->ndim;
    const bool short_form = si_rank == row_rank - 1;
    if (si_rank != row_rank && !(short_form && N2 == 1)) {
        char got[LIG_SHAPE_BUF];
        return lig_fail(LIG_ERR_PARAM_INVALID, "sparse_indices: expected rank %lld (%s)%s, got rank %lld shape %s",
                        (long long)row_rank, tnd ? "[T1,N2,K]" : "[B,S1,N2,K]",
                        N2 == 1 ? (tnd ? " or rank 2 ([T1,K], N2 == 1)" : " or rank 3 ([B,S1,K], N2 == 1)") : "",
                        (long long)si_rank,
                        lig_format_shape(got, sizeof got, si_rank, sparse_indices->shape));
    }
    const int64_t K = sparse_indices->shape[si_rank - 1];
    {
        int64_t expect[4];
        int64_t n = 0;
        if (!tnd) expect[n++] = B;
        expect[n++] = S1;
        if (!short_form) expect[n++] = N2;
        expect[n++] = K;
        if ((st = lig_check_shape(sparse_indices, "sparse_indices", n, expect, "rows like query, N2 like key"))
            != LIG_SUCCESS)
            return st;
        if ((st = lig_check_shape(dy, "dy", n, expect, "like sparse_indices")) != LIG_SUCCESS) return st;
    }
    if ((st = lig_check_shape(d_query, "d_query", query->ndim, query->shape, "like query")) != LIG_SUCCESS) return st;
    if ((st = lig_check_shape(d_key, "d_key", key->ndim, key->shape, "like key")) != LIG_SUCCESS) return st;
    if ((st = lig_check_shape(d_weights, "d_weights", weights->ndim, weights->shape, "like weights")) != LIG_SUCCESS)
        return st;

    /* scalars */
    if (head_num != 0 && head_num != N1)
        return lig_fail(LIG_ERR_PARAM_INVALID, "head_num: expected %lld (N1 of query) or 0, got %lld", (long long)N1,
                        (long long)head_num);
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
    st = lig_batches_resolve(tnd, B, S1, S2, actual_seq_lengths_query, actual_seq_lengths_key, &plan->bt);
    if (st != LIG_SUCCESS) {
        free(plan);
        return st;
    }
    plan->B = plan->bt.B;
    plan->N1 = N1;
    plan->N2 = N2;
    plan->G = N2 ? N1 / N2 : 0;
    plan->D = D;
    plan->K = K;
    plan->S1 = S1;
    plan->S2 = S2;
    plan->sparse_mode = sparse_mode;
    plan->pre_tokens = pre_tokens;
    plan->next_tokens = next_tokens;
    plan->deterministic = deterministic;
    plan->tnd = tnd;
    plan->units = plan->bt.row_prefix[plan->B] * N2;
    plan->key_rows = tnd ? S2 : plan->B * S2;
    plan->acc_batch = tnd ? 0 : S2;
    plan->empty = plan->units == 0 || K == 0 || D == 0 || plan->G == 0;

    plan->q = make_view(query, tnd, true, true);
    plan->dq = make_view(d_query, tnd, true, true);
    plan->w = make_view(weights, tnd, true, false);
    plan->dw = make_view(d_weights, tnd, true, false);
    plan->idx = make_view(sparse_indices, tnd, !short_form, true);
    plan->dy = make_view(dy, tnd, !short_form, true);
    /* key rows are addressed like query rows, with the key's own bases */
    plan->k = make_view(key, tnd, true, true);
    plan->dk = make_view(d_key, tnd, true, true);

    lig_indexer_grad_plan_workspace(plan, lig_get_num_threads());

    lig_executor *e = lig_executor_create(LIG_EXECUTOR_INDEXER_GRAD, plan, free_plan);
    if (!e) return lig_fail(LIG_ERR_RUNTIME, "executor: expected memory for an executor, got none");
    *workspace_size = plan->ws.total;
    *executor = e;
    return LIG_SUCCESS;
}

/* lig_sparse_flash_mla_softmax_l1_norm: the main attention's head-mean softmax over compressed keys,
 * dense or at given slots (docs/contract.md 2.10). Phase 1 validates every argument (the main
 * attention's query, its one latent key head, its log-sum-exp, the slots, the lengths, the
 * compressed-key rule of each batch and the output), builds the problem and has the backend of the
 * tensors plan it; phase 2 runs the plan. Nothing here touches tensor data except the host
 * sequence lengths and residuals. */
#include <math.h>
#include <stdlib.h>

#include "api/argument_checks.h"
#include "api/executor.h"
#include "api/problem_arguments.h"
#include "core/error.h"
#include "core/softmax_l1_norm_problem.h"
#include "core/tensor.h"

static void free_problem(void *p) {
    lig_l1_norm_problem *pb = p;
    lig_problem_free(&pb->pr);
    free(pb->rule.residual);
    free(pb);
}

/* query [B,S1,N1,D] | [T1,N1,D] and key [B,S2,1,D] | [T2,1,D], one float dtype: the geometry of
 * *pr with one key head shared by every query head (MLA's latent key). */
static lig_status check_query_key(const lig_tensor *query, const lig_tensor *key, const char *layout, lig_problem *pr) {
    lig_status st;
    bool tnd;
    if ((st = lig_check_layout(layout, &tnd)) != LIG_SUCCESS) return st;
    const int64_t rank = tnd ? 3 : 4;
    if ((st = lig_check_rank(query, "query", rank, tnd ? "[T1,N1,D]" : "[B,S1,N1,D]")) != LIG_SUCCESS) return st;
    if ((st = lig_check_rank(key, "key", rank, tnd ? "[T2,1,D]" : "[B,S2,1,D]")) != LIG_SUCCESS) return st;
    if ((st = lig_check_float_dtype(query, "query")) != LIG_SUCCESS) return st;
    if ((st = lig_check_same_dtype(key, "key", query, "query")) != LIG_SUCCESS) return st;
    const int64_t *qs = query->shape;
    *pr = (lig_problem){.tnd = tnd, .B = tnd ? -1 : qs[0], .K = -1, .N2 = 1};
    pr->S1 = qs[rank - 3];
    pr->N1 = pr->G = qs[rank - 2];
    pr->D = qs[rank - 1];
    pr->S2 = key->shape[rank - 3];
    int64_t expect[4], n = 0;
    if (!tnd) expect[n++] = pr->B;
    expect[n++] = pr->S2;
    expect[n++] = 1;
    expect[n++] = pr->D;
    return lig_check_shape(key, "key", n, expect, "batch and D like query, one head");
}

/* The slots (when given) and the output's form; sets pr->K to the output's columns. */
static lig_status check_slots_and_output(lig_problem *pr, const lig_tensor *idx, const lig_tensor *out,
                                         bool *idx_short, bool *out_short) {
    lig_status st;
    if (idx) {
        if ((st = lig_check_index_dtype(idx, "sparse_indices")) != LIG_SUCCESS) return st;
        if ((st = lig_problem_check_slots(pr, idx, "sparse_indices", -1, "rows like query, one key head", idx_short)) !=
            LIG_SUCCESS)
            return st;
    }
    if (out->dtype != LIG_FLOAT32)
        return lig_fail(LIG_ERR_PARAM_INVALID, "softmax_l1_norm: expected dtype FLOAT32, got %s", lig_dtype_name(out->dtype));
    /* sparse: a column per slot; dense: W columns, checked against the lengths once they are read */
    return lig_problem_check_slots(pr, out, "softmax_l1_norm", idx ? pr->K : -1,
                                   idx ? "like sparse_indices" : "rows like query, one key head, W columns", out_short);
}

/* Dense: W columns hold every batch's entries. */
static lig_status check_width(const lig_problem *pr) {
    for (int64_t b = 0; b < pr->B; b++)
        if (pr->bt.lk[b] > pr->K)
            return lig_fail(LIG_ERR_PARAM_INVALID,
                            "softmax_l1_norm: expected at least %lld columns (the %lld compressed entries of batch %lld), "
                            "got %lld",
                            (long long)pr->bt.lk[b], (long long)pr->bt.lk[b], (long long)b, (long long)pr->K);
    return LIG_SUCCESS;
}

lig_status lig_sparse_flash_mla_softmax_l1_norm_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *softmax_lse, const lig_tensor *sparse_indices,
    const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key,
    const lig_tensor *cmp_residual_k, double softmax_scale, int64_t cmp_ratio, int64_t mask_mode, const char *layout,
    const lig_tensor *softmax_l1_norm, uint64_t *workspace_size, lig_executor **executor) {
    const lig_argument list[] = {
        LIG_ARGUMENT(query, LIG_ARG_INPUT), LIG_ARGUMENT(key, LIG_ARG_INPUT), LIG_ARGUMENT(softmax_lse, LIG_ARG_INPUT),
        LIG_ARGUMENT(sparse_indices, LIG_ARG_OPTIONAL_INPUT), LIG_ARGUMENT(softmax_l1_norm, LIG_ARG_OUTPUT),
        LIG_ARGUMENT(actual_seq_lengths_query, LIG_ARG_HOST_LENGTHS),
        LIG_ARGUMENT(actual_seq_lengths_key, LIG_ARG_HOST_LENGTHS), LIG_ARGUMENT(cmp_residual_k, LIG_ARG_HOST_LENGTHS)};
    const lig_arguments args = LIG_ARGUMENTS_OF(list);
    lig_status st = lig_check_phase1_pointers(&args, true, layout, workspace_size, executor);
    if (st != LIG_SUCCESS) return st;
    lig_problem pr;
    if ((st = check_query_key(query, key, layout, &pr)) != LIG_SUCCESS) return st;
    if ((st = lig_problem_check_statistic(&pr, softmax_lse, "softmax_lse", pr.N1)) != LIG_SUCCESS) return st;
    bool idx_short = false, out_short = false;
    if ((st = check_slots_and_output(&pr, sparse_indices, softmax_l1_norm, &idx_short, &out_short)) != LIG_SUCCESS)
        return st;
    const float scale32 = (float)softmax_scale;
    if (!isfinite(scale32))
        return lig_fail(LIG_ERR_PARAM_INVALID, "softmax_scale: expected a finite value (in fp32), got %g", softmax_scale);
    lig_placement placed;
    if ((st = lig_check_placement(&args, &placed)) != LIG_SUCCESS) return st;

    lig_compressed_rule rule;
    if ((st = lig_problem_resolve_compressed(&pr, actual_seq_lengths_query, actual_seq_lengths_key, cmp_residual_k,
                                             mask_mode, cmp_ratio, &rule)) != LIG_SUCCESS)
        return st;
    lig_l1_norm_problem *pb = (sparse_indices || (st = check_width(&pr)) == LIG_SUCCESS) ? calloc(1, sizeof *pb) : NULL;
    if (!pb) {
        lig_problem_free(&pr);
        free(rule.residual);
        return st != LIG_SUCCESS ? st : lig_fail(LIG_ERR_RUNTIME, "executor: expected memory for a plan, got none");
    }
    pb->pr = pr;
    pb->rule = rule;
    pb->scale = scale32;
    pb->sparse = sparse_indices != NULL;
    pb->q = lig_problem_view(&pb->pr, query, true, true);
    pb->k = lig_problem_view(&pb->pr, key, true, true);
    pb->lse = lig_problem_statistic_view(&pb->pr, softmax_lse);
    if (sparse_indices) pb->idx = lig_problem_view(&pb->pr, sparse_indices, !idx_short, true);
    pb->out = lig_problem_view(&pb->pr, softmax_l1_norm, !out_short, true);
    return lig_executor_plan(LIG_OP_SOFTMAX_L1_NORM, placed, pb, free_problem, workspace_size, executor);
}

lig_status lig_sparse_flash_mla_softmax_l1_norm(void *workspace, uint64_t workspace_size, lig_executor *executor,
                                                void *stream) {
    return lig_executor_run(executor, LIG_OP_SOFTMAX_L1_NORM, workspace, workspace_size, stream);
}

/* lig_dense_indexer_kl_loss_grad: the indexer's dense KL gradient over compressed keys
 * (docs/contract.md 2.9). Phase 1 validates every argument (query, key and weights as the dense
 * lse takes them, the target and the lse, the outputs, the compressed rule of each batch), builds
 * the backward's problem in its dense form with each row's visible prefix as its key range, and
 * has the backend of the tensors plan it; phase 2 runs the plan. Nothing here touches tensor data
 * except the host sequence lengths and residuals. */
#include <stdlib.h>

#include "api/argument_checks.h"
#include "api/compressed_arguments.h"
#include "api/executor.h"
#include "api/problem_arguments.h"
#include "core/compressed_keys.h"
#include "core/dense_kl_grad_problem.h"
#include "core/error.h"
#include "core/tensor.h"

static void free_problem(void *p) {
    lig_dense_kl_grad_problem *pb = p;
    lig_problem_free(&pb->g.pr);
    free(pb->ranges.lo);
    free(pb);
}

/* attn_softmax_l1_norm (and softmax_out, `like` it): FLOAT32 [B,S1,N2,W] | [T1,N2,W]; W is
 * checked against the key lengths once they are read. */
static lig_status check_entries_tensor(const lig_problem *pr, const lig_tensor *t, const char *name) {
    if (t->dtype != LIG_FLOAT32)
        return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected dtype FLOAT32, got %s", name, lig_dtype_name(t->dtype));
    lig_status st = lig_check_rank(t, name, pr->tnd ? 3 : 4, pr->tnd ? "[T1,N2,W]" : "[B,S1,N2,W]");
    if (st != LIG_SUCCESS) return st;
    int64_t expect[4], n = 0;
    if (!pr->tnd) expect[n++] = pr->B;
    expect[n++] = pr->S1;
    expect[n++] = pr->N2;
    expect[n] = t->shape[n];
    return lig_check_shape(t, name, n + 1, expect, "rows like query, N2 like key, W entries");
}

static lig_status check_outputs(const lig_problem *pr, const lig_tensor *query, const lig_tensor *key,
                                const lig_tensor *weights, const lig_tensor *target, const lig_tensor *d_query,
                                const lig_tensor *d_key, const lig_tensor *d_weights, const lig_tensor *softmax_out,
                                const lig_tensor *loss) {
    lig_status st;
    if ((st = lig_check_same_dtype(d_query, "d_query", query, "query")) != LIG_SUCCESS) return st;
    if ((st = lig_check_same_dtype(d_key, "d_key", query, "query")) != LIG_SUCCESS) return st;
    if (d_weights->dtype != weights->dtype && d_weights->dtype != LIG_FLOAT32)
        return lig_fail(LIG_ERR_PARAM_INVALID, "d_weights: expected dtype %s (like weights) or FLOAT32, got %s",
                        lig_dtype_name(weights->dtype), lig_dtype_name(d_weights->dtype));
    if ((st = lig_check_shape(d_query, "d_query", query->ndim, query->shape, "like query")) != LIG_SUCCESS) return st;
    if ((st = lig_check_shape(d_key, "d_key", key->ndim, key->shape, "like key")) != LIG_SUCCESS) return st;
    if ((st = lig_check_shape(d_weights, "d_weights", weights->ndim, weights->shape, "like weights")) != LIG_SUCCESS)
        return st;
    if ((st = check_entries_tensor(pr, softmax_out, "softmax_out")) != LIG_SUCCESS) return st;
    if ((st = lig_check_shape(softmax_out, "softmax_out", target->ndim, target->shape, "like attn_softmax_l1_norm")) !=
        LIG_SUCCESS)
        return st;
    return loss ? lig_check_loss_scalar(loss) : LIG_SUCCESS;
}

/* The entries axis must hold every batch's entries; then each valid row's visible prefix. */
static lig_status build_ranges(lig_dense_kl_grad_problem *pb, const lig_compressed_rule *rule) {
    lig_problem *pr = &pb->g.pr;
    int64_t longest = 0;
    for (int64_t b = 0; b < pr->B; b++)
        if (pr->bt.lk[b] > longest) longest = pr->bt.lk[b];
    if (longest > pb->width)
        return lig_fail(LIG_ERR_PARAM_INVALID,
                        "attn_softmax_l1_norm: expected W >= %lld (the longest batch's compressed entries), got W = %lld",
                        (long long)longest, (long long)pb->width);
    pr->K = longest;
    const int64_t rows = pr->N2 > 0 ? pr->units / pr->N2 : 0;
    pb->ranges.lo = malloc(sizeof(int64_t) * 2 * (size_t)(rows > 0 ? rows : 1));
    if (!pb->ranges.lo)
        return lig_fail(LIG_ERR_RUNTIME, "query: expected memory for %lld rows' visible entries, got none", (long long)rows);
    pb->ranges.hi = pb->ranges.lo + rows;
    for (int64_t b = 0, r = 0; b < pr->B; b++)
        for (int64_t t = 0; t < pr->bt.lq[b]; t++, r++) {
            pb->ranges.lo[r] = 0;
            pb->ranges.hi[r] = lig_compressed_rule_visible(rule, pr, b, t) - 1;
        }
    pr->ranges = &pb->ranges;
    return LIG_SUCCESS;
}

/* Resolves the lengths and the rule into pb (its views from the tensors). */
static lig_status build_problem(lig_dense_kl_grad_problem *pb, lig_problem pr, const lig_tensor *const *t,
                                const lig_tensor *lengths_q, const lig_tensor *lengths_k, const lig_tensor *residual_k,
                                int64_t mask_mode, int64_t ratio) {
    /* the lengths with no band and each batch's rule, read and checked as every compressed-key
     * operator reads them; the rule only narrows each row to its visible prefix (pb->ranges) */
    lig_compressed_rule rule;
    lig_status st = lig_problem_resolve_compressed(&pr, lengths_q, lengths_k, residual_k, mask_mode, ratio, &rule);
    if (st != LIG_SUCCESS) return st; /* pr freed; pb holds nothing yet */
    pb->g.pr = pr;
    st = build_ranges(pb, &rule);
    free(rule.residual);
    if (st != LIG_SUCCESS) return st;
    const lig_problem *p = &pb->g.pr;
    /* t: query, key, weights, target, lse, d_query, d_key, d_weights, softmax_out */
    pb->g.q = lig_problem_view(p, t[0], true, true);
    pb->g.k = lig_problem_view(p, t[1], true, true);
    pb->g.w = lig_problem_view(p, t[2], true, false);
    pb->target = lig_problem_view(p, t[3], true, true);
    pb->lse = lig_softmax_lse_view(p, t[4]);
    pb->g.dq = lig_problem_view(p, t[5], true, true);
    pb->g.dk = lig_problem_view(p, t[6], true, true);
    pb->g.dw = lig_problem_view(p, t[7], true, false);
    pb->softmax_out = lig_problem_view(p, t[8], true, true);
    pb->g.dy = (lig_view4){.dtype = LIG_FLOAT32, .esize = 4}; /* dI is computed, never read from a tensor */
    return LIG_SUCCESS;
}

lig_status lig_dense_indexer_kl_loss_grad_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights, const lig_tensor *attn_softmax_l1_norm,
    const lig_tensor *softmax_lse, const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key,
    const lig_tensor *cmp_residual_k, const char *layout, int64_t mask_mode, int64_t cmp_ratio, bool deterministic,
    const lig_tensor *d_query, const lig_tensor *d_key, const lig_tensor *d_weights, const lig_tensor *softmax_out,
    const lig_tensor *loss, uint64_t *workspace_size, lig_executor **executor) {
    const lig_argument list[] = {
        LIG_ARGUMENT(query, LIG_ARG_INPUT), LIG_ARGUMENT(key, LIG_ARG_INPUT), LIG_ARGUMENT(weights, LIG_ARG_INPUT),
        LIG_ARGUMENT(attn_softmax_l1_norm, LIG_ARG_INPUT), LIG_ARGUMENT(softmax_lse, LIG_ARG_INPUT),
        LIG_ARGUMENT(d_query, LIG_ARG_OUTPUT), LIG_ARGUMENT(d_key, LIG_ARG_OUTPUT), LIG_ARGUMENT(d_weights, LIG_ARG_OUTPUT),
        LIG_ARGUMENT(softmax_out, LIG_ARG_OUTPUT), LIG_ARGUMENT(loss, LIG_ARG_OPTIONAL_OUTPUT),
        LIG_ARGUMENT(actual_seq_lengths_query, LIG_ARG_HOST_LENGTHS),
        LIG_ARGUMENT(actual_seq_lengths_key, LIG_ARG_HOST_LENGTHS), LIG_ARGUMENT(cmp_residual_k, LIG_ARG_HOST_LENGTHS)};
    const lig_arguments args = LIG_ARGUMENTS_OF(list);
    lig_problem pr;
    lig_status st = lig_compressed_phase1_begin(&args, layout, workspace_size, executor, query, key, weights, &pr);
    if (st != LIG_SUCCESS) return st;
    if ((st = check_entries_tensor(&pr, attn_softmax_l1_norm, "attn_softmax_l1_norm")) != LIG_SUCCESS) return st;
    if ((st = lig_check_softmax_lse(&pr, softmax_lse)) != LIG_SUCCESS) return st;
    if ((st = check_outputs(&pr, query, key, weights, attn_softmax_l1_norm, d_query, d_key, d_weights, softmax_out,
                            loss)) != LIG_SUCCESS)
        return st;
    lig_placement placed;
    if ((st = lig_compressed_phase1_rule(&args, mask_mode, cmp_ratio, &placed)) != LIG_SUCCESS) return st;

    lig_dense_kl_grad_problem *pb = calloc(1, sizeof *pb);
    if (!pb) return lig_fail(LIG_ERR_RUNTIME, "executor: expected memory for a plan, got none");
    pb->width = attn_softmax_l1_norm->shape[attn_softmax_l1_norm->ndim - 1];
    pb->g.deterministic = deterministic;
    pb->g.dense = true;
    pb->loss = loss ? loss->data : NULL;
    const lig_tensor *const views[9] = {query, key, weights, attn_softmax_l1_norm, softmax_lse,
                                        d_query, d_key, d_weights, softmax_out};
    if ((st = build_problem(pb, pr, views, actual_seq_lengths_query, actual_seq_lengths_key, cmp_residual_k, mask_mode,
                            cmp_ratio)) != LIG_SUCCESS) {
        free_problem(pb); /* pr is pb's once resolved; before that pb holds nothing to free */
        return st;
    }
    return lig_executor_plan(LIG_OP_DENSE_INDEXER_KL_LOSS_GRAD, placed, pb, free_problem, workspace_size, executor);
}

lig_status lig_dense_indexer_kl_loss_grad(void *workspace, uint64_t workspace_size, lig_executor *executor,
                                          void *stream) {
    return lig_executor_run(executor, LIG_OP_DENSE_INDEXER_KL_LOSS_GRAD, workspace, workspace_size, stream);
}

/*
 * aclnnSparseLightningIndexerGradKLLoss over lig_sparse_indexer_grad_kl_loss with LIG_KL_TARGET_CANN:
 * CANN's kernel's loss and gradient (docs/aclnn.md), and its V2 with attention sinks over
 * lig_sparse_indexer_grad_kl_loss_v2_get_workspace_size. The tensors map one to one, the sequence
 * lengths arrive as aclIntArray (copied in phase 1, as CANN reads them then), the statistics are
 * CANN's softmaxMax / softmaxSum (no log-sum-exp form in CANN's signature). What the front end adds
 * is CANN's handle checks and the allocation bounds of every tensor.
 */
#include "../include/aclnnop/aclnn_sparse_lightning_indexer_grad_kl_loss.h"
#include "../include/aclnnop/aclnn_sparse_lightning_indexer_grad_kl_loss_v2.h"
#include "errmsg.h"
#include "executor.h"

/* Both versions' phase 1; `sinks` NULL plans V1 exactly (V1 reaches lig's V1 entry). */
static aclnnStatus plan_kl_loss(const char *api, bool v2, const aclTensor *query, const aclTensor *key,
                                const aclTensor *queryIndex, const aclTensor *keyIndex, const aclTensor *weights,
                                const aclTensor *sparseIndices, const aclTensor *softmaxMax,
                                const aclTensor *softmaxSum, const aclTensor *queryRope, const aclTensor *keyRope,
                                const aclIntArray *actualSeqLengthsQuery, const aclIntArray *actualSeqLengthsKey,
                                const aclTensor *sinks, double scaleValue, char *layout, int64_t sparseMode,
                                int64_t pre_tokens, int64_t next_tokens, bool deterministic,
                                const aclTensor *dQueryIndex, const aclTensor *dKeyIndex, const aclTensor *dWeights,
                                const aclTensor *loss, uint64_t *workspaceSize, aclOpExecutor **executor) {
    if (!layout) return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api, "layout: expected \"BSND\" or \"TND\", got nullptr");
    if (!workspaceSize || !executor)
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api, "%s: expected a pointer, got nullptr",
                       workspaceSize ? "executor" : "workspaceSize");
    if ((queryRope == NULL) != (keyRope == NULL))
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api,
                       "%s: expected a tensor, since %s is given (the rope parts come in pairs), got nullptr",
                       queryRope ? "keyRope" : "queryRope", queryRope ? "queryRope" : "keyRope");

    fe_args args = {0};
    lig_tensor *q = NULL, *k = NULL, *qi = NULL, *ki = NULL, *w = NULL, *idx = NULL, *smax = NULL, *ssum = NULL;
    lig_tensor *qr = NULL, *kr = NULL, *aq = NULL, *ak = NULL, *sk = NULL, *dqi = NULL, *dki = NULL, *dw = NULL;
    lig_tensor *ls_t = NULL;
    /* V2's header names the optional arguments ...Optional and the weights `weight`: messages follow it */
    const fe_arg_spec inputs[] = {
        {query, "query", false, &q},
        {key, "key", false, &k},
        {queryIndex, "queryIndex", false, &qi},
        {keyIndex, "keyIndex", false, &ki},
        {weights, v2 ? "weight" : "weights", false, &w},
        {sparseIndices, "sparseIndices", false, &idx},
        {softmaxMax, "softmaxMax", false, &smax},
        {softmaxSum, "softmaxSum", false, &ssum},
        {queryRope, v2 ? "queryRopeOptional" : "queryRope", true, &qr},
        {keyRope, v2 ? "keyRopeOptional" : "keyRope", true, &kr},
        {sinks, "sinksOptional", true, &sk},
    };
    const fe_arg_spec outputs[] = {
        {dQueryIndex, "dQueryIndex", false, &dqi}, {dKeyIndex, "dKeyIndex", false, &dki},
        {dWeights, v2 ? "dWeight" : "dWeights", false, &dw}, {loss, "loss", false, &ls_t},
    };
    const int n_inputs = (int)(sizeof inputs / sizeof inputs[0]) - (v2 ? 0 : 1);
    aclnnStatus st;
    if ((st = fe_args_bind_list(&args, inputs, n_inputs, api)) != ACLNN_SUCCESS ||
        (st = fe_args_bind_int_array(&args, actualSeqLengthsQuery,
                                     v2 ? "actualSeqLengthsQueryOptional" : "actualSeqLengthsQuery", api, &aq)) !=
            ACLNN_SUCCESS ||
        (st = fe_args_bind_int_array(&args, actualSeqLengthsKey,
                                     v2 ? "actualSeqLengthsKeyOptional" : "actualSeqLengthsKey", api, &ak)) !=
            ACLNN_SUCCESS ||
        (st = fe_args_bind_list(&args, outputs, (int)(sizeof outputs / sizeof outputs[0]), api)) != ACLNN_SUCCESS) {
        fe_args_release(&args);
        return st;
    }
    uint64_t ws = 0;
    lig_executor *lx = NULL;
    lig_status ls =
        v2 ? lig_sparse_indexer_grad_kl_loss_v2_get_workspace_size(
                 q, k, qi, ki, w, idx, smax, ssum, NULL, qr, kr, aq, ak, sk, scaleValue, layout, sparseMode,
                 pre_tokens, next_tokens, LIG_KL_TARGET_CANN, deterministic, dqi, dki, dw, ls_t, &ws, &lx)
           : lig_sparse_indexer_grad_kl_loss_get_workspace_size(q, k, qi, ki, w, idx, smax, ssum, NULL, qr, kr, aq, ak,
                                                               scaleValue, layout, sparseMode, pre_tokens,
                                                               next_tokens, LIG_KL_TARGET_CANN, deterministic, dqi,
                                                               dki, dw, ls_t, &ws, &lx);
    return fe_executor_plan(FE_OP_SPARSE_KL_LOSS, ls, lx, ws, &args, api, workspaceSize, executor);
}

aclnnStatus aclnnSparseLightningIndexerGradKLLossGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *queryIndex, const aclTensor *keyIndex,
    const aclTensor *weights, const aclTensor *sparseIndices, const aclTensor *softmaxMax, const aclTensor *softmaxSum,
    const aclTensor *queryRope, const aclTensor *keyRope, const aclIntArray *actualSeqLengthsQuery,
    const aclIntArray *actualSeqLengthsKey, double scaleValue, char *layout, int64_t sparseMode, int64_t pre_tokens,
    int64_t next_tokens, bool deterministic, const aclTensor *dQueryIndex, const aclTensor *dKeyIndex,
    const aclTensor *dWeights, const aclTensor *loss, uint64_t *workspaceSize, aclOpExecutor **executor) {
    return plan_kl_loss("aclnnSparseLightningIndexerGradKLLossGetWorkspaceSize", false, query, key, queryIndex,
                        keyIndex, weights, sparseIndices, softmaxMax, softmaxSum, queryRope, keyRope,
                        actualSeqLengthsQuery, actualSeqLengthsKey, NULL, scaleValue, layout, sparseMode, pre_tokens,
                        next_tokens, deterministic, dQueryIndex, dKeyIndex, dWeights, loss, workspaceSize, executor);
}

aclnnStatus aclnnSparseLightningIndexerGradKLLossV2GetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *queryIndex, const aclTensor *keyIndex,
    const aclTensor *weight, const aclTensor *sparseIndices, const aclTensor *softmaxMax, const aclTensor *softmaxSum,
    const aclTensor *queryRopeOptional, const aclTensor *keyRopeOptional,
    const aclIntArray *actualSeqLengthsQueryOptional, const aclIntArray *actualSeqLengthsKeyOptional,
    const aclTensor *sinksOptional, double scaleValue, char *layout, int64_t sparseMode, int64_t preTokens,
    int64_t nextTokens, bool deterministic, const aclTensor *dQueryIndex, const aclTensor *dKeyIndex,
    const aclTensor *dWeight, const aclTensor *loss, uint64_t *workspaceSize, aclOpExecutor **executor) {
    return plan_kl_loss("aclnnSparseLightningIndexerGradKLLossV2GetWorkspaceSize", true, query, key, queryIndex,
                        keyIndex, weight, sparseIndices, softmaxMax, softmaxSum, queryRopeOptional, keyRopeOptional,
                        actualSeqLengthsQueryOptional, actualSeqLengthsKeyOptional, sinksOptional, scaleValue, layout,
                        sparseMode, preTokens, nextTokens, deterministic, dQueryIndex, dKeyIndex, dWeight, loss,
                        workspaceSize, executor);
}

aclnnStatus aclnnSparseLightningIndexerGradKLLoss(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                  aclrtStream stream) {
    return fe_executor_run(FE_OP_SPARSE_KL_LOSS, workspace, workspaceSize, executor, stream,
                           "aclnnSparseLightningIndexerGradKLLoss");
}

/* The same executor kind as V1 (CANN's V1 and V2 both run its one SparseLightningIndexerGradKLLoss op). */
aclnnStatus aclnnSparseLightningIndexerGradKLLossV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                    const aclrtStream stream) {
    return fe_executor_run(FE_OP_SPARSE_KL_LOSS, workspace, workspaceSize, executor, stream,
                           "aclnnSparseLightningIndexerGradKLLossV2");
}

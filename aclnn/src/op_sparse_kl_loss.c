/*
 * aclnnSparseLightningIndexerGradKLLoss over lig_sparse_indexer_grad_kl_loss with LIG_KL_TARGET_CANN:
 * CANN's kernel's loss and gradient (docs/aclnn.md). The tensors map one to one, the sequence
 * lengths arrive as aclIntArray (copied in phase 1, as CANN reads them then), the statistics are
 * CANN's softmaxMax / softmaxSum (no log-sum-exp form in CANN's signature). What the front end adds
 * is CANN's handle checks and the allocation bounds of every tensor.
 */
#include "../include/aclnnop/aclnn_sparse_lightning_indexer_grad_kl_loss.h"
#include "errmsg.h"
#include "executor.h"

static const char *const API = "aclnnSparseLightningIndexerGradKLLossGetWorkspaceSize";

aclnnStatus aclnnSparseLightningIndexerGradKLLossGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *queryIndex, const aclTensor *keyIndex,
    const aclTensor *weights, const aclTensor *sparseIndices, const aclTensor *softmaxMax, const aclTensor *softmaxSum,
    const aclTensor *queryRope, const aclTensor *keyRope, const aclIntArray *actualSeqLengthsQuery,
    const aclIntArray *actualSeqLengthsKey, double scaleValue, char *layout, int64_t sparseMode, int64_t pre_tokens,
    int64_t next_tokens, bool deterministic, const aclTensor *dQueryIndex, const aclTensor *dKeyIndex,
    const aclTensor *dWeights, const aclTensor *loss, uint64_t *workspaceSize, aclOpExecutor **executor) {
    if (!layout) return fe_fail(ACLNN_ERR_PARAM_NULLPTR, API, "layout: expected \"BSND\" or \"TND\", got nullptr");
    if (!workspaceSize || !executor)
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, API, "%s: expected a pointer, got nullptr",
                       workspaceSize ? "executor" : "workspaceSize");
    if ((queryRope == NULL) != (keyRope == NULL))
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, API,
                       "%s: expected a tensor, since %s is given (the rope parts come in pairs), got nullptr",
                       queryRope ? "keyRope" : "queryRope", queryRope ? "queryRope" : "keyRope");

    fe_args args = {0};
    lig_tensor *q = NULL, *k = NULL, *qi = NULL, *ki = NULL, *w = NULL, *idx = NULL, *smax = NULL, *ssum = NULL;
    lig_tensor *qr = NULL, *kr = NULL, *aq = NULL, *ak = NULL, *dqi = NULL, *dki = NULL, *dw = NULL, *ls_t = NULL;
    const fe_arg_spec inputs[] = {
        {query, "query", false, &q},           {key, "key", false, &k},
        {queryIndex, "queryIndex", false, &qi}, {keyIndex, "keyIndex", false, &ki},
        {weights, "weights", false, &w},       {sparseIndices, "sparseIndices", false, &idx},
        {softmaxMax, "softmaxMax", false, &smax}, {softmaxSum, "softmaxSum", false, &ssum},
        {queryRope, "queryRope", true, &qr},   {keyRope, "keyRope", true, &kr},
    };
    const fe_arg_spec outputs[] = {
        {dQueryIndex, "dQueryIndex", false, &dqi}, {dKeyIndex, "dKeyIndex", false, &dki},
        {dWeights, "dWeights", false, &dw},        {loss, "loss", false, &ls_t},
    };
    aclnnStatus st;
    if ((st = fe_args_bind_list(&args, inputs, (int)(sizeof inputs / sizeof inputs[0]), API)) != ACLNN_SUCCESS ||
        (st = fe_args_bind_int_array(&args, actualSeqLengthsQuery, "actualSeqLengthsQuery", API, &aq)) !=
            ACLNN_SUCCESS ||
        (st = fe_args_bind_int_array(&args, actualSeqLengthsKey, "actualSeqLengthsKey", API, &ak)) != ACLNN_SUCCESS ||
        (st = fe_args_bind_list(&args, outputs, (int)(sizeof outputs / sizeof outputs[0]), API)) != ACLNN_SUCCESS) {
        fe_args_release(&args);
        return st;
    }
    uint64_t ws = 0;
    lig_executor *lx = NULL;
    lig_status ls = lig_sparse_indexer_grad_kl_loss_get_workspace_size(
        q, k, qi, ki, w, idx, smax, ssum, NULL, qr, kr, aq, ak, scaleValue, layout, sparseMode, pre_tokens,
        next_tokens, LIG_KL_TARGET_CANN, deterministic, dqi, dki, dw, ls_t, &ws, &lx);
    return fe_executor_plan(FE_OP_SPARSE_KL_LOSS, ls, lx, ws, &args, API, workspaceSize, executor);
}

aclnnStatus aclnnSparseLightningIndexerGradKLLoss(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                  aclrtStream stream) {
    return fe_executor_run(FE_OP_SPARSE_KL_LOSS, workspace, workspaceSize, executor, stream,
                           "aclnnSparseLightningIndexerGradKLLoss");
}

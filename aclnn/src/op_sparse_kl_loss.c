/*
 * aclnnSparseLightningIndexerGradKLLoss over lig_sparse_indexer_kl_loss with LIG_KL_TARGET_CANN:
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
    lig_tensor *q, *k, *qi, *ki, *w, *idx, *smax, *ssum, *qr, *kr, *aq, *ak, *dqi, *dki, *dw, *ls_t;
    aclnnStatus st;
    if ((st = fe_args_bind(&args, query, "query", API, false, &q)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, key, "key", API, false, &k)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, queryIndex, "queryIndex", API, false, &qi)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, keyIndex, "keyIndex", API, false, &ki)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, weights, "weights", API, false, &w)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, sparseIndices, "sparseIndices", API, false, &idx)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, softmaxMax, "softmaxMax", API, false, &smax)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, softmaxSum, "softmaxSum", API, false, &ssum)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, queryRope, "queryRope", API, true, &qr)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, keyRope, "keyRope", API, true, &kr)) != ACLNN_SUCCESS ||
        (st = fe_args_bind_int_array(&args, actualSeqLengthsQuery, "actualSeqLengthsQuery", API, &aq)) !=
            ACLNN_SUCCESS ||
        (st = fe_args_bind_int_array(&args, actualSeqLengthsKey, "actualSeqLengthsKey", API, &ak)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, dQueryIndex, "dQueryIndex", API, false, &dqi)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, dKeyIndex, "dKeyIndex", API, false, &dki)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, dWeights, "dWeights", API, false, &dw)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, loss, "loss", API, false, &ls_t)) != ACLNN_SUCCESS) {
        fe_args_release(&args);
        return st;
    }
    uint64_t ws = 0;
    lig_executor *lx = NULL;
    lig_status ls = lig_sparse_indexer_kl_loss_get_workspace_size(
        q, k, qi, ki, w, idx, smax, ssum, NULL, qr, kr, aq, ak, scaleValue, layout, sparseMode, pre_tokens,
        next_tokens, LIG_KL_TARGET_CANN, deterministic, dqi, dki, dw, ls_t, &ws, &lx);
    return fe_executor_plan(FE_OP_SPARSE_KL_LOSS, ls, lx, ws, &args, API, workspaceSize, executor);
}

aclnnStatus aclnnSparseLightningIndexerGradKLLoss(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                  aclrtStream stream) {
    return fe_executor_run(FE_OP_SPARSE_KL_LOSS, workspace, workspaceSize, executor, stream,
                           "aclnnSparseLightningIndexerGradKLLoss");
}

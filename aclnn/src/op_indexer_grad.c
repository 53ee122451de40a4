/*
 * aclnnLightningIndexerGrad over lig_indexer_grad. The arguments map one to one; what the front
 * end adds is CANN's handle checks, the allocation bounds of every tensor, and the message for
 * the dy shape CANN's documentation shows.
 */
#include <string.h>

#include "../include/aclnnop/aclnn_lightning_indexer_grad.h"
#include "errmsg.h"
#include "executor.h"
#include "registry.h"
#include "tensor.h"

/* CANN's documentation gives dy the shape [B,S1,N1,D] of query; the kernels read one gradient
 * per selected slot, shaped like sparseIndices. Say so, naming both shapes. */
static aclnnStatus check_dy_shape(const aclTensor *query, const aclTensor *dy, const aclTensor *idx,
                                  const char *api) {
    if (!fe_reg_has(query, FE_KIND_TENSOR) || !fe_reg_has(dy, FE_KIND_TENSOR) || !fe_reg_has(idx, FE_KIND_TENSOR))
        return ACLNN_SUCCESS; /* binding reports unknown handles */
    bool like_query = dy->ndim == query->ndim && !memcmp(dy->shape, query->shape, (size_t)dy->ndim * sizeof(int64_t));
    bool like_idx = dy->ndim == idx->ndim && !memcmp(dy->shape, idx->shape, (size_t)dy->ndim * sizeof(int64_t));
    if (!like_query || like_idx) return ACLNN_SUCCESS;
    char got[200], want[200];
    lig_format_shape(got, sizeof got, dy->ndim, dy->shape);
    lig_format_shape(want, sizeof want, idx->ndim, idx->shape);
    bool tnd = query->ndim == 3;
    return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                   "dy: got shape %s, the %s shape of query that CANN's documentation shows for dy; the operator "
                   "takes one gradient per selected slot, so dy must be shaped like sparseIndices: %s (%s, or "
                   "%s with the N2 axis)",
                   got, tnd ? "[T1,N1,D]" : "[B,S1,N1,D]", want, tnd ? "[T1,K]" : "[B,S1,K]",
                   tnd ? "[T1,N2,K]" : "[B,S1,N2,K]");
}

aclnnStatus aclnnLightningIndexerGradGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *dy, const aclTensor *sparseIndices,
    const aclTensor *weights, const aclTensor *actualSeqQLenOptional, const aclTensor *actualSeqKvLenOptional,
    int64_t headNum, char *inputLayout, int64_t sparseMode, int64_t preTokens, int64_t nextTokens,
    bool determinstic, const aclTensor *dqOut, const aclTensor *dkOut, const aclTensor *dweightsOut,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *api = "aclnnLightningIndexerGradGetWorkspaceSize";
    if (!inputLayout) return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api, "inputLayout: expected \"BSND\" or \"TND\", got nullptr");
    if (!workspaceSize || !executor)
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api, "%s: expected a pointer, got nullptr",
                       workspaceSize ? "executor" : "workspaceSize");
    if (query && dy && sparseIndices) {
        aclnnStatus st = check_dy_shape(query, dy, sparseIndices, api);
        if (st != ACLNN_SUCCESS) return st;
    }

    fe_args args = {0};
    lig_tensor *q, *k, *g, *idx, *w, *aq, *ak, *dq, *dk, *dw;
    aclnnStatus st;
    if ((st = fe_args_bind(&args, query, "query", api, false, &q)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, key, "key", api, false, &k)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, dy, "dy", api, false, &g)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, sparseIndices, "sparseIndices", api, false, &idx)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, weights, "weights", api, false, &w)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, actualSeqQLenOptional, "actualSeqQLenOptional", api, true, &aq)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, actualSeqKvLenOptional, "actualSeqKvLenOptional", api, true, &ak)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, dqOut, "dqOut", api, false, &dq)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, dkOut, "dkOut", api, false, &dk)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, dweightsOut, "dweightsOut", api, false, &dw)) != ACLNN_SUCCESS) {
        fe_args_release(&args);
        return st;
    }
    uint64_t ws = 0;
    lig_executor *lx = NULL;
    lig_status ls = lig_indexer_grad_get_workspace_size(q, k, g, idx, w, aq, ak, headNum, inputLayout, sparseMode,
                                                        preTokens, nextTokens, determinstic, dq, dk, dw, &ws, &lx);
    return fe_executor_plan(FE_OP_INDEXER_GRAD, ls, lx, ws, &args, api, workspaceSize, executor);
}

aclnnStatus aclnnLightningIndexerGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                      aclrtStream stream) {
    return fe_executor_run(FE_OP_INDEXER_GRAD, workspace, workspaceSize, executor, stream, "aclnnLightningIndexerGrad");
}

/*
 * aclnnQuantLightningIndexer over lig_quant_indexer, whose arguments are CANN's in CANN's order
 * (docs/contract.md 2.4): the tensors map one to one, the lengths arrive as aclTensor (as CANN
 * documents them) and are read by lig in phase 1. lig takes every dtype mix CANN documents, so
 * nothing is staged. What the front end adds is CANN's handle checks, the layouts, a required
 * queryDequantScale (CANN's argument has no "Optional"; lig's C call accepts NULL for a scale
 * folded into the weights), the allocation bounds of every tensor, and no values output.
 */
#include "../include/aclnnop/aclnn_quant_lightning_indexer.h"
#include "errmsg.h"
#include "executor.h"
#include "forward_args.h"

static const char *const API = "aclnnQuantLightningIndexerGetWorkspaceSize";

aclnnStatus aclnnQuantLightningIndexerGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *weights, const aclTensor *queryDequantScale,
    const aclTensor *keyDequantScale, const aclTensor *actualSeqLengthsQueryOptional,
    const aclTensor *actualSeqLengthsKeyOptional, const aclTensor *blockTableOptional, int64_t queryQuantMode,
    int64_t keyQuantMode, char *layoutQueryOptional, char *layoutKeyOptional, int64_t sparseCount, int64_t sparseMode,
    int64_t preTokens, int64_t nextTokens, const aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *lq = layoutQueryOptional, *lk = layoutKeyOptional;
    bool paged;
    aclnnStatus st = fe_check_forward_args(API, workspaceSize, executor, &lq, &lk, blockTableOptional,
                                           actualSeqLengthsKeyOptional, &paged);
    if (st != ACLNN_SUCCESS) return st;
    if (!queryDequantScale)
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, API,
                       "queryDequantScale: expected a [B,S1,N1] or [T1,N1] tensor (a required argument; pass ones "
                       "when the query's scale is folded into the weights), got nullptr");

    fe_args args = {0};
    lig_tensor *q = NULL, *k = NULL, *w = NULL, *sq = NULL, *sk = NULL, *aq = NULL, *ak = NULL, *bt = NULL, *idx = NULL;
    const fe_arg_spec spec[] = {
        {query, "query", false, &q},
        {key, "key", false, &k},
        {weights, "weights", false, &w},
        {queryDequantScale, "queryDequantScale", false, &sq},
        {keyDequantScale, "keyDequantScale", false, &sk},
        {actualSeqLengthsQueryOptional, "actualSeqLengthsQueryOptional", true, &aq},
        {actualSeqLengthsKeyOptional, "actualSeqLengthsKeyOptional", true, &ak},
        {blockTableOptional, "blockTableOptional", true, &bt}, /* present exactly with PA_BSND (checked above) */
        {out, "out", false, &idx},
    };
    if ((st = fe_args_bind_list(&args, spec, (int)(sizeof spec / sizeof spec[0]), API)) != ACLNN_SUCCESS) {
        fe_args_release(&args);
        return st;
    }
    uint64_t ws = 0;
    lig_executor *lx = NULL;
    lig_status ls = lig_quant_indexer_get_workspace_size(q, k, w, sq, sk, aq, ak, bt, queryQuantMode, keyQuantMode, lq,
                                                         lk, sparseCount, sparseMode, preTokens, nextTokens, idx, NULL,
                                                         &ws, &lx);
    return fe_executor_plan(FE_OP_QUANT_INDEXER, ls, lx, ws, &args, API, workspaceSize, executor);
}

aclnnStatus aclnnQuantLightningIndexer(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                       const aclrtStream stream) {
    return fe_executor_run(FE_OP_QUANT_INDEXER, workspace, workspaceSize, executor, stream,
                           "aclnnQuantLightningIndexer");
}

/*
 * aclnnLightningIndexer over lig_indexer (layoutKeyOptional "BSND" / "TND") and, for a paged key
 * cache ("PA_BSND"), over lig_indexer_paged_get_workspace_size when this lig has it
 * (LIG_ACLNN_HAVE_PAGED, found at configure time).
 */
#include "../include/aclnnop/aclnn_lightning_indexer.h"
#include "dtype.h"
#include "errmsg.h"
#include "executor.h"
#include "forward_args.h"
#include "tensor.h"

static const char *const API = "aclnnLightningIndexerGetWorkspaceSize";

/* CANN's A2/A3 kernels take FLOAT32 weights with FLOAT16 / BFLOAT16 query and key, where lig wants
 * one dtype: widen query and key to FLOAT32 (exact) and let lig score in FLOAT32; a half-precision
 * sparseValuesOut gets the scores rounded once (staging.h). Other mixes are left for lig to refuse. */
static aclnnStatus widen_for_float_weights(fe_args *args, const aclTensor *query, const aclTensor *key,
                                           const aclTensor *weights, const aclTensor *values, lig_tensor **q,
                                           lig_tensor **k, lig_tensor **val) {
    bool half = query->dtype == ACL_FLOAT16 || query->dtype == ACL_BF16;
    if (weights->dtype != ACL_FLOAT || !half || key->dtype != query->dtype) return ACLNN_SUCCESS;
    if (values && values->dtype != query->dtype && values->dtype != ACL_FLOAT)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, API, "sparseValuesOut: expected dtype %s (like query) or ACL_FLOAT, got %s",
                       fe_dtype_name(query->dtype), fe_dtype_name(values->dtype));
    aclnnStatus st;
    if ((st = fe_args_stage(args, query, "query", API, false, q)) != ACLNN_SUCCESS ||
        (st = fe_args_stage(args, key, "key", API, false, k)) != ACLNN_SUCCESS)
        return st;
    if (values && values->dtype == query->dtype) return fe_args_stage(args, values, "sparseValuesOut", API, true, val);
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnLightningIndexerGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *weights,
    const aclTensor *actualSeqLengthsQueryOptional, const aclTensor *actualSeqLengthsKeyOptional,
    const aclTensor *blockTableOptional, char *layoutQueryOptional, char *layoutKeyOptional, int64_t sparseCount,
    int64_t sparseMode, int64_t preTokens, int64_t nextTokens, bool returnValues, const aclTensor *sparseIndicesOut,
    const aclTensor *sparseValuesOut, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *lq = layoutQueryOptional, *lk = layoutKeyOptional;
    bool paged;
    aclnnStatus st = fe_check_forward_args(API, workspaceSize, executor, &lq, &lk, blockTableOptional,
                                           actualSeqLengthsKeyOptional, &paged);
    if (st != ACLNN_SUCCESS) return st;
#ifndef LIG_ACLNN_HAVE_PAGED
    if (paged)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, API,
                       "layoutKeyOptional: \"PA_BSND\" (a paged key cache) needs lig_indexer_paged_get_workspace_size, "
                       "which the lig %s this front end was built against does not have; pass the key as a "
                       "contiguous [B,S2,N2,D] tensor with layoutKeyOptional \"%s\"",
                       lig_version(), lq);
#endif
    if (returnValues && !sparseValuesOut)
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, API,
                       "sparseValuesOut: expected a tensor when returnValues is true, got nullptr");

    fe_args args = {0};
    lig_tensor *q, *k, *w, *aq, *ak, *bt = NULL, *idx, *val = NULL;
    if ((st = fe_args_bind(&args, query, "query", API, false, &q)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, key, "key", API, false, &k)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, weights, "weights", API, false, &w)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, actualSeqLengthsQueryOptional, "actualSeqLengthsQueryOptional", API, true, &aq)) !=
            ACLNN_SUCCESS ||
        (st = fe_args_bind(&args, actualSeqLengthsKeyOptional, "actualSeqLengthsKeyOptional", API, true, &ak)) !=
            ACLNN_SUCCESS ||
        (paged && (st = fe_args_bind(&args, blockTableOptional, "blockTableOptional", API, false, &bt)) !=
                      ACLNN_SUCCESS) ||
        (st = fe_args_bind(&args, sparseIndicesOut, "sparseIndicesOut", API, false, &idx)) != ACLNN_SUCCESS ||
        (returnValues && (st = fe_args_bind(&args, sparseValuesOut, "sparseValuesOut", API, false, &val)) !=
                             ACLNN_SUCCESS)) {
        fe_args_release(&args);
        return st;
    }
    if ((st = widen_for_float_weights(&args, query, key, weights, returnValues ? sparseValuesOut : NULL, &q, &k,
                                      &val)) != ACLNN_SUCCESS) {
        fe_args_release(&args);
        return st;
    }
    uint64_t ws = 0;
    lig_executor *lx = NULL;
#ifdef LIG_ACLNN_HAVE_PAGED
    lig_status ls = paged ? lig_indexer_paged_get_workspace_size(q, k, bt, w, aq, ak, lq, sparseCount, sparseMode,
                                                                 preTokens, nextTokens, idx, val, &ws, &lx)
                          : lig_indexer_get_workspace_size(q, k, w, aq, ak, lq, sparseCount, sparseMode, preTokens,
                                                           nextTokens, idx, val, &ws, &lx);
#else
    (void)bt; /* PA_BSND was refused above */
    lig_status ls = lig_indexer_get_workspace_size(q, k, w, aq, ak, lq, sparseCount, sparseMode, preTokens,
                                                   nextTokens, idx, val, &ws, &lx);
#endif
    return fe_executor_plan(FE_OP_INDEXER, ls, lx, ws, &args, API, workspaceSize, executor);
}

aclnnStatus aclnnLightningIndexer(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                  const aclrtStream stream) {
    return fe_executor_run(FE_OP_INDEXER, workspace, workspaceSize, executor, stream, "aclnnLightningIndexer");
}

/*
 * aclnnQuantLightningIndexerV2 over lig_quant_indexer with a paged key ("PA_BSND"), one query row
 * per batch with its visible compressed entries as its key length (compressed_rows.h). The codes
 * and scales are read in place; nothing is staged.
 */
#include "../include/aclnnop/aclnn_quant_lightning_indexer_v2.h"

#include "compressed_rows.h"
#include "dtype.h"
#include "errmsg.h"
#include "executor.h"

static const char *const API = "aclnnQuantLightningIndexerV2GetWorkspaceSize";

/* quantMode against what lig's C forward computes, and the codes' dtype it implies. */
static aclnnStatus check_quant_mode(int64_t quantMode, const aclTensor *query, const aclTensor *key) {
    switch (quantMode) {
    case 1:
    case 2: break;
    case 3:
        return fe_fail(ACLNN_ERR_PARAM_INVALID, API,
                       "quantMode: 3 (MXFP8: FLOAT8_E4M3FN codes with a FLOAT8_E8M0 scale per 32 values) is not "
                       "computed by lig; use 1 (FLOAT8_E4M3FN with per-token-head scales) or 2 (INT8)");
    case 4:
        return fe_fail(ACLNN_ERR_PARAM_INVALID, API,
                       "quantMode: 4 (HiFloat8) is not computed by lig (it has no HiFloat8 decoder); use 1 "
                       "(FLOAT8_E4M3FN) or 2 (INT8)");
    case 5:
        return fe_fail(ACLNN_ERR_PARAM_INVALID, API,
                       "quantMode: 5 (MXFP4) is computed by lig's C forward (LIG_FLOAT4_E2M1X2 with e8m0 scales), "
                       "but this front end does not yet take ACL_FLOAT4_E2M1 / ACL_FLOAT8_E8M0 tensors; call "
                       "lig_quant_indexer_get_workspace_size, or use quantMode 1 or 2");
    default:
        return fe_fail(ACLNN_ERR_PARAM_INVALID, API,
                       "quantMode: expected 1 (FLOAT8_E4M3FN) or 2 (INT8) (CANN also names 3 MXFP8, 4 HiFloat8, "
                       "5 MXFP4), got %lld",
                       (long long)quantMode);
    }
    const aclDataType want = quantMode == 1 ? ACL_FLOAT8_E4M3FN : ACL_INT8;
    if (query && query->dtype != want)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, API, "query: expected dtype %s with quantMode %lld, got %s",
                       fe_dtype_name(want), (long long)quantMode, fe_dtype_name(query->dtype));
    if (key && key->dtype != want)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, API, "key: expected dtype %s with quantMode %lld, got %s",
                       fe_dtype_name(want), (long long)quantMode, fe_dtype_name(key->dtype));
    return ACLNN_SUCCESS;
}

typedef struct quant_tensors {
    const aclTensor *weights, *sq, *sk, *offset, *indices, *values;
} quant_tensors;

static aclnnStatus plan(const fe_v2_args *a, const quant_tensors *t, int64_t topk, int64_t returnValue, fe_args *args,
                        uint64_t *ws, lig_executor **lx) {
    fe_v2_rows rows;
    aclnnStatus st = fe_v2_rows_plan(a, args, &rows);
    if (st != ACLNN_SUCCESS) return st;
    lig_tensor *q, *k, *w, *sq, *sk, *idx, *val = NULL, *lengths, *table;
    const fe_arg_spec spec[] = {
        {a->query, "query", false, &q},
        {a->key, "key", false, &k},
        {t->weights, "weights", false, &w},
        {t->sq, "queryDequantScale", false, &sq},
        {t->sk, "keyDequantScale", false, &sk},
        {t->indices, "sparseIndicesOut", false, &idx},
    };
    if ((st = fe_args_bind_list(args, spec, (int)(sizeof spec / sizeof spec[0]), API)) != ACLNN_SUCCESS ||
        (returnValue && (st = fe_args_bind(args, t->values, "sparseValuesOut", API, false, &val)) != ACLNN_SUCCESS))
        return st;
    fe_view qv = fe_view_of(a->query, NULL), kv = fe_view_of(a->key, NULL), wv = fe_view_of(t->weights, NULL),
            sqv = fe_view_of(t->sq, NULL), skv = fe_view_of(t->sk, NULL), iv = fe_view_of(t->indices, NULL);
    fe_v2_cache_view(&rows, &kv);
    fe_v2_cache_view(&rows, &skv);
    if ((st = fe_v2_row_view(&rows, "query", API, &qv)) != ACLNN_SUCCESS ||
        (st = fe_v2_rebind(args, &q, &qv, "query", API)) != ACLNN_SUCCESS ||
        (st = fe_v2_rebind(args, &k, &kv, "key", API)) != ACLNN_SUCCESS ||
        (st = fe_v2_row_view(&rows, "weights", API, &wv)) != ACLNN_SUCCESS ||
        (st = fe_v2_rebind(args, &w, &wv, "weights", API)) != ACLNN_SUCCESS ||
        (st = fe_v2_row_view(&rows, "queryDequantScale", API, &sqv)) != ACLNN_SUCCESS ||
        (st = fe_v2_rebind(args, &sq, &sqv, "queryDequantScale", API)) != ACLNN_SUCCESS ||
        (st = fe_v2_rebind(args, &sk, &skv, "keyDequantScale", API)) != ACLNN_SUCCESS ||
        (st = fe_v2_row_view(&rows, "sparseIndicesOut", API, &iv)) != ACLNN_SUCCESS ||
        (st = fe_v2_rebind(args, &idx, &iv, "sparseIndicesOut", API)) != ACLNN_SUCCESS)
        return st;
    if (returnValue) {
        fe_view vv = fe_view_of(t->values, NULL);
        if ((st = fe_v2_row_view(&rows, "sparseValuesOut", API, &vv)) != ACLNN_SUCCESS ||
            (st = fe_v2_rebind(args, &val, &vv, "sparseValuesOut", API)) != ACLNN_SUCCESS)
            return st;
    }
    const aclTensor *fill = !returnValue && t->values && t->values->numel > 0 ? t->values : NULL;
    if ((st = fe_v2_row_tensors(&rows, args, API, &lengths, &table)) != ACLNN_SUCCESS ||
        (st = fe_v2_post(&rows, args, API, t->indices, t->offset, fill)) != ACLNN_SUCCESS)
        return st;
    lig_status ls = lig_quant_indexer_get_workspace_size(q, k, w, sq, sk, NULL, lengths, table, 0, 0, "BSND",
                                                         "PA_BSND", topk, 0, INT64_MAX, INT64_MAX, idx, val, ws, lx);
    return ls == LIG_SUCCESS ? ACLNN_SUCCESS : fe_fail_lig(ls, API);
}

aclnnStatus aclnnQuantLightningIndexerV2GetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *weights, const aclTensor *queryDequantScale,
    const aclTensor *keyDequantScale, const aclTensor *cuSeqLensQOptional, const aclTensor *cuSeqLensKOptional,
    const aclTensor *sequsedQOptional, const aclTensor *sequsedKOptional, const aclTensor *cmpResidualKOptional,
    const aclTensor *blockTableOptional, const aclTensor *outputIdxOffsetOptional, const aclTensor *metadataOptional,
    int64_t topk, int64_t quantMode, int64_t maxSeqlenQOptional, char *layoutQOptional, char *layoutKOptional,
    int64_t maskModeOptional, int64_t cmpRatioOptional, int64_t returnValueOptional, const aclTensor *sparseIndicesOut,
    const aclTensor *sparseValuesOut, uint64_t *workspaceSize, aclOpExecutor **executor) {
    (void)maxSeqlenQOptional, (void)metadataOptional; /* as for aclnnLightningIndexerV2: not read */
    if (!workspaceSize || !executor)
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, API, "%s: expected a pointer, got nullptr",
                       workspaceSize ? "executor" : "workspaceSize");
    aclnnStatus st = check_quant_mode(quantMode, query, key);
    if (st != ACLNN_SUCCESS) return st;
    if (returnValueOptional != 0 && returnValueOptional != 1)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, API, "returnValueOptional: expected 0 or 1, got %lld",
                       (long long)returnValueOptional);
    const struct {
        const aclTensor *t;
        const char *name;
    } required[] = {{weights, "weights"},
                    {queryDequantScale, "queryDequantScale"},
                    {keyDequantScale, "keyDequantScale"},
                    {sparseIndicesOut, "sparseIndicesOut"},
                    {returnValueOptional ? sparseValuesOut : weights, "sparseValuesOut"}};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!required[i].t)
            return fe_fail(ACLNN_ERR_PARAM_NULLPTR, API, "%s: expected a tensor%s, got nullptr", required[i].name,
                           i == 4 ? " when returnValueOptional is 1" : "");
    const fe_v2_args a = {.api = API,
                          .query = query,
                          .key = key,
                          .blockTable = blockTableOptional,
                          .cuSeqlensQ = cuSeqLensQOptional,
                          .cuSeqlensK = cuSeqLensKOptional,
                          .sequsedQ = sequsedQOptional,
                          .sequsedK = sequsedKOptional,
                          .cmpResidualK = cmpResidualKOptional,
                          .cuQName = "cuSeqLensQOptional",
                          .cuKName = "cuSeqLensKOptional",
                          .layoutQ = layoutQOptional ? layoutQOptional : "BSND",
                          .layoutK = layoutKOptional ? layoutKOptional : "BSND",
                          .pagedLayout = "PA_BSND",
                          .maskMode = maskModeOptional,
                          .cmpRatio = cmpRatioOptional};
    const quant_tensors t = {weights, queryDequantScale, keyDequantScale, outputIdxOffsetOptional, sparseIndicesOut,
                             sparseValuesOut};
    fe_args args = {0};
    uint64_t ws = 0;
    lig_executor *lx = NULL;
    if ((st = plan(&a, &t, topk, returnValueOptional, &args, &ws, &lx)) != ACLNN_SUCCESS) {
        fe_args_release(&args);
        return st;
    }
    return fe_executor_plan(FE_OP_QUANT_INDEXER_V2, LIG_SUCCESS, lx, ws, &args, API, workspaceSize, executor);
}

aclnnStatus aclnnQuantLightningIndexerV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                         const aclrtStream stream) {
    return fe_executor_run(FE_OP_QUANT_INDEXER_V2, workspace, workspaceSize, executor, stream,
                           "aclnnQuantLightningIndexerV2");
}

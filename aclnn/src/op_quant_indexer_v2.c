/*
 * aclnnQuantLightningIndexerV2 over lig_quant_indexer with a paged key ("PA_BSND"), one query row
 * per batch with its visible compressed entries as its key length (compressed_rows.h). The codes
 * and scales are read in place; nothing is staged. quantMode 5 (MXFP4) is lig's FLOAT4_E2M1X2 form:
 * ACL_FLOAT4_E2M1 codes viewed two a byte, the (.., D/64, 2) e8m0 scales as UINT8 (.., D/32).
 */
#include "../include/aclnnop/aclnn_quant_lightning_indexer_v2.h"

#include "compressed_rows.h"
#include "dtype.h"
#include "errmsg.h"
#include "executor.h"

static const char *const API = "aclnnQuantLightningIndexerV2GetWorkspaceSize";

/* quantMode against what lig's C forward computes, and the codes' and scales' dtypes it implies. */
static aclnnStatus check_quant_mode(int64_t quantMode, const aclTensor *query, const aclTensor *key,
                                    const aclTensor *sq, const aclTensor *sk) {
    switch (quantMode) {
    case 1:
    case 2:
    case 5: break;
    case 3:
        return fe_fail(ACLNN_ERR_PARAM_INVALID, API,
                       "quantMode: 3 (MXFP8: FLOAT8_E4M3FN codes with a FLOAT8_E8M0 scale per 32 values) is not "
                       "computed by lig; use 1 (FLOAT8_E4M3FN with per-token-head scales), 2 (INT8) or 5 (MXFP4)");
    case 4:
        return fe_fail(ACLNN_ERR_PARAM_INVALID, API,
                       "quantMode: 4 (HiFloat8) is not computed by lig (it has no HiFloat8 decoder); use 1 "
                       "(FLOAT8_E4M3FN), 2 (INT8) or 5 (MXFP4)");
    default:
        return fe_fail(ACLNN_ERR_PARAM_INVALID, API,
                       "quantMode: expected 1 (FLOAT8_E4M3FN), 2 (INT8) or 5 (MXFP4) (CANN also names 3 MXFP8 and "
                       "4 HiFloat8), got %lld",
                       (long long)quantMode);
    }
    const aclDataType want = quantMode == 1 ? ACL_FLOAT8_E4M3FN : quantMode == 2 ? ACL_INT8 : ACL_FLOAT4_E2M1;
    const struct {
        const aclTensor *t;
        const char *name;
    } codes[] = {{query, "query"}, {key, "key"}};
    for (int i = 0; i < 2; i++)
        if (codes[i].t && codes[i].t->dtype != want)
            return fe_fail(ACLNN_ERR_PARAM_INVALID, API, "%s: expected dtype %s with quantMode %lld, got %s",
                           codes[i].name, fe_dtype_name(want), (long long)quantMode, fe_dtype_name(codes[i].t->dtype));
    /* MX block scales and per-token scales are read differently: a mix-up is refused by name */
    const struct {
        const aclTensor *t;
        const char *name;
    } scales[] = {{sq, "queryDequantScale"}, {sk, "keyDequantScale"}};
    for (int i = 0; i < 2; i++)
        if (scales[i].t && (scales[i].t->dtype == ACL_FLOAT8_E8M0) != (quantMode == 5))
            return fe_fail(ACLNN_ERR_PARAM_INVALID, API, "%s: expected %s with quantMode %lld, got %s",
                           scales[i].name, quantMode == 5 ? "dtype ACL_FLOAT8_E8M0" : "ACL_FLOAT or ACL_FLOAT16",
                           (long long)quantMode, fe_dtype_name(scales[i].t->dtype));
    return ACLNN_SUCCESS;
}

/* CANN's MX scales are (.., D/64, 2) FLOAT8_E8M0, "each scale covering 32 consecutive values of D":
 * with each pair's two bytes adjacent they are the bytes of lig's UINT8 (.., D/32). */
static aclnnStatus merge_scale_pairs(fe_view *v, const char *name) {
    const int64_t n = v->ndim;
    if (n < 2 || v->shape[n - 1] != 2 || v->strides[n - 1] != 1 || (v->shape[n - 2] > 1 && v->strides[n - 2] != 2))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, API,
                       "%s: expected MX scales shaped (.., D/64, 2) with the last two axes contiguous, got %lld "
                       "dimensions, last extent %lld",
                       name, (long long)n, (long long)(n ? v->shape[n - 1] : 0));
    v->shape[n - 2] *= 2;
    v->strides[n - 2] = 1;
    v->ndim = n - 1;
    return ACLNN_SUCCESS;
}

typedef struct quant_tensors {
    const aclTensor *weights, *sq, *sk, *offset, *indices, *values;
} quant_tensors;

static aclnnStatus plan(const fe_v2_args *a, const quant_tensors *t, int64_t topk, int64_t returnValue, bool mx,
                        fe_args *args, uint64_t *ws, lig_executor **lx) {
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
    if (mx && ((st = merge_scale_pairs(&sqv, "queryDequantScale")) != ACLNN_SUCCESS ||
               (st = merge_scale_pairs(&skv, "keyDequantScale")) != ACLNN_SUCCESS))
        return st;
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

aclnnStatus aclnnQuantLightningIndexerV2GetWorkspaceSize(const aclTensor *query, const aclTensor *key,
                                                         const aclTensor *weights, const aclTensor *queryDequantScale,
                                                         const aclTensor *keyDequantScale,
                                                         const aclTensor *cuSeqLensQOptional,
                                                         const aclTensor *cuSeqLensKOptional,
                                                         const aclTensor *sequsedQOptional,
                                                         const aclTensor *sequsedKOptional,
                                                         const aclTensor *cmpResidualKOptional,
                                                         const aclTensor *blockTableOptional,
                                                         const aclTensor *outputIdxOffsetOptional,
                                                         const aclTensor *metadataOptional, int64_t topk,
                                                         int64_t quantMode, int64_t maxSeqlenQOptional,
                                                         char *layoutQOptional, char *layoutKOptional,
                                                         int64_t maskModeOptional, int64_t cmpRatioOptional,
                                                         int64_t returnValueOptional,
                                                         const aclTensor *sparseIndicesOut,
                                                         const aclTensor *sparseValuesOut, uint64_t *workspaceSize,
                                                         aclOpExecutor **executor) {
    (void)maxSeqlenQOptional, (void)metadataOptional; /* as for aclnnLightningIndexerV2: not read */
    if (!workspaceSize || !executor)
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, API, "%s: expected a pointer, got nullptr",
                       workspaceSize ? "executor" : "workspaceSize");
    aclnnStatus st = check_quant_mode(quantMode, query, key, queryDequantScale, keyDequantScale);
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
    /* compressed_rows' terms: CANN spells this operator's lengths cuSeqLens*, its paged key PA_BSND */
    const fe_v2_args a = {API, query, key, blockTableOptional, cuSeqLensQOptional, cuSeqLensKOptional,
                          sequsedQOptional, sequsedKOptional, cmpResidualKOptional, "cuSeqLensQOptional",
                          "cuSeqLensKOptional", layoutQOptional ? layoutQOptional : "BSND",
                          layoutKOptional ? layoutKOptional : "BSND", "PA_BSND", maskModeOptional, cmpRatioOptional};
    const quant_tensors t = {weights, queryDequantScale, keyDequantScale, outputIdxOffsetOptional, sparseIndicesOut,
                             sparseValuesOut};
    fe_args args = {0};
    uint64_t ws = 0;
    lig_executor *lx = NULL;
    if ((st = plan(&a, &t, topk, returnValueOptional, quantMode == 5, &args, &ws, &lx)) != ACLNN_SUCCESS) {
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

/*
 * aclnnLightningIndexerV2 over lig's paged forward (lig_indexer_paged_get_workspace_size), one
 * query row per batch with its visible compressed entries as its key length (compressed_rows.h).
 * CANN's kernels take FLOAT32 weights with FLOAT16 / BFLOAT16 q and k, where lig wants one dtype:
 * q and k are widened to FLOAT32 (exact), so the FLOAT32 scores are lig's FLOAT32 forward's.
 */
#include "../include/aclnnop/aclnn_lightning_indexer_v2.h"

#include "compressed_rows.h"
#include "dtype.h"
#include "errmsg.h"
#include "executor.h"

static const char *const API = "aclnnLightningIndexerV2GetWorkspaceSize";

/* The staged FLOAT32 copy of the argument staged last. */
static float *last_stage(const fe_args *args) { return args->stages[args->nstages - 1].buf; }

static aclnnStatus plan(const fe_v2_args *a, const aclTensor *w, const aclTensor *outputIdxOffset, int64_t topk,
                        int64_t returnValue, const aclTensor *indices, const aclTensor *values, fe_args *args,
                        uint64_t *ws, lig_executor **lx) {
    fe_v2_rows rows;
    aclnnStatus st = fe_v2_rows_plan(a, args, &rows);
    if (st != ACLNN_SUCCESS) return st;
    lig_tensor *q, *k, *wt, *idx, *val = NULL, *lengths, *table;
    if ((st = fe_args_bind(args, a->query, "q", API, false, &q)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(args, a->key, "k", API, false, &k)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(args, w, "w", API, false, &wt)) != ACLNN_SUCCESS ||
        (st = fe_args_bind(args, indices, "sparseIndicesOut", API, false, &idx)) != ACLNN_SUCCESS ||
        (returnValue && (st = fe_args_bind(args, values, "sparseValuesOut", API, false, &val)) != ACLNN_SUCCESS))
        return st;
    const aclTensor *qt = a->query, *kt = a->key;
    float *qbuf = NULL, *kbuf = NULL;
    if ((qt->dtype == ACL_FLOAT16 || qt->dtype == ACL_BF16) && kt->dtype == qt->dtype && w->dtype == ACL_FLOAT) {
        if (returnValue && values->dtype != ACL_FLOAT)
            return fe_fail(ACLNN_ERR_PARAM_INVALID, API, "sparseValuesOut: expected dtype ACL_FLOAT, got %s",
                           fe_dtype_name(values->dtype));
        if ((st = fe_args_stage(args, qt, "q", API, false, &q)) != ACLNN_SUCCESS) return st;
        qbuf = last_stage(args);
        if ((st = fe_args_stage(args, kt, "k", API, false, &k)) != ACLNN_SUCCESS) return st;
        kbuf = last_stage(args);
    }
    fe_view qv = fe_view_of(qt, qbuf), kv = fe_view_of(kt, kbuf), wv = fe_view_of(w, NULL),
            iv = fe_view_of(indices, NULL);
    fe_v2_cache_view(&rows, &kv);
    if ((st = fe_v2_row_view(&rows, "q", API, &qv)) != ACLNN_SUCCESS ||
        (st = fe_v2_rebind(args, &q, &qv, "q", API)) != ACLNN_SUCCESS ||
        (st = fe_v2_rebind(args, &k, &kv, "k", API)) != ACLNN_SUCCESS ||
        (st = fe_v2_row_view(&rows, "w", API, &wv)) != ACLNN_SUCCESS ||
        (st = fe_v2_rebind(args, &wt, &wv, "w", API)) != ACLNN_SUCCESS ||
        (st = fe_v2_row_view(&rows, "sparseIndicesOut", API, &iv)) != ACLNN_SUCCESS ||
        (st = fe_v2_rebind(args, &idx, &iv, "sparseIndicesOut", API)) != ACLNN_SUCCESS)
        return st;
    if (returnValue) {
        fe_view vv = fe_view_of(values, NULL);
        if ((st = fe_v2_row_view(&rows, "sparseValuesOut", API, &vv)) != ACLNN_SUCCESS ||
            (st = fe_v2_rebind(args, &val, &vv, "sparseValuesOut", API)) != ACLNN_SUCCESS)
            return st;
    }
    const aclTensor *fill = !returnValue && values && values->numel > 0 ? values : NULL;
    if ((st = fe_v2_row_tensors(&rows, args, API, &lengths, &table)) != ACLNN_SUCCESS ||
        (st = fe_v2_post(&rows, args, API, indices, outputIdxOffset, fill)) != ACLNN_SUCCESS)
        return st;
#ifdef LIG_ACLNN_HAVE_PAGED
    lig_status ls = lig_indexer_paged_get_workspace_size(q, k, table, wt, NULL, lengths, "BSND", topk, 0, INT64_MAX,
                                                         INT64_MAX, idx, val, ws, lx);
    return ls == LIG_SUCCESS ? ACLNN_SUCCESS : fe_fail_lig(ls, API);
#else
    (void)topk, (void)ws, (void)lx;
    return fe_fail(ACLNN_ERR_PARAM_INVALID, API,
                   "this front end was built against lig %s, which has no paged forward "
                   "(lig_indexer_paged_get_workspace_size), and computes LightningIndexerV2 with it",
                   lig_version());
#endif
}

aclnnStatus aclnnLightningIndexerV2GetWorkspaceSize(const aclTensor *q, const aclTensor *k, const aclTensor *w,
                                                    const aclTensor *cuSeqlensQOptional,
                                                    const aclTensor *cuSeqlensKOptional,
                                                    const aclTensor *sequsedQOptional, const aclTensor *sequsedKOptional,
                                                    const aclTensor *cmpResidualKOptional,
                                                    const aclTensor *blockTableOptional,
                                                    const aclTensor *outputIdxOffsetOptional,
                                                    const aclTensor *metadataOptional, int64_t topk, int64_t maxSeqlenQ,
                                                    char *layoutQOptional, char *layoutKOptional, int64_t maskMode,
                                                    int64_t cmpRatio, int64_t returnValue,
                                                    const aclTensor *sparseIndicesOut,
                                                    const aclTensor *sparseValuesOut, uint64_t *workspaceSize,
                                                    aclOpExecutor **executor) {
    /* CANN's tiling reads maxSeqlenQ and the metadata op's split; lig needs neither (it reads the
     * lengths and plans on the host), so neither is read, as CANN's A2/A3 kernels do not. */
    (void)maxSeqlenQ, (void)metadataOptional;
    if (!workspaceSize || !executor)
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, API, "%s: expected a pointer, got nullptr",
                       workspaceSize ? "executor" : "workspaceSize");
    if (returnValue != 0 && returnValue != 1)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, API, "returnValue: expected 0 or 1, got %lld", (long long)returnValue);
    if (!sparseIndicesOut)
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, API, "sparseIndicesOut: expected a tensor, got nullptr");
    if (returnValue && !sparseValuesOut)
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, API,
                       "sparseValuesOut: expected a tensor when returnValue is 1, got nullptr");
    if (!w) return fe_fail(ACLNN_ERR_PARAM_NULLPTR, API, "w: expected a tensor, got nullptr");
    /* the lengths and layouts in compressed_rows' terms (the paged key is "PA_BBND" here) */
    const fe_v2_args a = {API, q, k, blockTableOptional, cuSeqlensQOptional, cuSeqlensKOptional, sequsedQOptional,
                          sequsedKOptional, cmpResidualKOptional, "cuSeqlensQOptional", "cuSeqlensKOptional",
                          layoutQOptional ? layoutQOptional : "BSND", layoutKOptional ? layoutKOptional : "BSND",
                          "PA_BBND", maskMode, cmpRatio};
    fe_args args = {0};
    uint64_t ws = 0;
    lig_executor *lx = NULL;
    aclnnStatus st = plan(&a, w, outputIdxOffsetOptional, topk, returnValue, sparseIndicesOut, sparseValuesOut,
                          &args, &ws, &lx);
    if (st != ACLNN_SUCCESS) {
        fe_args_release(&args);
        return st;
    }
    return fe_executor_plan(FE_OP_INDEXER_V2, LIG_SUCCESS, lx, ws, &args, API, workspaceSize, executor);
}

aclnnStatus aclnnLightningIndexerV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                    const aclrtStream stream) {
    return fe_executor_run(FE_OP_INDEXER_V2, workspace, workspaceSize, executor, stream, "aclnnLightningIndexerV2");
}

/*
 * aclnnLightningIndexerV2Metadata and aclnnQuantLightningIndexerV2Metadata: CANN's 950 planning
 * steps. CANN's AI CPU kernel writes each core's share of the work into `metaData` (INT32, 1024
 * values) for the indexer to read; lig plans on the host when the indexer runs and never reads it.
 * So these check the arguments as CANN's op does (its ParamsCheck: the counts, maskMode, cmpRatio,
 * the layouts, which length tensors each needs, their dtypes and batch sizes) and, in phase 2,
 * write a description of the problem: a program written for the 950 runs unchanged, and what it
 * hands the indexer is real data rather than uninitialised memory.
 *   metaData[0] = 0x4C494756 ("LIGV"), [1] = 1 (this layout's version), [2] = the batch size,
 *   [3] = maskMode, [4] = cmpRatio, [5] = numHeadsQ, [6] = numHeadsK, [7] = topk, the rest 0.
 */
#include <string.h>

#include "../include/aclnnop/aclnn_lightning_indexer_v2_metadata.h"
#include "../include/aclnnop/aclnn_quant_lightning_indexer_v2_metadata.h"
#include "compressed_rows.h"
#include "dtype.h"
#include "errmsg.h"
#include "executor.h"

enum { META_WORDS = 8, META_MAGIC = 0x4C494756 };

typedef struct meta_args {
    const char *api;
    const aclTensor *cuQ, *cuK, *usedQ, *usedK, *residual, *meta;
    int64_t numHeadsQ, numHeadsK, topk, batchSize, maxSeqlenQ, maxSeqlenK, maskMode, cmpRatio;
    const char *layoutQ, *layoutK;
} meta_args;

typedef struct meta_post {
    char *data;
    int64_t n, stride;
    int32_t head[META_WORDS];
} meta_post;

static void write_meta(const void *ctx) {
    const meta_post *p = ctx;
    for (int64_t i = 0; i < p->n; i++) {
        const int32_t v = i < META_WORDS ? p->head[i] : 0;
        memcpy(p->data + (size_t)(i * p->stride) * sizeof v, &v, sizeof v);
    }
}

/* CANN counts a tensor as given when it has a first axis longer than 0 (its samples pass (0,) for
 * "absent"). */
static bool given(const aclTensor *t) { return t && t->ndim > 0 && t->shape[0] > 0; }

/* The batch size one side's lengths imply: seqused's length, else cuSeqlens' minus one, else (TND)
 * none, else batchSize; each given length tensor checked as an INT32 (or INT64) vector. */
static aclnnStatus side_batch(const meta_args *a, const aclTensor *used, const char *usedName, const aclTensor *cu,
                              const char *cuName, const char *layout, int64_t *B) {
    aclnnStatus st;
    if (given(used) && (st = fe_check_int_tensor(used, usedName, a->api, 1)) != ACLNN_SUCCESS) return st;
    if (given(cu) && (st = fe_check_int_tensor(cu, cuName, a->api, 1)) != ACLNN_SUCCESS) return st;
    *B = given(used) ? used->shape[0] : given(cu) ? cu->shape[0] - 1 : !strcmp(layout, "TND") ? 0 : a->batchSize;
    return ACLNN_SUCCESS;
}

static aclnnStatus check(const meta_args *a) {
    const char *api = a->api;
    const struct {
        int64_t v;
        const char *name;
    } counts[] = {{a->numHeadsQ, "numHeadsQ"}, {a->numHeadsK, "numHeadsK"},   {a->topk, "topk"},
                  {a->batchSize, "batchSize"}, {a->maxSeqlenQ, "maxSeqlenQ"}, {a->maxSeqlenK, "maxSeqlenK"}};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        if (counts[i].v < 0)
            return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "%s: expected >= 0, got %lld", counts[i].name,
                           (long long)counts[i].v);
    if (a->maskMode != 0 && a->maskMode != 3)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "maskMode: expected 0 (no mask) or 3 (right-down causal), got %lld",
                       (long long)a->maskMode);
    if (a->cmpRatio < 1 || a->cmpRatio > 128)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "cmpRatio: expected 1..128, got %lld", (long long)a->cmpRatio);
    if (strcmp(a->layoutQ, "BSND") && strcmp(a->layoutQ, "TND"))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "layoutQOptional: expected \"BSND\" or \"TND\", got \"%s\"",
                       a->layoutQ);
    /* the indexers spell a paged key PA_BBND (LightningIndexerV2) and PA_BSND (the quantized one);
     * the metadata ops' checks and docs name PA_BBND for both: both are taken */
    const bool paged = !strcmp(a->layoutK, "PA_BBND") || !strcmp(a->layoutK, "PA_BSND");
    if (!paged && strcmp(a->layoutK, a->layoutQ))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                       "layoutKOptional: expected \"%s\" (layoutQOptional's layout), \"PA_BBND\" or \"PA_BSND\", got "
                       "\"%s\"",
                       a->layoutQ, a->layoutK);
    if (!strcmp(a->layoutQ, "TND") && !given(a->cuQ))
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api, "cuSeqlensQOptional: expected the (B+1,) lengths with layout TND");
    if (!strcmp(a->layoutK, "TND") && !given(a->cuK))
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api, "cuSeqlensKOptional: expected the (B+1,) lengths with layout TND");
    if (a->maskMode == 3 && a->cmpRatio != 1 && !given(a->residual))
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api,
                       "cmpResidualKOptional: expected the (B,) residuals when maskMode is 3 and cmpRatio is %lld",
                       (long long)a->cmpRatio);
    int64_t bq, bk;
    aclnnStatus st;
    if ((st = side_batch(a, a->usedQ, "sequsedQOptional", a->cuQ, "cuSeqlensQOptional", a->layoutQ, &bq)) !=
            ACLNN_SUCCESS ||
        (st = side_batch(a, a->usedK, "sequsedKOptional", a->cuK, "cuSeqlensKOptional", a->layoutK, &bk)) !=
            ACLNN_SUCCESS)
        return st;
    if (given(a->residual)) {
        if ((st = fe_check_int_tensor(a->residual, "cmpResidualKOptional", api, 1)) != ACLNN_SUCCESS) return st;
        if (a->residual->shape[0] != bq)
            return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                           "cmpResidualKOptional: expected %lld values (the query's batch size), got %lld",
                           (long long)bq, (long long)a->residual->shape[0]);
    }
    if (bq != bk)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                       "the query's lengths give batch size %lld and the key's %lld: expected the same", (long long)bq,
                       (long long)bk);
    return ACLNN_SUCCESS;
}

static aclnnStatus plan(fe_op op, const meta_args *a, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *api = a->api;
    if (!workspaceSize || !executor)
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api, "%s: expected a pointer, got nullptr",
                       workspaceSize ? "executor" : "workspaceSize");
    if (!a->meta) return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api, "metaData: expected an INT32 (1024,) tensor, got nullptr");
    aclnnStatus st = check(a);
    if (st != ACLNN_SUCCESS) return st;
    fe_args args = {0};
    lig_tensor *unused;
    if ((st = fe_args_bind(&args, a->meta, "metaData", api, false, &unused)) != ACLNN_SUCCESS) {
        fe_args_release(&args);
        return st;
    }
    if (a->meta->dtype != ACL_INT32 || a->meta->ndim != 1 || a->meta->shape[0] < META_WORDS) {
        fe_args_release(&args);
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                       "metaData: expected an ACL_INT32 vector of at least %d values (CANN's is (1024,)), got %s with "
                       "%lld dimensions",
                       META_WORDS, fe_dtype_name(a->meta->dtype), (long long)a->meta->ndim);
    }
    meta_post *p = calloc(1, sizeof *p);
    if (!p) {
        fe_args_release(&args);
        return fe_fail(ACLNN_ERR_RUNTIME_ERROR, api, "out of memory");
    }
    const int64_t bq = given(a->usedQ)  ? a->usedQ->shape[0]
                       : given(a->cuQ) ? a->cuQ->shape[0] - 1
                                       : a->batchSize;
    const int64_t head[META_WORDS] = {META_MAGIC,    1,           bq, a->maskMode, a->cmpRatio, a->numHeadsQ,
                                      a->numHeadsK, a->topk};
    for (int i = 0; i < META_WORDS; i++) p->head[i] = head[i] > INT32_MAX ? INT32_MAX : (int32_t)head[i];
    p->data = (char *)a->meta->data + (size_t)a->meta->offset * sizeof(int32_t);
    p->n = a->meta->shape[0];
    p->stride = a->meta->strides[0];
    args.post = (fe_post){.run = write_meta, .ctx = p};
    return fe_executor_plan(op, LIG_SUCCESS, NULL, 0, &args, api, workspaceSize, executor);
}

aclnnStatus aclnnLightningIndexerV2MetadataGetWorkspaceSize(
    const aclTensor *cuSeqlensQOptional, const aclTensor *cuSeqlensKOptional, const aclTensor *sequsedQOptional,
    const aclTensor *sequsedKOptional, const aclTensor *cmpResidualKOptional, int64_t numHeadsQ, int64_t numHeadsK,
    int64_t headDim, int64_t topk, int64_t batchSizeOptional, int64_t maxSeqlenQOptional, int64_t maxSeqlenKOptional,
    char *layoutQOptional, char *layoutKOptional, int64_t maskModeOptional, int64_t cmpRatioOptional,
    const aclTensor *metaData, uint64_t *workspaceSize, aclOpExecutor **executor) {
    (void)headDim; /* CANN's op does not check it either */
    const meta_args a = {"aclnnLightningIndexerV2MetadataGetWorkspaceSize", cuSeqlensQOptional, cuSeqlensKOptional,
                         sequsedQOptional, sequsedKOptional, cmpResidualKOptional, metaData, numHeadsQ, numHeadsK, topk,
                         batchSizeOptional, maxSeqlenQOptional, maxSeqlenKOptional, maskModeOptional, cmpRatioOptional,
                         layoutQOptional ? layoutQOptional : "BSND", layoutKOptional ? layoutKOptional : "BSND"};
    return plan(FE_OP_INDEXER_V2_METADATA, &a, workspaceSize, executor);
}

aclnnStatus aclnnLightningIndexerV2Metadata(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                            const aclrtStream stream) {
    return fe_executor_run(FE_OP_INDEXER_V2_METADATA, workspace, workspaceSize, executor, stream,
                           "aclnnLightningIndexerV2Metadata");
}

aclnnStatus aclnnQuantLightningIndexerV2MetadataGetWorkspaceSize(
    const aclTensor *cuSeqlensQOptional, const aclTensor *cuSeqlensKOptional, const aclTensor *sequsedQOptional,
    const aclTensor *sequsedKOptional, const aclTensor *cmpResidualKOptional, int64_t numHeadsQ, int64_t numHeadsK,
    int64_t headDim, int64_t topk, int64_t quantMode, int64_t batchSize, int64_t maxSeqlenQ, int64_t maxSeqlenK,
    char *layoutQOptional, char *layoutKOptional, int64_t maskMode, int64_t cmpRatio, const aclTensor *metadata,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
    (void)headDim;
    const char *api = "aclnnQuantLightningIndexerV2MetadataGetWorkspaceSize";
    if (quantMode < 1 || quantMode > 5)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "quantMode: expected 1..5 (as CANN numbers them), got %lld",
                       (long long)quantMode);
    const meta_args a = {api, cuSeqlensQOptional, cuSeqlensKOptional, sequsedQOptional, sequsedKOptional,
                         cmpResidualKOptional, metadata, numHeadsQ, numHeadsK, topk, batchSize, maxSeqlenQ, maxSeqlenK,
                         maskMode, cmpRatio, layoutQOptional ? layoutQOptional : "BSND",
                         layoutKOptional ? layoutKOptional : "BSND"};
    return plan(FE_OP_QUANT_INDEXER_V2_METADATA, &a, workspaceSize, executor);
}

aclnnStatus aclnnQuantLightningIndexerV2Metadata(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                 const aclrtStream stream) {
    return fe_executor_run(FE_OP_QUANT_INDEXER_V2_METADATA, workspace, workspaceSize, executor, stream,
                           "aclnnQuantLightningIndexerV2Metadata");
}

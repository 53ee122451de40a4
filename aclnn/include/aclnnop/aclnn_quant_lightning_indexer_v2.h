/*
 * lig-aclnn: aclnnQuantLightningIndexerV2, CANN's V4-era quantized LightningIndexer forward
 * (compressed keys, per-row top-k, bf16 values), computed by lig.
 *
 * Signature as CANN documents it (ops-transformer attention/quant_lightning_indexer_v2/docs/
 * aclnnQuantLightningIndexerV2.md):
 *   I[t,g,s] = sum over the heads h of key head g of  w[t,h] * ReLU( sq[t,h] * sk[s,g] * (q[t,h,:] . k[s,g,:]) )
 * over the compressed keys row t sees, top-k by descending score:
 *   query [B,S1,N1,D] | [T1,N1,D]; key [B,S2,N2,D] | [T2,N2,D] | PA_BSND [blockNum,blockSize,N2,D]
 *   quantMode 1: ACL_FLOAT8_E4M3FN query and key, ACL_FLOAT scales (lig also takes ACL_FLOAT16)
 *   quantMode 2: ACL_INT8 query and key, ACL_FLOAT16 scales (lig also takes ACL_FLOAT)
 *   quantMode 5 (MXFP4): ACL_FLOAT4_E2M1 query and key (extents, strides and offsets counted in
 *                elements, two a byte: the last extent even with stride 1), ACL_FLOAT8_E8M0 scales
 *                shaped like the codes with D replaced by (D/64, 2): one per 32 values
 *   quantMode 3 (MXFP8) and 4 (HiFloat8): refused with ACLNN_ERR_PARAM_INVALID, by name
 *   weights [B,S1,N1] | [T1,N1]: ACL_FLOAT (modes 1, 5) or ACL_FLOAT16 (mode 2); lig takes either, or ACL_BF16
 *   queryDequantScale like weights; keyDequantScale like key without D (modes 1, 2)
 *   cuSeqLensQOptional, cuSeqLensKOptional, sequsedQOptional, sequsedKOptional, cmpResidualKOptional,
 *   blockTableOptional, outputIdxOffsetOptional, metadataOptional, topk, maxSeqlenQOptional, the
 *   layouts (NULL: "BSND"; the paged key layout is "PA_BSND"), maskModeOptional, cmpRatioOptional:
 *   as for aclnnLightningIndexerV2 (aclnn_lightning_indexer_v2.h)
 *   returnValueOptional 0 or 1; sparseIndicesOut [B,S1,N2,topk] | [T1,N2,topk] INT32 (or INT64);
 *   sparseValuesOut same shape, ACL_BF16 (lig also writes ACL_FLOAT / ACL_FLOAT16): the scores when
 *   returnValueOptional is 1, -inf everywhere when 0 (as CANN documents), or nullptr / empty when 0.
 * docs/aclnn.md "aclnnQuantLightningIndexerV2". Phase 2 consumes the executor.
 */
#ifndef LIG_ACLNN_QUANT_LIGHTNING_INDEXER_V2_H
#define LIG_ACLNN_QUANT_LIGHTNING_INDEXER_V2_H

#include "../aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnQuantLightningIndexerV2GetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *weights, const aclTensor *queryDequantScale,
    const aclTensor *keyDequantScale, const aclTensor *cuSeqLensQOptional, const aclTensor *cuSeqLensKOptional,
    const aclTensor *sequsedQOptional, const aclTensor *sequsedKOptional, const aclTensor *cmpResidualKOptional,
    const aclTensor *blockTableOptional, const aclTensor *outputIdxOffsetOptional, const aclTensor *metadataOptional,
    int64_t topk, int64_t quantMode, int64_t maxSeqlenQOptional, char *layoutQOptional, char *layoutKOptional,
    int64_t maskModeOptional, int64_t cmpRatioOptional, int64_t returnValueOptional, const aclTensor *sparseIndicesOut,
    const aclTensor *sparseValuesOut, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnQuantLightningIndexerV2(void *workspace, uint64_t workspaceSize,
                                                             aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* LIG_ACLNN_QUANT_LIGHTNING_INDEXER_V2_H */

/*
 * lig-aclnn: aclnnQuantLightningIndexer, CANN's quantized LightningIndexer forward (top-k over
 * per-token-head dequantized scores), computed by lig.
 *
 * Signature as CANN documents and declares it (ops-transformer attention/quant_lightning_indexer/
 * docs/aclnnQuantLightningIndexer.md and op_host/op_api/aclnn_quant_lightning_indexer.h); the
 * semantics are lig's lig_quant_indexer (docs/contract.md 2.4):
 *   I[t,g,s] = sum over the heads h of key head g of  w[t,h] * ReLU( sq[t,h] * sk[s,g] * (q[t,h,:] . k[s,g,:]) )
 *   query             [B,S1,N1,D] | [T1,N1,D]                     ACL_FLOAT8_E4M3FN or ACL_INT8
 *   key               [B,S2,N2,D] | [T2,N2,D] | PA_BSND [blockNum,blockSize,N2,D], query's dtype
 *   weights           [B,S1,N1] | [T1,N1]                         ACL_FLOAT16, ACL_BF16 (or ACL_FLOAT)
 *   queryDequantScale [B,S1,N1] | [T1,N1]                         ACL_FLOAT or ACL_FLOAT16 (required)
 *   keyDequantScale   [B,S2,N2] | [T2,N2] | [blockNum,blockSize,N2] ACL_FLOAT or ACL_FLOAT16
 *   actualSeqLengthsQueryOptional / actualSeqLengthsKeyOptional  [B] ACL_INT32 (or ACL_INT64): TND's
 *     cumulative ends; BSND per-batch lengths; PA_BSND per-batch key lengths (required)
 *   blockTableOptional [B, maxBlocksPerSeq], PA_BSND only
 *   queryQuantMode, keyQuantMode: 0 (per token and head)
 *   layoutQueryOptional "BSND" | "TND" (NULL: "BSND"); layoutKeyOptional the query's or "PA_BSND"
 *   out               [B,S1,N2,sparseCount] | [T1,N2,sparseCount]   ACL_INT32 (or ACL_INT64)
 * ACL_HIFLOAT8 is refused (ACLNN_ERR_PARAM_INVALID): lig does not support HiFloat8. Phase 2
 * consumes the executor, success or not.
 */
#ifndef LIG_ACLNN_QUANT_LIGHTNING_INDEXER_H
#define LIG_ACLNN_QUANT_LIGHTNING_INDEXER_H

#include "../aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnQuantLightningIndexerGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *weights, const aclTensor *queryDequantScale,
    const aclTensor *keyDequantScale, const aclTensor *actualSeqLengthsQueryOptional,
    const aclTensor *actualSeqLengthsKeyOptional, const aclTensor *blockTableOptional, int64_t queryQuantMode,
    int64_t keyQuantMode, char *layoutQueryOptional, char *layoutKeyOptional, int64_t sparseCount, int64_t sparseMode,
    int64_t preTokens, int64_t nextTokens, const aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnQuantLightningIndexer(void *workspace, uint64_t workspaceSize,
                                                           aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* LIG_ACLNN_QUANT_LIGHTNING_INDEXER_H */

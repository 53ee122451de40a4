/*
 * lig-aclnn: aclnnLightningIndexerV2, CANN's V4-era LightningIndexer forward (compressed keys,
 * per-row top-k and values), computed by lig.
 *
 * Signature as CANN declares it (ops-transformer attention/lightning_indexer_v2: the generated
 * op_api header aclnn_lightning_indexer_v2.h and docs/aclnnLightningIndexerV2.md):
 *   I[t,g,s] = sum over the heads h of key head g of  w[t,h] * ReLU(q[t,h,:] . k[s,g,:])
 * over the compressed keys row t sees, top-k by descending score:
 *   q   [B,S1,N1,D] | [T1,N1,D]                        ACL_FLOAT16 or ACL_BF16 (or ACL_FLOAT)
 *   k   [B,S2,N2,D] | [T2,N2,D] | PA_BBND [blockNum,blockSize,N2,D], q's dtype; S2 compressed entries
 *   w   [B,S1,N1] | [T1,N1]                            ACL_FLOAT (or q's dtype)
 *   cuSeqlensQOptional / cuSeqlensKOptional  (B+1,) INT32 cumulative lengths, required for TND
 *   sequsedQOptional / sequsedKOptional      (B,) INT32 used lengths (sequsedK required for PA_BBND)
 *   cmpResidualKOptional (B,) INT32: each batch's original tokens past its last whole block,
 *                        0..cmpRatio-1; required when maskMode is 3 and cmpRatio is not 1
 *   blockTableOptional   [B, maxBlocksPerSeq] INT32, PA_BBND only
 *   outputIdxOffsetOptional [B,S1,N2] | [T1,N2] INT32: added to every index that is not -1
 *   metadataOptional     accepted and not read (lig plans on the host; CANN's A2/A3 ignore it too)
 *   topk >= 1; maxSeqlenQ not read; layoutQOptional "BSND" | "TND" (NULL: "BSND"); layoutKOptional
 *   layoutQ's or "PA_BBND"; maskMode 0 (every entry) or 3 (right-down causal over the original
 *   positions: docs/contract.md 4.1); cmpRatio 1..128; returnValue 0 or 1
 *   sparseIndicesOut [B,S1,N2,topk] | [T1,N2,topk] INT32 (or INT64): batch-relative entries, -1 in
 *                    unused slots
 *   sparseValuesOut  same shape, ACL_FLOAT: the scores (-inf in unused slots) when returnValue is 1;
 *                    when 0, nullptr, an empty tensor, or filled with -inf
 * Semantics, limits and where lig differs from CANN: docs/aclnn.md "aclnnLightningIndexerV2".
 * Phase 2 consumes the executor.
 */
#ifndef LIG_ACLNN_LIGHTNING_INDEXER_V2_H
#define LIG_ACLNN_LIGHTNING_INDEXER_V2_H

#include "../aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnLightningIndexerV2GetWorkspaceSize(
    const aclTensor *q, const aclTensor *k, const aclTensor *w, const aclTensor *cuSeqlensQOptional,
    const aclTensor *cuSeqlensKOptional, const aclTensor *sequsedQOptional, const aclTensor *sequsedKOptional,
    const aclTensor *cmpResidualKOptional, const aclTensor *blockTableOptional,
    const aclTensor *outputIdxOffsetOptional, const aclTensor *metadataOptional, int64_t topk, int64_t maxSeqlenQ,
    char *layoutQOptional, char *layoutKOptional, int64_t maskMode, int64_t cmpRatio, int64_t returnValue,
    const aclTensor *sparseIndicesOut, const aclTensor *sparseValuesOut, uint64_t *workspaceSize,
    aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnLightningIndexerV2(void *workspace, uint64_t workspaceSize,
                                                        aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* LIG_ACLNN_LIGHTNING_INDEXER_V2_H */

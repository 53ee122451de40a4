/*
 * lig-aclnn: aclnnLightningIndexer, CANN's LightningIndexer forward (scores + top-k), computed by lig.
 *
 * Signature as CANN declares it (ops-transformer attention/lightning_indexer/op_host/op_api/
 * aclnn_lightning_indexer.h and docs/aclnnLightningIndexer.md). layoutQueryOptional is "BSND" or
 * "TND" (NULL = "BSND"); layoutKeyOptional is the query's layout, or "PA_BSND" for a paged key
 * cache: key [blockNum, blockSize, N2, D] read through blockTableOptional [B, maxBlocksPerSeq],
 * with actualSeqLengthsKeyOptional required as per-batch key lengths. sparseIndicesOut is
 * [B,S1,N2,sparseCount] | [T1,N2,sparseCount]; sparseValuesOut (same shape) is written only when
 * returnValues is true. weights may be ACL_FLOAT with ACL_FLOAT16 / ACL_BF16 query and key, as on
 * CANN's A2/A3 (scored in FLOAT32). Semantics are lig's lig_indexer (docs/contract.md, section 2.1); phase 2 consumes
 * the executor.
 */
#ifndef LIG_ACLNN_LIGHTNING_INDEXER_H
#define LIG_ACLNN_LIGHTNING_INDEXER_H

#include <stdbool.h>

#include "../aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnLightningIndexerGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *weights,
    const aclTensor *actualSeqLengthsQueryOptional, const aclTensor *actualSeqLengthsKeyOptional,
    const aclTensor *blockTableOptional, char *layoutQueryOptional, char *layoutKeyOptional, int64_t sparseCount,
    int64_t sparseMode, int64_t preTokens, int64_t nextTokens, bool returnValues, const aclTensor *sparseIndicesOut,
    const aclTensor *sparseValuesOut, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnLightningIndexer(void *workspace, uint64_t workspaceSize,
                                                      aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* LIG_ACLNN_LIGHTNING_INDEXER_H */

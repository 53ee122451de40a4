/*
 * lig-aclnn: aclnnQuantLightningIndexerV2Metadata, the planning step CANN's 950 runs before
 * aclnnQuantLightningIndexerV2 (ops-transformer's op_api aclnn_quant_lightning_indexer_v2_metadata.cpp
 * and docs/aclnnQuantLightningIndexerV2Metadata.md, the single-quantMode revision). As
 * aclnnLightningIndexerV2Metadata (aclnn_lightning_indexer_v2_metadata.h), plus quantMode (1, 2, 3,
 * 4 or 5 as CANN numbers them; checked when the indexer runs).
 */
#ifndef LIG_ACLNN_QUANT_LIGHTNING_INDEXER_V2_METADATA_H
#define LIG_ACLNN_QUANT_LIGHTNING_INDEXER_V2_METADATA_H

#include "../aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnQuantLightningIndexerV2MetadataGetWorkspaceSize(
    const aclTensor *cuSeqlensQOptional,
    const aclTensor *cuSeqlensKOptional,
    const aclTensor *sequsedQOptional,
    const aclTensor *sequsedKOptional,
    const aclTensor *cmpResidualKOptional,
    int64_t numHeadsQ,
    int64_t numHeadsK,
    int64_t headDim,
    int64_t topk,
    int64_t quantMode,
    int64_t batchSize,
    int64_t maxSeqlenQ,
    int64_t maxSeqlenK,
    char *layoutQOptional,
    char *layoutKOptional,
    int64_t maskMode,
    int64_t cmpRatio,
    const aclTensor *metadata,
    uint64_t *workspaceSize,
    aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnQuantLightningIndexerV2Metadata(void *workspace, uint64_t workspaceSize,
                                                                     aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* LIG_ACLNN_QUANT_LIGHTNING_INDEXER_V2_METADATA_H */

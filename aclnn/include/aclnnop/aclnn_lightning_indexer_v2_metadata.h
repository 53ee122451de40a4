/*
 * lig-aclnn: aclnnLightningIndexerV2Metadata, the planning step CANN's 950 runs before
 * aclnnLightningIndexerV2 (ops-transformer's op_api aclnn_lightning_indexer_v2_metadata.cpp and
 * docs/aclnnLightningIndexerV2Metadata.md). CANN writes its per-core work split into `metaData`
 * (INT32, 1024 values); lig plans on the host when the indexer runs, so lig-aclnn checks the
 * arguments as CANN's op does and writes a small description of the problem instead (docs/aclnn.md,
 * "The metadata ops"): aclnnLightningIndexerV2 accepts it and does not read it.
 */
#ifndef LIG_ACLNN_LIGHTNING_INDEXER_V2_METADATA_H
#define LIG_ACLNN_LIGHTNING_INDEXER_V2_METADATA_H

#include "../aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnLightningIndexerV2MetadataGetWorkspaceSize(
    const aclTensor *cuSeqlensQOptional, const aclTensor *cuSeqlensKOptional, const aclTensor *sequsedQOptional,
    const aclTensor *sequsedKOptional, const aclTensor *cmpResidualKOptional, int64_t numHeadsQ, int64_t numHeadsK,
    int64_t headDim, int64_t topk, int64_t batchSizeOptional, int64_t maxSeqlenQOptional, int64_t maxSeqlenKOptional,
    char *layoutQOptional, char *layoutKOptional, int64_t maskModeOptional, int64_t cmpRatioOptional,
    const aclTensor *metaData, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnLightningIndexerV2Metadata(void *workspace, uint64_t workspaceSize,
                                                                aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* LIG_ACLNN_LIGHTNING_INDEXER_V2_METADATA_H */

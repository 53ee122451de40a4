/*
 * lig-aclnn: aclnnSparseLightningIndexerGradKLLossV2, CANN's fused indexer backward + KL loss with
 * attention sinks in the main attention's softmax, computed by lig.
 *
 * Signature as CANN's op_api header declares it (ops-transformer attention/
 * sparse_lightning_indexer_grad_kl_loss/op_host/op_api/aclnn_sparse_lightning_indexer_grad_kl_loss_v2.h,
 * installed as aclnnop/aclnn_sparse_lightning_indexer_grad_kl_loss_v2.h): V1's arguments
 * (aclnn_sparse_lightning_indexer_grad_kl_loss.h) with sinksOptional after the lengths. The
 * semantics are CANN's V2 kernel's, through lig_sparse_indexer_grad_kl_loss_v2_get_workspace_size
 * with LIG_KL_TARGET_CANN (docs/contract.md 2.5, "Sinks"):
 *   sinksOptional  FLOAT32 [N1], one logit per main query head, or NULL (then V1's results)
 *   p[j] = sum_h P[h,j] / (N1 - sum_h exp(sinks[h] - softmaxMax[h]) / softmaxSum[h])
 * with softmaxMax / softmaxSum the statistics of the softmax over the keys and the sink; dI, the
 * loss and the gradients as V1. CANN takes sinks on Ascend 950 only; lig everywhere it runs.
 * Phase 2 consumes the executor, success or not.
 */
#ifndef LIG_ACLNN_SPARSE_LIGHTNING_INDEXER_GRAD_KL_LOSS_V2_H
#define LIG_ACLNN_SPARSE_LIGHTNING_INDEXER_GRAD_KL_LOSS_V2_H

#include <stdbool.h>

#include "../aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseLightningIndexerGradKLLossV2GetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *queryIndex, const aclTensor *keyIndex,
    const aclTensor *weight, const aclTensor *sparseIndices, const aclTensor *softmaxMax, const aclTensor *softmaxSum,
    const aclTensor *queryRopeOptional, const aclTensor *keyRopeOptional,
    const aclIntArray *actualSeqLengthsQueryOptional, const aclIntArray *actualSeqLengthsKeyOptional,
    const aclTensor *sinksOptional, double scaleValue, char *layout, int64_t sparseMode, int64_t preTokens,
    int64_t nextTokens, bool deterministic, const aclTensor *dQueryIndex, const aclTensor *dKeyIndex,
    const aclTensor *dWeight, const aclTensor *loss, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseLightningIndexerGradKLLossV2(void *workspace, uint64_t workspaceSize,
                                                                        aclOpExecutor *executor,
                                                                        const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* LIG_ACLNN_SPARSE_LIGHTNING_INDEXER_GRAD_KL_LOSS_V2_H */

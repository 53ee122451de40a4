/*
 * lig-aclnn: aclnnLightningIndexerGrad, CANN's LightningIndexer backward, computed by lig.
 *
 * Signature as CANN declares it (ops-transformer attention/lightning_indexer_grad/op_host/op_api/
 * aclnn_lightning_indexer_grad.h, and its documentation aclnnLightningGrad.md); the semantics are
 * lig's lig_indexer_grad (docs/contract.md, section 2.2): query [B,S1,N1,D] | [T1,N1,D], key [B,S2,N2,D] | [T2,N2,D],
 * dy and sparseIndices [B,S1,K] | [T1,K] (or with an N2 axis), weights [B,S1,N1] | [T1,N1];
 * dQuery, dKey, dWeights shaped like query, key, weights. dy holds one gradient per selected slot:
 * the [B,S1,N1,D] shape CANN's documentation shows for it is refused with a message saying so.
 * Beyond CANN's kernel, lig accepts FLOAT32 too, any D, N2 and K, sequence lengths with BSND and
 * the token band. Phase 2 consumes the executor, success or not.
 */
#ifndef LIG_ACLNN_LIGHTNING_INDEXER_GRAD_H
#define LIG_ACLNN_LIGHTNING_INDEXER_GRAD_H

#include <stdbool.h>

#include "../aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnLightningIndexerGradGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *dy, const aclTensor *sparseIndices,
    const aclTensor *weights, const aclTensor *actualSeqQLenOptional, const aclTensor *actualSeqKvLenOptional,
    int64_t headNum, char *inputLayout, int64_t sparseMode, int64_t preTokens, int64_t nextTokens,
    bool determinstic, const aclTensor *dqOut, const aclTensor *dkOut, const aclTensor *dweightsOut,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnLightningIndexerGrad(void *workspace, uint64_t workspaceSize,
                                                          aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* LIG_ACLNN_LIGHTNING_INDEXER_GRAD_H */

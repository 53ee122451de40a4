/*
 * lig-aclnn: aclnnSparseLightningIndexerGradKLLoss, CANN's fused indexer backward + KL loss with the
 * target taken from the main attention, computed by lig.
 *
 * Signature as CANN documents it (ops-transformer attention/sparse_lightning_indexer_grad_kl_loss/
 * docs/aclnnSparseLightningIndexerGradKLLoss.md, whose sample passes the sequence lengths as
 * aclIntArray), with the documentation's typo dKeyKndex spelt dKeyIndex. The semantics are CANN's
 * kernel's, through lig_sparse_indexer_grad_kl_loss with LIG_KL_TARGET_CANN (docs/contract.md 2.5): the
 * head-mean target p, dI = softmax(I) - p, the loss sum over rows of
 * sum_j max(p,1e-8) (log max(p,1e-8) - log max(y,1e-8)).
 *   query [B,S1,N1,D] | [T1,N1,D]          key [B,S2,1,D] | [T2,1,D]         (the main attention)
 *   queryIndex [B,S1,Nidx1,Di] | [T1,...]  keyIndex [B,S2,Nidx2,Di] | [T2,...]
 *   weights [B,S1,Nidx1] | [T1,Nidx1]      sparseIndices [B,S1,Nidx2,K] | [T1,Nidx2,K]
 *   softmaxMax, softmaxSum [B,1,S1,N1] | [1,T1,N1] FLOAT32     queryRope, keyRope: both or neither
 *   actualSeqLengthsQuery / actualSeqLengthsKey: TND's cumulative ends (BSND: per-batch lengths)
 *   dQueryIndex, dKeyIndex, dWeights shaped like queryIndex, keyIndex, weights; loss FLOAT32 [1].
 * Beyond CANN's kernel, lig accepts FLOAT32 too, any D, Nidx2 dividing Nidx1, K, BSND lengths,
 * sparse mode 0 with the token band, INT64 indices. Phase 2 consumes the executor, success or not.
 */
#ifndef LIG_ACLNN_SPARSE_LIGHTNING_INDEXER_GRAD_KL_LOSS_H
#define LIG_ACLNN_SPARSE_LIGHTNING_INDEXER_GRAD_KL_LOSS_H

#include <stdbool.h>

#include "../aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseLightningIndexerGradKLLossGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *queryIndex, const aclTensor *keyIndex,
    const aclTensor *weights, const aclTensor *sparseIndices, const aclTensor *softmaxMax, const aclTensor *softmaxSum,
    const aclTensor *queryRope, const aclTensor *keyRope, const aclIntArray *actualSeqLengthsQuery,
    const aclIntArray *actualSeqLengthsKey, double scaleValue, char *layout, int64_t sparseMode, int64_t pre_tokens,
    int64_t next_tokens, bool deterministic, const aclTensor *dQueryIndex, const aclTensor *dKeyIndex,
    const aclTensor *dWeights, const aclTensor *loss, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseLightningIndexerGradKLLoss(void *workspace, uint64_t workspaceSize,
                                                                      aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* LIG_ACLNN_SPARSE_LIGHTNING_INDEXER_GRAD_KL_LOSS_H */

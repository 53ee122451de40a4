/*
 * fuzz-aclnn's third operator: aclnnSparseLightningIndexerGradKLLoss (docs/aclnn.md) on a KL-loss
 * problem decoded as for fuzz-lig-fwd (fuzz_kl_loss.h, CANN's target and statistics), its tensors
 * copied into aclrtMalloc memory, its sequence lengths as aclIntArray, compared with
 * lig_sparse_indexer_grad_kl_loss on the same data.
 */
#ifndef LIG_FUZZ_ACLNN_KL_LOSS_H
#define LIG_FUZZ_ACLNN_KL_LOSS_H

#include <stddef.h>

#include "aclnn/aclnn_base.h"
#include "fuzz_input.h"
#include "lig.h"

/* The aclDataType of a lig dtype (FLOAT32, FLOAT16, BFLOAT16, INT32, INT64, INT8, FLOAT8_E4M3FN). */
aclDataType fz_acl_dtype(lig_dtype d);

/* The statuses of one aclnn call (a1, a2) against lig's on the same data (l1, l2), or with
 * must_fail (a front-end defect lig cannot see) a failure; with phase2_defect phase 2 may fail
 * where lig's did not. A failure must carry a message and leave the outputs unchanged. */
void fz_acl_judge(const char *label, aclnnStatus a1, aclnnStatus a2, lig_status l1, lig_status l2, int must_fail,
                  int phase2_defect, int outputs_unchanged);

/* Phase 2 of lig's own plan in a malloc'd workspace when phase 1 returned LIG_SUCCESS (`planned`);
 * LIG_SUCCESS when it did not (the failure is phase 1's). */
lig_status fz_lig_phase2(lig_status planned, uint64_t ws, lig_executor *ex,
                         lig_status (*run)(void *, uint64_t, lig_executor *, void *));

/* The phase-2 defects the operators share. */
enum { FZ_ACL_P2_NONE, FZ_ACL_P2_WS_SHORT, FZ_ACL_P2_STREAM, FZ_ACL_P2_EXEC_DESTROYED, FZ_ACL_P2_RUN_TWICE };

/* Phase 2 of a successful phase 1 (ws, ex) through `run`, in a workspace from aclrtMalloc: with
 * FZ_ACL_P2_WS_SHORT one byte short, FZ_ACL_P2_STREAM a stream the runtime did not make,
 * FZ_ACL_P2_EXEC_DESTROYED the executor destroyed first, FZ_ACL_P2_RUN_TWICE a second run after a
 * success, which must be refused and leave the n outputs outs[i] (out_bytes[i] bytes each) as the first run left them.
 * *phase2_defect: whether the defect lets phase 2 fail where lig's did not. */
aclnnStatus fz_acl_phase2(aclnnStatus (*run)(void *, uint64_t, aclOpExecutor *, aclrtStream), uint64_t ws,
                          aclOpExecutor *ex, int defect, void *const *outs, const size_t *out_bytes, int n,
                          int *phase2_defect, const char *label);

/* What one operator call did, for the target's totals. */
enum { FZ_ACL_MATCHED, FZ_ACL_FAILED_ALIKE, FZ_ACL_REFUSED_DEFECT };

/* One call with a decoded front-end defect (a tensor or int array destroyed, memory freed before
 * phase 1 or between the phases, a fractal format, a dtype lig lacks, the executor run twice or
 * destroyed, a workspace too small, a stream it did not make): the same status in each phase as
 * lig's and, after success, the same output bytes; a defect must fail with nothing written. */
int fz_aclnn_kl_loss(fz_in *in, char *label, size_t label_size);

#endif /* LIG_FUZZ_ACLNN_KL_LOSS_H */

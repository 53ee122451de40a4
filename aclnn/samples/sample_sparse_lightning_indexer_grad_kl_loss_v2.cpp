// aclnnSparseLightningIndexerGradKLLossV2 (attention sinks in the main attention's softmax), called
// the way CANN's V2 sample calls it (examples/test_aclnn_sparse_lightning_indexer_grad_kl_loss_v2.cpp:
// device, context, stream, aclrtMalloc + aclrtMemcpy, aclCreateTensor with a FLOAT32 sinks tensor
// of shape (N1,), aclCreateIntArray, the two phases, synchronize, copy back, destroy everything),
// then checked twice (sample_kl_loss_case.h):
//   - against an independent float64 computation of CANN's V2 kernel's formulas: the statistics
//     count the sink in each head's softmax, and the head-summed target is divided by
//     N1 - sum_h exp(sink_h - softmaxMax_h) / softmaxSum_h instead of N1; dI = y - p and the
//     clamped loss as V1;
//   - bit for bit against lig_sparse_indexer_grad_kl_loss_v2_get_workspace_size with
//     LIG_KL_TARGET_CANN on the same data.
//   case 1: TND, FLOAT16, rope, dense statistics with the sinks (the target over all visible keys
//           then sums to 1), some heads' sinks far below their scores
//   case 2: BSND, BFLOAT16, no rope, sparse statistics with the sinks, one row below the 1e-8 clamp
//   case 3: V2 without sinks (sinksOptional = nullptr): V1's results
#include "sample_kl_loss_case.h"

int main() {
    KlCase tnd{"V2 TND fp16 rope sinks", "TND", ACL_FLOAT16, 2, 12, 20, {5, 12}, {9, 20}, 8, 32, 8, 4, 16, 16,
               false, -1, 1.0f, true};
    KlCase bsnd{"V2 BSND bf16 sinks, clamped row", "BSND", ACL_BF16, 2, 6, 10, {}, {}, 16, 64, 0, 8, 32, 8, true, 3,
                8.0f, true};
    KlCase none{"V2 TND fp16 without sinks", "TND", ACL_FLOAT16, 2, 12, 20, {5, 12}, {9, 20}, 8, 32, 8, 4, 16, 16,
                false, -1, 1.0f, false};
    int failed = RunCase(tnd, 3, true) + RunCase(bsnd, 4, true) + RunCase(none, 1, true);
    return failed ? 1 : 0;
}

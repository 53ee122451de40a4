// aclnnSparseLightningIndexerGradKLLoss, called the way CANN's operator sample calls it (device,
// context, stream, aclrtMalloc + aclrtMemcpy, aclCreateTensor, aclCreateIntArray, the two phases,
// synchronize, copy back, destroy everything), then checked twice:
//   - against an independent float64 computation, written here from CANN's documented formulas
//     and its kernel (head-mean target, dI = y - p, the loss with p and y clamped at 1e-8), within
//     the output dtype's rounding;
//   - bit for bit against lig_sparse_indexer_grad_kl_loss with LIG_KL_TARGET_CANN on the same data (the
//     front end adds no arithmetic).
//   case 1: TND, FLOAT16, INT32 indices, rope, sparse mode 3, statistics of the dense attention
//           (sum p < 1, where CANN's dI = y - p is not lig's own y sum(p) - p); the int arrays are
//           destroyed between the phases (CANN reads them in phase 1)
//   case 2: BSND, BFLOAT16, no rope, statistics of the sparse attention over the selected slots,
//           one row's statistics shifted so that its p lies below the 1e-8 clamp, and weights
//           large enough that many y lie below it (the loss then differs from the unclamped one)
#include "sample_kl_loss_case.h"

int main() {
    KlCase tnd{"TND fp16 rope", "TND", ACL_FLOAT16, 2, 12, 20, {5, 12}, {9, 20}, 8, 32, 8, 4, 16, 16, false, -1, 1.0f, false};
    KlCase bsnd{"BSND bf16 clamped row", "BSND", ACL_BF16, 2, 6, 10, {}, {}, 16, 64, 0, 8, 32, 8, true, 3, 8.0f, false};
    int failed = RunCase(tnd, 1, false) + RunCase(bsnd, 2, false);
    return failed ? 1 : 0;
}

/* The CPU backend's registration: its planners, one slot per operator (in operators/; the four
 * forwards share one planner, which walks the parts of the problem it is given). */
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels/kernel_set.h"
#include "backends/cpu/operators/dense_kl_grad_plan.h"
#include "backends/cpu/operators/dense_softmax_lse_plan.h"
#include "backends/cpu/operators/softmax_l1_norm_plan.h"
#include "backends/cpu/operators/indexer_grad_plan.h"
#include "backends/cpu/operators/kl_loss_and_dy_plan.h"
#include "backends/cpu/operators/indexer_plan.h"
#include "backends/cpu/operators/sparse_grad_kl_loss_plan.h"
#include "core/error.h"

static lig_status check_stream(void *stream) {
    if (stream == NULL) return LIG_SUCCESS;
    return lig_fail(LIG_ERR_PARAM_INVALID, "stream: expected NULL (the CPU backend has no streams), got %p", stream);
}

static const char *current_kernel_set(void) {
    const lig_kernel_set *ks = NULL;
    return lig_kernel_set_current(&ks) == LIG_SUCCESS ? ks->name : "";
}

const lig_backend lig_cpu_backend = {
    .name = "cpu",
    .device = LIG_DEVICE_HOST,
    .check_stream = check_stream,
    .plan_indexer_grad = lig_cpu_plan_indexer_grad,
    .plan_indexer = lig_cpu_plan_indexer,
    .plan_indexer_paged = lig_cpu_plan_indexer,
    .plan_quant_indexer = lig_cpu_plan_indexer,
    .plan_quant_logits = lig_cpu_plan_indexer,
    .plan_sparse_logits = lig_cpu_plan_indexer,
    .plan_kl_loss_and_dy = lig_cpu_plan_kl_loss_and_dy,
    .plan_sparse_indexer_grad_kl_loss = lig_cpu_plan_sparse_indexer_grad_kl_loss,
    .plan_dense_indexer_softmax_lse = lig_cpu_plan_dense_indexer_softmax_lse,
    .plan_dense_indexer_kl_loss_grad = lig_cpu_plan_dense_indexer_kl_loss_grad,
    .plan_sparse_flash_mla_softmax_l1_norm = lig_cpu_plan_softmax_l1_norm,
    /* host tensors have ordinal 0 only (lig_create_tensor_on) and phase 2 returns its verdict */
    .check_device = NULL,
    .workspace_status = NULL,
    .status_verdict = NULL,
    .set_kernel_set = lig_kernel_set_force,
    .kernel_set = current_kernel_set,
    .kernel_sets_supported = lig_kernel_sets_supported,
};

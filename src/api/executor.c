#include "api/executor.h"

#include <stdbool.h>
#include <stdlib.h>

#include "core/error.h"

/* Each operator's name in messages (its phase-2 function; the paged forward's by its phase 1) and
 * the phase-1 function that makes its executors. */
static const struct {
    lig_op op;
    const char *name, *maker;
} operators[] = {
    {LIG_OP_INDEXER_GRAD, "lig_indexer_grad", "lig_indexer_grad_get_workspace_size"},
    {LIG_OP_INDEXER, "lig_indexer", "lig_indexer_get_workspace_size"},
    {LIG_OP_INDEXER_PAGED, "lig_indexer_paged", "lig_indexer_paged_get_workspace_size"},
    {LIG_OP_KL_LOSS_AND_DY, "lig_kl_loss_and_dy", "lig_kl_loss_and_dy_get_workspace_size"},
    {LIG_OP_QUANT_INDEXER, "lig_quant_indexer", "lig_quant_indexer_get_workspace_size"},
    {LIG_OP_SPARSE_INDEXER_GRAD_KL_LOSS, "lig_sparse_indexer_grad_kl_loss", "lig_sparse_indexer_grad_kl_loss_get_workspace_size"},
    {LIG_OP_QUANT_LOGITS, "lig_quant_logits", "lig_quant_logits_get_workspace_size"},
    {LIG_OP_DENSE_INDEXER_SOFTMAX_LSE, "lig_dense_indexer_softmax_lse", "lig_dense_indexer_softmax_lse_get_workspace_size"},
    {LIG_OP_SPARSE_LOGITS, "lig_sparse_logits", "lig_sparse_logits_get_workspace_size"},
    {LIG_OP_DENSE_INDEXER_KL_LOSS_GRAD, "lig_dense_indexer_kl_loss_grad", "lig_dense_indexer_kl_loss_grad_get_workspace_size"},
    {LIG_OP_SOFTMAX_L1_NORM, "lig_sparse_flash_mla_softmax_l1_norm",
     "lig_sparse_flash_mla_softmax_l1_norm_get_workspace_size"},
};

static int operator_index(lig_op op) {
    for (int i = 0; i < (int)(sizeof operators / sizeof operators[0]); i++)
        if (operators[i].op == op) return i;
    return -1;
}

static const char *maker_of(lig_op op) {
    const int i = operator_index(op);
    return i < 0 ? "an unknown function" : operators[i].maker;
}

static const char *name_of(lig_op op) {
    const int i = operator_index(op);
    return i < 0 ? "an unknown operator" : operators[i].name;
}

/* The phase-2 entry that runs the executors of `op` (the paged forward's run in lig_indexer). */
static lig_op run_entry_of(lig_op op) { return op == LIG_OP_INDEXER_PAGED ? LIG_OP_INDEXER : op; }

/* Calls the backend's slot for `op` on `problem` (of the slot's type), or leaves *has false when the
 * slot is NULL. The only place that maps an operator to its slot. */
static lig_status call_slot(lig_op op, const lig_backend *b, const void *problem, lig_backend_plan *plan, bool *has) {
    /* one case per slot, since each slot takes its own problem type */
#define CALL_SLOT(slot) return (*has = b->slot != NULL) ? b->slot(problem, plan) : LIG_ERR_INNER
    *has = false;
    switch (op) {
    case LIG_OP_INDEXER_GRAD: CALL_SLOT(plan_indexer_grad);
    case LIG_OP_INDEXER: CALL_SLOT(plan_indexer);
    case LIG_OP_INDEXER_PAGED: CALL_SLOT(plan_indexer_paged);
    case LIG_OP_QUANT_INDEXER: CALL_SLOT(plan_quant_indexer);
    case LIG_OP_QUANT_LOGITS: CALL_SLOT(plan_quant_logits);
    case LIG_OP_KL_LOSS_AND_DY: CALL_SLOT(plan_kl_loss_and_dy);
    case LIG_OP_SPARSE_INDEXER_GRAD_KL_LOSS: CALL_SLOT(plan_sparse_indexer_grad_kl_loss);
    case LIG_OP_DENSE_INDEXER_SOFTMAX_LSE: CALL_SLOT(plan_dense_indexer_softmax_lse);
    case LIG_OP_SPARSE_LOGITS: CALL_SLOT(plan_sparse_logits);
    case LIG_OP_DENSE_INDEXER_KL_LOSS_GRAD: CALL_SLOT(plan_dense_indexer_kl_loss_grad);
    case LIG_OP_SOFTMAX_L1_NORM: CALL_SLOT(plan_sparse_flash_mla_softmax_l1_norm);
    }
#undef CALL_SLOT
    return LIG_ERR_INNER;
}

/* Wraps problem and plan into a new executor (frees both when there is no memory for it). */
static lig_status publish(lig_op op, lig_placement placement, void *problem, void (*free_problem)(void *),
                          const lig_backend_plan *plan, uint64_t *workspace_size, lig_executor **executor) {
    lig_executor *e = malloc(sizeof *e);
    if (!e) {
        plan->free(plan->plan);
        free_problem(problem);
        return lig_fail(LIG_ERR_RUNTIME, "executor: expected memory for an executor, got none");
    }
    *e = (lig_executor){.op = op, .backend = placement.backend, .device_index = placement.device_index, .problem = problem, .free_problem = free_problem, .plan = *plan};
    *workspace_size = plan->workspace_size;
    *executor = e;
    return LIG_SUCCESS;
}

lig_status lig_executor_plan(lig_op op, lig_placement placement, void *problem, void (*free_problem)(void *),
                             uint64_t *workspace_size, lig_executor **executor) {
    const lig_backend *b = placement.backend;
    lig_backend_plan plan = {0};
    bool has;
    lig_status st = call_slot(op, b, problem, &plan, &has);
    if (!has) {
        const char *device = lig_device_name(b->device);
        st = lig_fail(LIG_ERR_PARAM_INVALID,
                      "%s: expected tensors on a device whose backend has %s, got %s tensors: %s has no %s form yet "
                      "(the %s backend has no planner for it)",
                      placement.tensor_name, name_of(op), device, name_of(op), device, b->name);
    }
    if (st != LIG_SUCCESS) {
        free_problem(problem);
        return st;
    }
    return publish(op, placement, problem, free_problem, &plan, workspace_size, executor);
}

lig_status lig_destroy_executor(lig_executor *executor) {
    if (!executor) return LIG_SUCCESS; /* like free(NULL) */
    executor->plan.free(executor->plan.plan);
    executor->free_problem(executor->problem);
    free(executor);
    return LIG_SUCCESS;
}

const char *lig_executor_kernel_set(const lig_executor *executor) {
    return executor ? executor->plan.kernel_set : "";
}

static lig_status check_run(const lig_executor *e, lig_op op, const void *workspace, uint64_t workspace_size,
                            void *stream) {
    if (!e) return lig_fail(LIG_ERR_PARAM_NULLPTR, "executor: expected a plan from %s, got NULL", maker_of(op));
    if (run_entry_of(e->op) != op)
        return lig_fail(LIG_ERR_PARAM_INVALID, "executor: expected a plan from %s, got one from %s", maker_of(op),
                        maker_of(e->op));
    lig_status st = e->backend->check_stream(stream);
    if (st == LIG_SUCCESS && e->backend->check_device) st = e->backend->check_device(e->device_index);
    if (st != LIG_SUCCESS) return st;
    const uint64_t needed = e->plan.workspace_size;
    if (workspace_size < needed)
        return lig_fail(LIG_ERR_PARAM_INVALID, "workspace_size: expected at least %llu bytes (from %s), got %llu",
                        (unsigned long long)needed, maker_of(op), (unsigned long long)workspace_size);
    if (needed > 0 && workspace == NULL)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "workspace: expected a buffer of %llu bytes, got NULL",
                        (unsigned long long)needed);
    return LIG_SUCCESS;
}

lig_status lig_executor_run(lig_executor *executor, lig_op op, void *workspace, uint64_t workspace_size,
                            void *stream) {
    lig_status st = check_run(executor, op, workspace, workspace_size, stream);
    if (st == LIG_SUCCESS) st = executor->plan.run(executor->plan.plan, workspace, stream);
    lig_destroy_executor(executor); /* consumed, success or not */
    return st;
}

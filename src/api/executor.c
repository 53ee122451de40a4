#include "api/executor.h"

#include <stdlib.h>

#include "core/error.h"

/* Name of the phase-1 function that makes executors of `op`, for messages. */
static const char *maker_of(lig_op op) {
    switch (op) {
    case LIG_OP_INDEXER_GRAD: return "lig_indexer_grad_get_workspace_size";
    case LIG_OP_INDEXER: return "lig_indexer_get_workspace_size";
    case LIG_OP_INDEXER_KL_GRAD: return "lig_indexer_kl_grad_get_workspace_size";
    case LIG_OP_QUANT_INDEXER: return "lig_quant_indexer_get_workspace_size";
    case LIG_OP_SPARSE_INDEXER_KL_LOSS: return "lig_sparse_indexer_kl_loss_get_workspace_size";
    case LIG_OP_QUANT_LOGITS: return "lig_quant_logits_get_workspace_size";
    }
    return "an unknown function";
}

lig_status lig_executor_publish(lig_op op, lig_placement placement, void *problem, void (*free_problem)(void *),
                                lig_status planned, const lig_backend_plan *plan, uint64_t *workspace_size,
                                lig_executor **executor) {
    if (planned != LIG_SUCCESS) {
        free_problem(problem);
        return planned;
    }
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
    if (e->op != op)
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

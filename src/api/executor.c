#include "api/executor.h"

#include <stdlib.h>

#include "api/error.h"

lig_executor *lig_executor_create(lig_executor_kind kind, void *plan, void (*free_plan)(void *)) {
    lig_executor *e = malloc(sizeof *e);
    if (!e) {
        free_plan(plan);
        return NULL;
    }
    e->kind = kind;
    e->plan = plan;
    e->free_plan = free_plan;
    return e;
}

const char *lig_executor_kind_maker(lig_executor_kind kind) {
    switch (kind) {
    case LIG_EXECUTOR_INDEXER_GRAD: return "lig_indexer_grad_get_workspace_size";
    case LIG_EXECUTOR_INDEXER: return "lig_indexer_get_workspace_size";
    case LIG_EXECUTOR_INDEXER_KL_GRAD: return "lig_indexer_kl_grad_get_workspace_size";
    }
    return "an unknown function";
}

lig_status lig_destroy_executor(lig_executor *executor) {
    if (!executor) return LIG_SUCCESS; /* like free(NULL) */
    executor->free_plan(executor->plan);
    free(executor);
    return LIG_SUCCESS;
}

void *lig_executor_plan(lig_executor *executor, lig_executor_kind expected, lig_status *status) {
    if (!executor) {
        *status = lig_fail(LIG_ERR_PARAM_NULLPTR, "executor: expected a plan from %s, got NULL",
                           lig_executor_kind_maker(expected));
        return NULL;
    }
    if (executor->kind != expected) {
        *status = lig_fail(LIG_ERR_PARAM_INVALID, "executor: expected a plan from %s, got one from %s",
                           lig_executor_kind_maker(expected), lig_executor_kind_maker(executor->kind));
        return NULL;
    }
    *status = LIG_SUCCESS;
    return executor->plan;
}

lig_status lig_check_run_args(void *workspace, uint64_t workspace_size, uint64_t needed, lig_executor_kind kind,
                              void *stream) {
    if (stream != NULL)
        return lig_fail(LIG_ERR_PARAM_INVALID, "stream: expected NULL (the CPU backend has no streams), got %p", stream);
    if (workspace_size < needed)
        return lig_fail(LIG_ERR_PARAM_INVALID, "workspace_size: expected at least %llu bytes (from %s), got %llu",
                        (unsigned long long)needed, lig_executor_kind_maker(kind), (unsigned long long)workspace_size);
    if (needed > 0 && workspace == NULL)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "workspace: expected a buffer of %llu bytes, got NULL",
                        (unsigned long long)needed);
    return LIG_SUCCESS;
}

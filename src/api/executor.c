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
    }
    return "an unknown function";
}

lig_status lig_destroy_executor(lig_executor *executor) {
    if (!executor) return LIG_SUCCESS; /* like free(NULL) */
    executor->free_plan(executor->plan);
    free(executor);
    return LIG_SUCCESS;
}

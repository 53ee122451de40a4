#include "backends/cpu/operators/plan_alloc.h"

#include <stdlib.h>

#include "core/error.h"
#include "core/size.h"
#include "core/workspace.h"

void *lig_cpu_plan_alloc(size_t bytes, const lig_kernel_set **ks, lig_status *st) {
    if ((*st = lig_kernel_set_current(ks)) != LIG_SUCCESS) return NULL;
    void *plan = calloc(1, bytes);
    if (!plan) *st = lig_fail(LIG_ERR_RUNTIME, "executor: expected memory for a plan, got none");
    return plan;
}

void lig_cpu_plan_free(void *plan) { free(plan); }

lig_status lig_cpu_plan_thread_workspace(uint64_t scratch, int threads, const char *detail, uint64_t *total) {
    *total = lig_ws_total(0, (uint64_t)threads, scratch);
    return lig_size_check(*total, "query", "the bytes of the workspace", detail);
}

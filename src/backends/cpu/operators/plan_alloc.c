#include "backends/cpu/operators/plan_alloc.h"

#include <stdlib.h>

#include "core/error.h"

lig_status lig_cpu_plan_alloc(size_t bytes, const lig_kernel_set **ks, void **plan) {
    const lig_status st = lig_kernel_set_current(ks);
    if (st != LIG_SUCCESS) return st;
    *plan = calloc(1, bytes);
    return *plan ? LIG_SUCCESS : lig_fail(LIG_ERR_RUNTIME, "executor: expected memory for a plan, got none");
}

void lig_cpu_plan_free(void *plan) { free(plan); }

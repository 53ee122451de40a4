/* What every CPU planner starts with: the kernel set in effect and a zeroed plan. */
#ifndef LIG_CPU_OPERATORS_PLAN_ALLOC_H
#define LIG_CPU_OPERATORS_PLAN_ALLOC_H

#include <stddef.h>

#include "backends/cpu/kernels/kernel_set.h"
#include "lig.h"

/* *ks: the set new plans use; *plan: `bytes` of zeroed memory, freed with lig_cpu_plan_free. */
lig_status lig_cpu_plan_alloc(size_t bytes, const lig_kernel_set **ks, void **plan);
void lig_cpu_plan_free(void *plan);

#endif

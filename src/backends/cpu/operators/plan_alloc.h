/* What every CPU planner starts with: the kernel set in effect and a zeroed plan. */
#ifndef LIG_CPU_OPERATORS_PLAN_ALLOC_H
#define LIG_CPU_OPERATORS_PLAN_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "backends/cpu/kernels/kernel_set.h"
#include "lig.h"

/* `bytes` of zeroed memory for a plan, freed with lig_cpu_plan_free, and in *ks the set new plans
 * use; NULL on failure, with its status in *st. */
void *lig_cpu_plan_alloc(size_t bytes, const lig_kernel_set **ks, lig_status *st);
void lig_cpu_plan_free(void *plan);

/* The workspace of a plan whose `threads` threads each take `scratch` bytes, into *total; refused
 * (contract 6.3, naming `query` and `detail`: the extents that made it) when it does not fit. */
lig_status lig_cpu_plan_thread_workspace(uint64_t scratch, int threads, const char *detail, uint64_t *total);

#endif

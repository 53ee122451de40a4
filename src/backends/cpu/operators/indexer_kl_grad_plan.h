/* The CPU plan of the fused KL step: the problem and the thread count phase 1 saw. */
#ifndef LIG_CPU_OPERATORS_INDEXER_KL_GRAD_PLAN_H
#define LIG_CPU_OPERATORS_INDEXER_KL_GRAD_PLAN_H

#include "backends/backend.h"
#include "core/problem.h"

typedef struct lig_cpu_kl_plan {
    const lig_kl_problem *pb;
    int threads;
    uint64_t scratch_at, scratch_stride; /* per-thread row scratch in the workspace */
} lig_cpu_kl_plan;

lig_status lig_cpu_plan_indexer_kl_grad(const lig_kl_problem *problem, lig_backend_plan *out);

#endif

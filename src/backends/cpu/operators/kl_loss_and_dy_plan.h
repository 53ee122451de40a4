/* The CPU plan of the fused KL step: the problem and the thread count phase 1 saw. */
#ifndef LIG_CPU_OPERATORS_KL_LOSS_AND_DY_PLAN_H
#define LIG_CPU_OPERATORS_KL_LOSS_AND_DY_PLAN_H

#include "backends/backend.h"
#include "core/problem.h"

typedef struct lig_cpu_kl_plan {
    const lig_kl_dy_problem *pb;
    int threads;
    uint64_t scratch_at, scratch_stride; /* per-thread row scratch in the workspace */
} lig_cpu_kl_plan;

lig_status lig_cpu_plan_kl_loss_and_dy(const lig_kl_dy_problem *problem, lig_backend_plan *out);

#endif

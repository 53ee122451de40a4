/* The CPU plan of the dense KL gradient (contract 2.9): the backward's plan over the problem's
 * dense slots (its walk, engine, ring and workspace), with the forward's score engine for I and
 * the per-row softmax, target and dI work of dense_kl_grad.c on top. */
#ifndef LIG_CPU_OPERATORS_DENSE_KL_GRAD_PLAN_H
#define LIG_CPU_OPERATORS_DENSE_KL_GRAD_PLAN_H

#include "backends/backend.h"
#include "backends/cpu/operators/fwd_engine.h"
#include "backends/cpu/operators/indexer_grad_plan.h"
#include "core/dense_kl_grad_problem.h"

/* Offsets inside the walk's extra per-thread scratch (each 64-byte aligned). */
typedef struct lig_dense_kl_scratch {
    uint64_t fwd;    /* the forward engine's own scratch */
    uint64_t key;    /* const char *[forward block]: key rows of a block */
    uint64_t score;  /* float[forward block]: I of a block */
    uint64_t dy;     /* float[K]: I, then dI, per visible entry of the unit */
    uint64_t total;
} lig_dense_kl_scratch;

typedef struct lig_cpu_dense_kl_plan {
    lig_cpu_grad_plan grad;    /* the walk; its extra shared region holds double[units] unit losses */
    const lig_dense_kl_grad_problem *pb;
    const lig_fwd_engine *fwd; /* I's scores: the forward's engine, one row per stripe */
    lig_fwd_ctx fctx;
    lig_dense_kl_scratch scratch;
    bool unit_work;            /* some unit exists: the extras are sized */
} lig_cpu_dense_kl_plan;

lig_status lig_cpu_plan_dense_indexer_kl_loss_grad(const lig_dense_kl_grad_problem *problem, lig_backend_plan *out);

/* Phase 2 (dense_kl_grad.c). */
lig_status lig_cpu_run_dense_kl_grad(void *plan, void *workspace, void *stream);

#endif

/* The CPU plan of the KL loss with the main attention's target (contract 2.5): the backward's
 * plan (its walk, engine, ring and workspace) with the loss's own products and scratch on top. */
#ifndef LIG_CPU_OPERATORS_SPARSE_GRAD_KL_LOSS_PLAN_H
#define LIG_CPU_OPERATORS_SPARSE_GRAD_KL_LOSS_PLAN_H

#include "backends/backend.h"
#include "backends/cpu/operators/fwd_engine.h"
#include "backends/cpu/operators/indexer_grad_plan.h"
#include "backends/cpu/operators/teacher_engine.h"
#include "core/problem.h"

/* Offsets inside the walk's extra per-thread scratch (each 64-byte aligned). */
typedef struct lig_kl_loss_scratch {
    uint64_t teacher, fwd;       /* the two engines' own scratch */
    uint64_t key, key_rope;      /* const char *[teacher block]: main key rows of a block */
    uint64_t ikey;               /* const char *[forward block]: index key rows of a block */
    uint64_t scores;             /* float[teacher block * ld]: the teacher's S */
    uint64_t iscore;             /* float[forward block]: I of a block */
    uint64_t stat_m, stat_s;     /* float[N1]: the row's max (or lse) and sum (or 1) */
    uint64_t slot;               /* int64[K]: the unit's counted keys */
    uint64_t mass;               /* float[K]: sum_h P per counted slot */
    uint64_t value;              /* float[K]: I per counted slot */
    uint64_t dy;                 /* float[K]: dI per counted slot */
    uint64_t total;
} lig_kl_loss_scratch;

typedef struct lig_cpu_grad_kl_loss_plan {
    lig_cpu_grad_plan grad;      /* the walk; its extra shared region holds double[units] unit losses */
    const lig_grad_kl_loss_problem *pb;
    lig_teacher_ctx teacher;
    const lig_fwd_engine *fwd;   /* I's scores: the forward's engine, one row per stripe */
    lig_fwd_ctx fctx;
    lig_kl_loss_scratch scratch;
} lig_cpu_grad_kl_loss_plan;

lig_status lig_cpu_plan_sparse_indexer_grad_kl_loss(const lig_grad_kl_loss_problem *problem, lig_backend_plan *out);

#endif

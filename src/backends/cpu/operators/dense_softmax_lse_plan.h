/* The CPU plan of the indexer's dense softmax log-sum-exp (contract 2.7): the forward's score
 * engine (fwd_engine.h), chosen as the forward chooses it, and a walker that folds each row's
 * scores into an online log-sum-exp instead of a top-k (dense_softmax_lse.c). */
#ifndef LIG_CPU_OPERATORS_DENSE_SOFTMAX_LSE_PLAN_H
#define LIG_CPU_OPERATORS_DENSE_SOFTMAX_LSE_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/backend.h"
#include "backends/cpu/operators/fwd_engine.h"
#include "core/dense_lse_problem.h"

typedef struct lig_cpu_dense_lse_plan {
    const lig_dense_lse_problem *pb;
    lig_fwd_ctx ctx;
    const lig_fwd_engine *engine;
    bool own_threads; /* the engine keeps per-thread unit state (tiles): run on lig's threads only */
    bool trivial;     /* D == 0: every visible score is exactly 0, no engine */
    int threads;      /* thread count the scratch was sized for */
    /* byte offsets in one thread's scratch: the block's key rows, the stripe's query rows and
     * weights, the block's scores per row, the engine's part */
    uint64_t key_at, q_at, score_at, engine_at, scratch;
    uint64_t workspace_size;
} lig_cpu_dense_lse_plan;

lig_status lig_cpu_plan_dense_indexer_softmax_lse(const lig_dense_lse_problem *problem, lig_backend_plan *out);

#endif

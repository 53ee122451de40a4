/* The CPU plan of the main attention's head-mean softmax target over compressed keys (contract
 * 2.10): the KL loss's teacher engine (teacher_engine.h: the scores of one row's heads at a block of
 * keys, and each key's probability mass) and a walker over the valid rows (softmax_l1_norm.c). */
#ifndef LIG_CPU_OPERATORS_SOFTMAX_L1_NORM_PLAN_H
#define LIG_CPU_OPERATORS_SOFTMAX_L1_NORM_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/backend.h"
#include "backends/cpu/operators/teacher_engine.h"
#include "core/softmax_l1_norm_problem.h"

typedef struct lig_cpu_l1_norm_plan {
    const lig_l1_norm_problem *pb;
    lig_teacher_ctx teacher;
    bool bf16_threads; /* the teacher's bf16 product keeps per-thread state (tiles): lig's threads only */
    int threads;       /* thread count the scratch was sized for */
    /* byte offsets in one thread's scratch: the teacher's own, a block's key rows and their
     * scores, the row's lse and unit sums per head, a block's masses and output columns */
    uint64_t teacher_at, key_at, score_at, lse_at, one_at, mass_at, column_at, scratch;
    uint64_t workspace_size;
} lig_cpu_l1_norm_plan;

lig_status lig_cpu_plan_softmax_l1_norm(const lig_l1_norm_problem *problem, lig_backend_plan *out);

#endif

/* The problem of the dense KL gradient over compressed keys (docs/contract.md 2.9): the
 * backward's problem in its dense form (every visible entry of a row is a slot, in key order; no
 * sparse_indices), the per-row visible prefix of the compressed rule (contract 4.1,
 * core/compressed_keys.h) as the problem's key ranges, and the target, lse, softmax and loss. */
#ifndef LIG_CORE_DENSE_KL_GRAD_PROBLEM_H
#define LIG_CORE_DENSE_KL_GRAD_PROBLEM_H

#include <stdint.h>

#include "core/problem.h"

typedef struct lig_dense_kl_grad_problem {
    lig_grad_problem g;       /* g.dense; g.pr.ranges points at `ranges`; g.pr.K = the longest batch's entries */
    lig_key_ranges ranges;    /* per valid row r (owned): entries 0 .. hi[r] (lo[r] = 0), the compressed prefix */
    lig_view4 target;         /* FLOAT32: entry j of (b, t, g) at lig_q_row_ptr(&target, pr, b, t, g) + j * dim */
    lig_view4 softmax_out;    /* FLOAT32, addressed as target */
    int64_t width;            /* the entries' axis of target and softmax_out (>= g.pr.K) */
    lig_view4 lse;            /* FLOAT32, (b, t, g) at lig_q_row_ptr(&lse, pr, b, t, g) */
    char *loss;               /* one FLOAT32, or NULL */
} lig_dense_kl_grad_problem;

#endif

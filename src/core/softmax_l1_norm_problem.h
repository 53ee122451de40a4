/* The problem of the main attention's head-mean softmax target over compressed keys (docs/contract.md
 * 2.10, CANN's SparseFlashMlaSoftmaxL1Norm): the main attention's query (N1 heads) and its one latent
 * key head, its forward log-sum-exp per head, the compressed-key rule of each batch (contract 4.1,
 * core/compressed_keys.h) and the output, dense (a column per compressed entry) or sparse (a column
 * per slot of sparse_indices). The lengths are resolved with no band; which entries a row sees is
 * the compressed rule's prefix. In pr, N1 is the main heads, N2 = 1, G = N1 and D the head dim. */
#ifndef LIG_CORE_SOFTMAX_L1_NORM_PROBLEM_H
#define LIG_CORE_SOFTMAX_L1_NORM_PROBLEM_H

#include <stdbool.h>
#include <stdint.h>

#include "core/compressed_keys.h"
#include "core/problem.h"

typedef struct lig_l1_norm_problem {
    lig_problem pr;      /* pr.K: the output's columns (dense: W; sparse: the slots K) */
    lig_view4 q, k;      /* query [rows][N1][D], key [rows][1][D] */
    lig_view4 lse;       /* FLOAT32, element (b, t, h) at lig_q_row_ptr(&lse, pr, b, t, h) */
    lig_view4 idx;       /* sparse: slot j of (b, t) at lig_q_row_ptr(&idx, pr, b, t, 0) + j * dim */
    lig_view4 out;       /* FLOAT32, column c of (b, t) at lig_q_row_ptr(&out, pr, b, t, 0) + c * dim */
    bool sparse;
    float scale;         /* softmax_scale rounded once to fp32 */
    lig_compressed_rule rule; /* residuals owned; all 0 when cmp_residual_k is absent */
} lig_l1_norm_problem;

#endif

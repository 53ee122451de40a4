/* The problem of the indexer's dense softmax log-sum-exp over compressed keys (docs/contract.md
 * 2.7): the forward's query, key and weights, the compressed-key rule of each batch (contract 4.1,
 * core/compressed_keys.h) and the lse output. The lengths are resolved with no band (every key of
 * a batch exists for every valid row); which entries a row sees is the compressed rule's prefix. */
#ifndef LIG_CORE_DENSE_LSE_PROBLEM_H
#define LIG_CORE_DENSE_LSE_PROBLEM_H

#include <stdint.h>

#include "core/compressed_keys.h"
#include "core/problem.h"

typedef struct lig_dense_lse_problem {
    lig_problem pr;      /* pr.K = 0: nothing is selected */
    lig_view4 q, k, w;   /* w's dtype is the query's or FLOAT32 */
    lig_view4 lse;       /* FLOAT32, element (b, t, g) at lig_q_row_ptr(&lse, pr, b, t, g) */
    lig_compressed_rule rule; /* residuals owned; all 0 when cmp_residual_k is absent */
} lig_dense_lse_problem;

/* The entries row t of batch b sees: 0 .. result-1 (the one compressed rule). */
static inline int64_t lig_dense_lse_visible(const lig_dense_lse_problem *p, int64_t b, int64_t t) {
    return lig_compressed_rule_visible(&p->rule, &p->pr, b, t);
}

#endif

/* The fused training step's plan: rows of K slots along the last axis of same-shaped
 * tensors of any rank (sparse_values, the target p, dy, optionally sparse_indices). */
#ifndef LIG_PLAN_INDEXER_KL_GRAD_PLAN_H
#define LIG_PLAN_INDEXER_KL_GRAD_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "lig.h"

typedef struct lig_slot_view {
    char *data;
    lig_dtype dtype;
    int64_t esize;
    int64_t strides[LIG_MAX_DIMS]; /* in elements; the last one walks the slots */
} lig_slot_view;

typedef struct lig_indexer_kl_grad_plan {
    int64_t ndim;                /* >= 1 */
    int64_t shape[LIG_MAX_DIMS];
    int64_t rows, K;             /* rows = product of all extents but the last */
    lig_slot_view values, target, dy, indices;
    bool has_indices;
    char *loss;                  /* one FLOAT32 */
    int threads;
    uint64_t workspace_size;     /* double per row (for an ordered sum) + alignment; 0 if no row */
} lig_indexer_kl_grad_plan;

/* Element offset (in elements) of slot 0 of row r in a view. */
static inline int64_t lig_slot_row_offset(const lig_indexer_kl_grad_plan *p, const lig_slot_view *v, int64_t r) {
    int64_t off = 0;
    for (int64_t d = p->ndim - 2; d >= 0; d--) {
        const int64_t i = r % p->shape[d];
        r /= p->shape[d];
        off += i * v->strides[d];
    }
    return off;
}

#endif

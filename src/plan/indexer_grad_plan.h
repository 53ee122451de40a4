/* The backward's plan: everything phase 1 decided, in a form phase 2 runs without
 * re-deriving anything. */
#ifndef LIG_PLAN_INDEXER_GRAD_PLAN_H
#define LIG_PLAN_INDEXER_GRAD_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan/problem.h"

/* Byte offsets of the workspace regions (after aligning its base to 64 bytes). */
typedef struct lig_grad_workspace_layout {
    uint64_t dk_acc;      /* float[key_rows * N2 * D]: dK accumulated in fp32 */
    /* deterministic: a ring of ring_units buffers of unit_cap slots each */
    uint64_t ring;        /* float[ring_units * unit_cap * D]: per-slot dK contributions */
    uint64_t ring_key;    /* int64[ring_units * unit_cap]: accumulator row of each slot */
    uint64_t ring_count;  /* int64[ring_units]: slots in each buffer */
    uint64_t ring_ready;  /* int64[ring_units]: the unit each buffer holds, once complete */
    /* non-deterministic */
    uint64_t locks;       /* uint32[key_rows * N2]: per key-row spin locks */
    uint64_t scratch;     /* per-thread scratch, scratch_stride bytes each */
    uint64_t scratch_stride;
    uint64_t total;       /* what phase 1 reports; 0 for an empty problem */
} lig_grad_workspace_layout;

/* Slots are converted and multiplied in blocks of this many keys (a multiple of the
 * GEMM micro-kernel's 6 rows). */
#define LIG_GRAD_BLOCK 48

/* Byte offsets inside one thread's scratch (each region 64-byte aligned). */
typedef struct lig_grad_scratch_layout {
    uint64_t q;      /* float[G*D]: the unit's query heads in fp32 */
    uint64_t qt;     /* float[D*G]: the same, transposed (the scores' B panel) */
    uint64_t dq;     /* float[G*D]: dQ accumulators */
    uint64_t kp;     /* float[BLOCK*D]: gathered key rows of one block in fp32 */
    uint64_t tile;   /* float[BLOCK*D]: dK contributions of one block (when not written to the pool) */
    uint64_t a;      /* float[BLOCK*G]: scores S^T, then the gated coefficients A^T */
    uint64_t w;      /* float[G] */
    uint64_t dw;     /* float[G] */
    uint64_t dy;     /* float[BLOCK] */
    uint64_t key;    /* int64[BLOCK]: accumulator rows of the block's keys */
    uint64_t total;
} lig_grad_scratch_layout;

lig_grad_scratch_layout lig_grad_scratch_layout_for(int64_t G, int64_t D);

typedef struct lig_indexer_grad_plan {
    lig_problem pr;
    bool deterministic;
    bool empty; /* nothing to multiply: outputs are zeros after the index checks */
    lig_view4 q, k, w, dy, idx, dq, dk, dw;
    int threads;        /* thread count the scratch was sized for */
    int64_t ring_units; /* deterministic: buffers in the commit ring (2 per thread + 2) */
    int64_t unit_cap;   /* deterministic: slots per buffer; larger units add directly */
    lig_grad_workspace_layout ws;
} lig_indexer_grad_plan;

/* Sizes the workspace of a validated plan (fills threads, ring_units, unit_cap and ws). */
void lig_indexer_grad_plan_workspace(lig_indexer_grad_plan *plan, int threads);

#endif

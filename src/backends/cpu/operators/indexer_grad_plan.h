/* The CPU backward's plan: everything phase 1 decided (kernel set, engine, thread count, ring
 * capacity, workspace layout), in a form phase 2 runs without re-deriving anything. */
#ifndef LIG_CPU_OPERATORS_INDEXER_GRAD_PLAN_H
#define LIG_CPU_OPERATORS_INDEXER_GRAD_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/backend.h"
#include "backends/cpu/operators/grad_engine.h"
#include "core/problem.h"

/* Byte offsets of the workspace regions (after aligning its base to 64 bytes). */
typedef struct lig_grad_workspace_layout {
    uint64_t dk_acc;      /* float[key_rows * N2 * D]: dK accumulated in fp32 */
    /* deterministic: the commit ring (see indexer_grad.c) */
    uint64_t chunk_base;  /* int64[units + 1]: the ring sequence number of each unit's first chunk */
    uint64_t ring;        /* float[ring_chunks][block][D]: per-slot dK contributions */
    uint64_t ring_scale;  /* float[ring_chunks][block]: their scales */
    uint64_t ring_key;    /* int64[ring_chunks][block]: accumulator row of each slot */
    uint64_t ring_count;  /* int64[ring_chunks]: slots in each chunk */
    uint64_t ring_ready;  /* int64[ring_chunks], by sequence number mod ring_chunks: the chunk published */
    uint64_t ring_buffer; /* int64[ring_chunks], likewise: the buffer that holds it */
    uint64_t free_stack;  /* int64[ring_chunks]: the free buffers */
    /* non-deterministic */
    uint64_t locks;       /* uint32[key_rows * N2]: per key-row spin locks */
    uint64_t extra;       /* the operator built on the walk: its own shared region (extra_ws bytes) */
    uint64_t scratch;     /* per-thread scratch, scratch_stride bytes each */
    uint64_t scratch_stride;
    uint64_t total;       /* what phase 1 reports; 0 for an empty problem */
} lig_grad_workspace_layout;

/* Byte offsets inside one thread's scratch: the operator's block lists (two: the block being
 * computed and the next), then the engine's. */
typedef struct lig_grad_scratch_layout {
    uint64_t key;     /* const char *[2][block]: key rows of the blocks' slots */
    uint64_t dy;      /* float[2][block] */
    uint64_t acc_row; /* int64[2][block]: accumulator rows of the blocks' slots */
    uint64_t contrib; /* float[block][D]: contributions (non-deterministic; the ring otherwise) */
    uint64_t scale;   /* float[block] (non-deterministic) */
    uint64_t engine;
    uint64_t extra;   /* the operator built on the walk: extra_scratch bytes */
    uint64_t total;
} lig_grad_scratch_layout;

typedef struct lig_cpu_grad_plan {
    const lig_grad_problem *pb;
    lig_grad_ctx ctx;
    const lig_grad_engine *engine;
    bool empty;          /* nothing to multiply: outputs are zeros after the index checks */
    bool own_threads;    /* the engine keeps per-thread tile state (AMX): run on lig's threads only */
    int threads;         /* thread count the scratch was sized for */
    int64_t ring_chunks; /* deterministic: chunk buffers in the commit ring */
    /* An operator that computes dy itself (the KL loss) asks for more workspace: a shared region,
     * per-thread scratch, and, when its own products run on bf16 units with per-thread state, the
     * set's thread setup around every thread's units. With extras, an empty problem keeps them. */
    uint64_t extra_ws, extra_scratch;
    bool extra_bf16_threads;
    lig_grad_scratch_layout scratch;
    lig_grad_workspace_layout ws;
} lig_cpu_grad_plan;

lig_status lig_cpu_plan_indexer_grad(const lig_grad_problem *problem, lig_backend_plan *out);

/* The backward's plan for `problem` on the set `ks`, with the extras (see above) of an operator
 * built on it; what lig_cpu_plan_indexer_grad does before it publishes. */
lig_status lig_cpu_grad_plan_init(lig_cpu_grad_plan *p, const lig_grad_problem *problem, const lig_kernel_set *ks,
                                  uint64_t extra_ws, uint64_t extra_scratch, bool extra_bf16_threads);

/* Where dy comes from: NULL for the backward (the dy tensor), else an operator that computes it
 * per unit (the KL loss). unit_dy runs on the thread that then walks unit u: it returns the fp32
 * dy of the unit's counted slots, in slot order (the slots the index pass counts), computed in
 * the thread's extra scratch. */
typedef struct lig_grad_dy_source {
    void *ctx;
    const float *(*unit_dy)(void *ctx, char *extra_scratch, int64_t u, const lig_unit *x);
} lig_grad_dy_source;

/* Phase 2 of the backward and of the operators built on it (indexer_grad.c): the index pass, the
 * fills, the units through the engine with dy from `source`, dK through the ring or the locks.
 * `flops` sizes the thread count. With an empty plan only the index pass and the zero fills run,
 * then `source` (when given) once per unit for its own outputs, its dy unused. */
lig_status lig_cpu_grad_execute(const lig_cpu_grad_plan *p, void *workspace, const lig_grad_dy_source *source,
                                double flops);

/* The thread count a phase 2 of `flops` uses (at most the plan's). */
int lig_cpu_grad_threads(const lig_cpu_grad_plan *p, double flops);

/* Phase 2 (indexer_grad.c). */
lig_status lig_cpu_run_indexer_grad(void *plan, void *workspace, void *stream);

/* The index pass (indexer_grad_index_pass.c): reads every index of every valid row and fails,
 * naming the lowest bad slot, on a value < -1 or >= Lk; nothing is written before it passes.
 * With chunk_base (deterministic), also numbers every unit's chunks of counted slots:
 * chunk_base[u] is the sequence number of unit u's first chunk, chunk_base[units] the total. */
lig_status lig_grad_index_pass(const lig_cpu_grad_plan *p, int threads, int64_t *chunk_base);

#endif

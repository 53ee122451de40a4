/* The CPU forward's plan, for every forward operator (contract 2.1, 2.4, 2.6): the engine, the
 * scratch and the walker for the parts of the problem present (the words for the pieces of work:
 * docs/architecture.md "Words for work"). */
#ifndef LIG_CPU_OPERATORS_INDEXER_PLAN_H
#define LIG_CPU_OPERATORS_INDEXER_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/backend.h"
#include "backends/cpu/operators/fwd_engine.h"
#include "backends/cpu/operators/fwd_split.h"
#include "core/problem.h"

/* Byte offsets inside one thread's scratch: the operator's block list and top-k, then the
 * engine's. */
typedef struct lig_fwd_scratch_layout {
    uint64_t key;   /* const char *[2][block]: the block's key rows, then their scales (quantized;
                     * sized for every forward, a few pointers) */
    uint64_t q;     /* const char *[3][rows]: the stripe's query rows, weights and query scales */
    uint64_t score; /* float[rows][block]: I of the block's keys, per row */
    uint64_t topk;  /* rows x topk_bytes: each row's top-k */
    uint64_t topk_bytes; /* lig_topk_scratch_bytes(heap_cap), 64-byte aligned */
    uint64_t engine;
    uint64_t floor; /* the thread's bound from its earlier slices of a stripe (indexer.c) */
    uint64_t seg;   /* the sparse logits: lig_sparse_segment[block] (sparse_logits_walk.h) */
    uint64_t total;
    /* The workspace's shared part, before the threads' scratch (fwd_split.h): the sliced stripes'
     * kept candidates (heap_cap per slot), then their counts (one per slot). */
    uint64_t cand, count, threads_at;
} lig_fwd_scratch_layout;

/* How phase 2 covers the units, picked once from the parts of the problem and the plan; each walk
 * hands its jobs to the threads through one shared counter. */
typedef enum lig_fwd_walk {
    LIG_FWD_WALK_NONE,    /* no valid row */
    LIG_FWD_WALK_TRIVIAL, /* D, N1 or the keys are 0: no engine, every visible score is exactly 0 */
    LIG_FWD_WALK_PIECES,  /* a job per piece of a caller's schedule (the logits alone) */
    LIG_FWD_WALK_STRIPES, /* a job per stripe_rows rows of a key head, a stripe per batch they reach */
    LIG_FWD_WALK_SPLIT,   /* few rows (decode): a job per (stripe, slice) of the listed stripes, then
                           * a job per row of the sliced ones (the merge) */
    LIG_FWD_WALK_SPARSE   /* the sparse logits: a job per stripe_rows rows of a key head, over their
                           * chosen blocks (sparse_logits_walk.h) */
} lig_fwd_walk;

typedef struct lig_cpu_fwd_plan {
    const lig_fwd_problem *pb;
    lig_fwd_ctx ctx;
    const lig_fwd_engine *engine;
    lig_fwd_walk walk;
    bool own_threads;    /* the engine keeps per-thread tile state (AMX): run on lig's threads only */
    int64_t heap_cap;    /* min(K, longest key length): no unit keeps more */
    int threads;         /* thread count the scratch was sized for */
    int64_t stripe_rows; /* rows per job of the stripes walk (ctx.rows, which sizes the scratch, may be
                          * more: the split walk's stripes) */
    lig_fwd_stripes split; /* n > 0: the split walk's stripes (few rows), perhaps sliced along the keys */
    lig_fwd_scratch_layout scratch;
    uint64_t workspace_size; /* 0 when there is no valid row or the problem is trivial */
} lig_cpu_fwd_plan;

lig_status lig_cpu_plan_indexer(const lig_fwd_problem *problem, lig_backend_plan *out);
lig_status lig_cpu_run_indexer(void *plan, void *workspace, void *stream);

#endif

/* The forward's plan (LightningIndexer: scores + top-k, SPEC 1.1). */
#ifndef LIG_PLAN_INDEXER_PLAN_H
#define LIG_PLAN_INDEXER_PLAN_H

#include "plan/problem.h"

/* Keys are scored in blocks of this many. */
#define LIG_FWD_BLOCK 48

/* A selection candidate: its fp32 score and its batch-local key index. */
typedef struct lig_candidate {
    float score;
    int64_t key;
} lig_candidate;

/* Byte offsets inside one thread's scratch. */
typedef struct lig_fwd_scratch_layout {
    uint64_t qt;    /* float[D*G]: the unit's query heads in fp32, transposed */
    uint64_t w;     /* float[G] */
    uint64_t kp;    /* float[BLOCK*D]: one block of key rows in fp32 */
    uint64_t a;     /* float[BLOCK*G]: per-head scores of the block, S^T */
    uint64_t score; /* float[BLOCK]: I of the block's keys */
    uint64_t heap;  /* lig_candidate[heap_cap]: the best keys so far */
    uint64_t total;
} lig_fwd_scratch_layout;

typedef struct lig_indexer_plan {
    lig_problem pr;           /* pr.K = sparse_count */
    lig_view4 q, k, w, idx, val;
    bool has_values;
    bool trivial;             /* D, N1 or S2 is 0: every visible score is exactly 0 */
    int64_t heap_cap;         /* min(K, longest key length): no unit keeps more */
    int threads;              /* thread count the scratch was sized for */
    uint64_t scratch_stride;
    uint64_t workspace_size;  /* 0 when there is no valid row or the problem is trivial */
} lig_indexer_plan;

lig_fwd_scratch_layout lig_fwd_scratch_layout_for(int64_t G, int64_t D, int64_t heap_cap);
void lig_indexer_plan_workspace(lig_indexer_plan *plan, int threads);

#endif

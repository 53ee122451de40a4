/* The sparse logits' walk on the CPU (docs/contract.md 2.8): the forward's stripes (a few rows of one
 * key head, scored together by the plan's engine, indexer_plan.h), each over the union of its rows'
 * chosen blocks instead of a key range, so that a block two rows share is read and decoded once. A
 * row's score of a key does not depend on the other keys or rows of the engine's call (contract
 * 2.4, 2.6), so every value is lig_quant_logits' logit to the bit. */
#ifndef LIG_CPU_OPERATORS_SPARSE_LOGITS_WALK_H
#define LIG_CPU_OPERATORS_SPARSE_LOGITS_WALK_H

#include <stdint.h>

#include "backends/cpu/operators/indexer_plan.h"

/* One run of keys of one chosen block inside an engine call: keys key0 .. key0 + n - 1, at position
 * `at` of the call's block; slot[i] is the block's position in stripe row i's list (-1: row i did
 * not choose it), so that key s goes to column slot[i] * block_kv + (s - start). */
typedef struct lig_sparse_segment {
    int64_t key0, start, n, at;
    int64_t slot[LIG_FWD_MAX_ROWS];
} lig_sparse_segment;

/* Jobs of the walk: one per stripe_rows rows of a key head, as the stripes walk counts them. */
int64_t lig_sparse_jobs(const lig_cpu_fwd_plan *p);

/* Job v, on thread scratch s (the plan's layout, with its segments). */
void lig_sparse_job(const lig_cpu_fwd_plan *p, char *s, int64_t v);

/* A trivial problem (D, N1 or the keys are 0): 0 in every scored column, -inf elsewhere. */
void lig_sparse_trivial(const lig_fwd_problem *pb);

/* Phase 2's check before anything is written: the table entries of the cache blocks that hold a
 * key some row scores (the rows' chosen blocks within their ranges) name blocks of the cache. */
lig_status lig_sparse_check_table(const lig_cpu_fwd_plan *p);

#endif

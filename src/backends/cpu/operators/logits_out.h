/* The logits operator's outputs on the CPU (docs/contract.md 2.6): a row's scores stored into its
 * logits columns as the walk makes them (indexer.c), the -inf of the columns no row scores
 * (clean_logits), the zeros of a trivial problem, and phase 2's table check over the blocks that
 * hold the keys each row scores. */
#ifndef LIG_CPU_OPERATORS_LOGITS_OUT_H
#define LIG_CPU_OPERATORS_LOGITS_OUT_H

#include <stdint.h>
#include <string.h>

#include "backends/cpu/runtime/first_failure.h"
#include "core/fwd_problem.h"

/* Column of key `key` in unit x's logits row (compressed: counted from the row's first key). */
static inline float *lig_logits_at(const lig_fwd_problem *pb, const lig_unit *x, int64_t key) {
    const lig_logits_out *L = pb->logits;
    char *row = lig_q_row_ptr(&L->view, &pb->pr, x->b, x->t, x->g);
    const int64_t col = L->compressed ? key - x->lo : key;
    return (float *)(void *)(row + (size_t)(col * L->view.dim) * sizeof(float));
}

/* The scores of keys key0 .. key0 + n - 1 (all scored by unit x) into their columns, as they are. */
static inline void lig_logits_store(const lig_fwd_problem *pb, const lig_unit *x, const float *score, int64_t n,
                                    int64_t key0) {
    float *dst = lig_logits_at(pb, x, key0);
    const int64_t step = pb->logits->view.dim;
    if (step == 1) memcpy(dst, score, sizeof(float) * (size_t)n);
    else
        for (int64_t j = 0; j < n; j++) dst[j * step] = score[j];
}

/* clean_logits: -inf into every column no unit scores (before the walk, which writes the others). */
void lig_logits_clean(const lig_fwd_problem *pb, int threads);

/* A trivial problem (D, N1 or the keys are 0): every scored column is exactly 0. */
void lig_logits_zero(const lig_fwd_problem *pb);

/* The first row (item) whose range touches a block whose table entry (slot: the block's position in
 * the batch's table, int_value: the entry) is outside [0, num_blocks); item INT64_MAX: none. */
lig_failure lig_logits_scan_table(const lig_fwd_problem *pb, int threads);

#endif

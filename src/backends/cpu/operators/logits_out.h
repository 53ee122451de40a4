/* The logits operator's outputs on the CPU (docs/contract.md 2.6): a row's scores stored into its
 * logits columns as the walk makes them (indexer.c), the -inf of the columns no row scores
 * (clean_logits), the zeros of a trivial problem, and phase 2's table check over the blocks that
 * hold the keys each row scores. FLOAT32 logits take the fp32 scores as they are; BFLOAT16 logits
 * (DeepGEMM's logits_dtype=torch.bfloat16) take each score rounded once, to nearest even, so they
 * are bit for bit the FLOAT32 logits rounded. */
#ifndef LIG_CPU_OPERATORS_LOGITS_OUT_H
#define LIG_CPU_OPERATORS_LOGITS_OUT_H

#include <stdint.h>
#include <string.h>

#include "backends/cpu/runtime/first_failure.h"
#include "core/fwd_problem.h"
#include "core/half_bits.h"

/* Column of key `key` in unit x's logits row (compressed: counted from the row's first key). */
static inline char *lig_logits_at(const lig_fwd_problem *pb, const lig_unit *x, int64_t key) {
    const lig_logits_out *L = pb->logits;
    char *row = lig_q_row_ptr(&L->view, &pb->pr, x->b, x->t, x->g);
    const int64_t col = L->compressed ? key - x->lo : key;
    return row + (size_t)(col * L->view.dim) * L->view.esize;
}

/* n values into the columns at dst (column stride `step` elements) of a logits tensor of `dtype`. */
static inline void lig_logits_put(char *dst, lig_dtype dtype, int64_t step, const float *v, int64_t n) {
    if (dtype == LIG_BFLOAT16) {
        for (int64_t j = 0; j < n; j++) {
            const uint16_t h = lig_f32_to_bf16(v[j]);
            memcpy(dst + (size_t)(j * step) * sizeof h, &h, sizeof h);
        }
    } else if (step == 1) {
        memcpy(dst, v, sizeof(float) * (size_t)n);
    } else {
        for (int64_t j = 0; j < n; j++) memcpy(dst + (size_t)(j * step) * sizeof(float), &v[j], sizeof(float));
    }
}

/* The scores of keys key0 .. key0 + n - 1 (all scored by unit x) into their columns. */
static inline void lig_logits_store(const lig_fwd_problem *pb, const lig_unit *x, const float *score, int64_t n,
                                    int64_t key0) {
    lig_logits_put(lig_logits_at(pb, x, key0), pb->logits->view.dtype, pb->logits->view.dim, score, n);
}

/* clean_logits: -inf into every column no unit scores (before the walk, which writes the others). */
void lig_logits_clean(const lig_fwd_problem *pb, int threads);

/* A trivial problem (D, N1 or the keys are 0): every scored column is exactly 0. */
void lig_logits_zero(const lig_fwd_problem *pb);

/* The first row (item) whose range touches a block whose table entry (slot: the block's position in
 * the batch's table, int_value: the entry) is outside [0, num_blocks); item INT64_MAX: none. */
lig_failure lig_logits_scan_table(const lig_fwd_problem *pb, int threads);

#endif

/*
 * Float64 reference of the quantized forward (docs/contract.md 2.4), written from the contract
 * only. For query row t, head h of key head g and key s:
 *     I[t,g,s] = sum_{h in g} w[t,h] * ReLU( sq[t,h] * sk[s,g] * (q[t,h,:] . k[s,g,:]) )
 * with ReLU(x) = x > 0 ? x : 0 as a select (a NaN product adds exactly 0). q and k hold the
 * decoded values of the FP8 or INT8 codes: every product is exact in float64, and so is the dot
 * for the test sizes (FP8 products are multiples of 2^-18 below 2^18, INT8 ones integers below
 * 2^15: D * 2^36 stays below 2^53 for D < 2^17), so the only roundings are the scale products and
 * the head sum, in float64.
 *
 * Arrays are logical and contiguous (the problem and row bookkeeping are indexer_ref.h's):
 *   q [rows_q][N1][D]   k [rows_k][N2][D]   w, sq [rows_q][N1] (sq may be NULL: all 1)
 *   sk [rows_k][N2]     idx, values [rows_q][N2][K]
 * Selection as the forward's: the K best visible keys by ref_fwd_better (NaN as -inf, ties to the
 * lower key), then -1 / -inf; invalid rows -1 / -inf everywhere.
 */
#ifndef LIG_TESTS_INDEXER_QUANT_REF_H
#define LIG_TESTS_INDEXER_QUANT_REF_H

#include <stdint.h>

#include "reference/indexer_ref.h"

typedef struct ref_quant_data {
    const double *q, *k, *w, *sq, *sk;
} ref_quant_data;

/* The score of key s (batch-local, existing) for valid row `row`, key head g. `mag` (may be NULL)
 * receives sum_h |w| |sq| |sk| sum_d |q_d k_d| over the finite terms: the size of everything the
 * fp32 computation rounds, for error bounds. */
double ref_quant_score(const ref_problem *p, const ref_quant_data *x, int64_t row, const ref_row *info, int64_t g,
                       int64_t s, double *mag);

/* The whole forward (requires ref_seq_ok(p)). */
void ref_quant_forward(const ref_problem *p, const ref_quant_data *x, int64_t *idx, double *values);

#endif /* LIG_TESTS_INDEXER_QUANT_REF_H */

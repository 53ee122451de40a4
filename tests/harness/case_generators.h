/*
 * Random problem generation (no library calls): sequence lengths, and data whose slots mix
 * counted keys, -1 padding, masked (invisible) keys and duplicates, with NaN/Inf/garbage
 * "poison" wherever the operator must not look.
 */
#ifndef LIG_TESTS_HARNESS_CASE_GENERATORS_H
#define LIG_TESTS_HARNESS_CASE_GENERATORS_H

#include <stdint.h>

#include "rng.h"
#include "problem_case.h"

typedef struct gen_opts {
    int grid;           /* 1: integers in [-grid_range, grid_range] / 8 (exact everywhere) */
    int grid_range;
    double p_pad;       /* share of slots set to -1 */
    double p_mask;      /* share of slots pointing at existing but invisible keys */
    double p_dup;       /* share of slots repeating an earlier slot of the row */
    int tail_pad;       /* -1 only as a tail (like the forward writes) instead of scattered */
    int poison;         /* NaN/Inf dy in skipped slots, garbage indices and NaN dy/q/w in invalid
                           rows, NaN in keys that do not exist */
    double min_abs_s;   /* continuous data: counted slots with |S| below this (any head) become -1 */
    int64_t dup_pool;   /* > 0: visible picks come from the first dup_pool visible keys */
} gen_opts;

void gen_opts_default(gen_opts *o);

/* BSND: allocates the case (tc_alloc) and draws lengths 0..S for the arrays that are present
 * (has_seq_q / has_seq_k set by the caller). Full lengths are drawn often. */
void gen_bsnd(th_rng *r, tcase *tc);

/* TND: draws B batch lengths (0..max_q / 0..max_k, some empty), sets T1/T2 to the totals plus
 * extra rows past the last end, sets both has_seq flags and allocates the case. */
void gen_tnd(th_rng *r, tcase *tc, int64_t max_q, int64_t max_k, int64_t extra_q, int64_t extra_k);

/* tnd: gen_tnd(r, tc, s1, s2, extra_q, extra_k). Otherwise BSND with S1 = s1, S2 = s2 and both
 * length arrays present when with_seq (absent otherwise), then gen_bsnd. */
void gen_layout(th_rng *r, tcase *tc, int tnd, int64_t s1, int64_t s2, int64_t extra_q, int64_t extra_k,
                int with_seq);

/* The matrix tests' problem for variant v (backward and forward matrices): tc_init, the given
 * dtype, index dtype, mode and N2; N1, D, K (cycling through Ks[0..nK)), B, length dtype, short
 * form, stride patterns and bands cycled by v; then the layout's lengths (gen_bsnd / gen_tnd). */
void gen_matrix_shape(th_rng *r, tcase *tc, ref_layout layout, lig_dtype dtype, int64_t mode, lig_dtype idx_dtype,
                      int64_t n2, int v, const int64_t *Ks, int nK);

/* B = 1024 small batches (N1 = 2, N2 = 1, D = 4, K = 4, FLOAT16): BSND with S1 = 3, S2 = 5 and
 * both length arrays, or TND with lengths up to 3 / 5 and 2 rows past each last end (tc_init,
 * then the lengths; the caller fills the data). */
void gen_batch_1024(th_rng *r, tcase *tc, int tnd);

/* DeepSeek-V3.2's indexer heads: tc_init, N1 = 64, N2 = 1, D = 128, BFLOAT16, causal (mode 3),
 * indices in the short form. B, K, the layout and the data are the caller's. */
void gen_deepseek_heads(tcase *tc);

/* A backward problem where summation order matters: B = 2, causal, D = 24, K = 16, S about 200,
 * and every row picks among the first 3 visible keys (heavy duplicates: many units scatter into
 * the same dK rows). Grid data (exact sums) or continuous data. */
void gen_contended_case(th_rng *r, tcase *tc, lig_dtype dtype, int grid, int64_t n1, int64_t n2, int tnd);

/* Fills q, k, w, idx, dy of an allocated case (sequence arrays must be valid). */
void gen_data(th_rng *r, tcase *tc, const gen_opts *o);

/* A value in the case's dtype: grid or continuous. */
double gen_value(th_rng *r, const tcase *tc, const gen_opts *o);

/* Garbage index for an invalid row, representable in idx_dtype. */
int64_t gen_garbage_index(th_rng *r, const tcase *tc, int64_t lk);

#endif /* LIG_TESTS_HARNESS_CASE_GENERATORS_H */

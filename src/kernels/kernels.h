/* Kernels, one set per ISA, named <operation>__<isa>; the runtime picks one set
 * (runtime/cpu_dispatch.c). */
#ifndef LIG_KERNELS_KERNELS_H
#define LIG_KERNELS_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "lig.h"

/* C[m][n] (+)= sum_k a[m*a_rs + k*a_cs] * B[k*ldb + n] for m < M, n < N, k < K (fp32).
 * `a` may be any strided view (a matrix or its transpose); rows of B and C are unit-stride.
 * The backward's three block products and the forward's scores are all of this form. */
typedef void (*lig_sgemm_fn)(int64_t M, int64_t N, int64_t K, const float *a, int64_t a_rs, int64_t a_cs,
                             const float *b, int64_t ldb, float *c, int64_t ldc, bool accumulate);
/* The backward's ReLU gate over a block of scores S^T (nb x G, in place):
 *   dw[h] += S > 0 ? S * dy[n] : 0;   S^T[n][h] <- S > 0 ? w[h] * dy[n] : 0   (= A^T)
 * a select, never a product with 0, so a non-finite dy of a gated slot adds nothing. */
typedef void (*lig_grad_gate_fn)(float *st, int64_t nb, int64_t G, const float *w, const float *dy, float *dw);
/* The forward's index scores of a block: score[n] = sum_h w[h] * ReLU(st[n][h]), ReLU as the
 * select s > 0 ? s : 0. The order of the sum over h is fixed per ISA. */
typedef void (*lig_fwd_scores_fn)(const float *st, int64_t nb, int64_t G, const float *w, float *score);
/* dst[0..n) = src[i*stride] converted to fp32 */
typedef void (*lig_load_row_fn)(lig_dtype dtype, const void *src, int64_t stride, int64_t n, float *dst);
/* dst[i*stride] = src[i] rounded to nearest even into dtype */
typedef void (*lig_store_row_fn)(const float *src, int64_t n, lig_dtype dtype, void *dst, int64_t stride);
/* dst[0..n) += src[0..n) */
typedef void (*lig_add_row_fn)(float *dst, const float *src, int64_t n);

void lig_sgemm__scalar(int64_t M, int64_t N, int64_t K, const float *a, int64_t a_rs, int64_t a_cs, const float *b,
                       int64_t ldb, float *c, int64_t ldc, bool accumulate);
void lig_grad_gate__scalar(float *st, int64_t nb, int64_t G, const float *w, const float *dy, float *dw);
void lig_fwd_scores__scalar(const float *st, int64_t nb, int64_t G, const float *w, float *score);
void lig_load_row__scalar(lig_dtype dtype, const void *src, int64_t stride, int64_t n, float *dst);
void lig_store_row__scalar(const float *src, int64_t n, lig_dtype dtype, void *dst, int64_t stride);
void lig_add_row__scalar(float *dst, const float *src, int64_t n);

#if defined(LIG_HAVE_X86_KERNELS)
void lig_sgemm__avx2(int64_t M, int64_t N, int64_t K, const float *a, int64_t a_rs, int64_t a_cs, const float *b,
                     int64_t ldb, float *c, int64_t ldc, bool accumulate);
void lig_grad_gate__avx2(float *st, int64_t nb, int64_t G, const float *w, const float *dy, float *dw);
void lig_fwd_scores__avx2(const float *st, int64_t nb, int64_t G, const float *w, float *score);
void lig_load_row__avx2(lig_dtype dtype, const void *src, int64_t stride, int64_t n, float *dst);
void lig_store_row__avx2(const float *src, int64_t n, lig_dtype dtype, void *dst, int64_t stride);
void lig_add_row__avx2(float *dst, const float *src, int64_t n);
#endif

#endif

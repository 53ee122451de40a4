/* Micro-kernels, one set per ISA, named <operation>__<isa>. Matrices are fp32, row-major:
 *   q   [G][D]   the query heads of one unit (row b,t; key head g)
 *   kp  [nb][D]  a block of nb <= LIG_GRAD_BLOCK gathered key rows
 *   a   [G][lda] scores S, later the gated coefficients A
 * The runtime picks one set (runtime/cpu_dispatch.c). */
#ifndef LIG_KERNELS_KERNELS_H
#define LIG_KERNELS_KERNELS_H

#include <stdint.h>

#include "lig.h"

/* a[h][n] = q[h] . kp[n] */
typedef void (*lig_grad_scores_fn)(const float *q, const float *kp, int64_t G, int64_t nb, int64_t D, float *a,
                                   int64_t lda);
/* dq[h] += sum_n a[h][n] * kp[n] */
typedef void (*lig_grad_dq_fn)(const float *a, int64_t lda, const float *kp, int64_t G, int64_t nb, int64_t D,
                               float *dq);
/* c[n] = sum_h a[h][n] * q[h]   (the dK contribution of each slot of the block) */
typedef void (*lig_grad_dk_fn)(const float *a, int64_t lda, const float *q, int64_t G, int64_t nb, int64_t D,
                               float *c);
/* dst[0..n) = src[i*stride] converted to fp32 */
typedef void (*lig_load_row_fn)(lig_dtype dtype, const void *src, int64_t stride, int64_t n, float *dst);
/* dst[i*stride] = src[i] rounded to nearest even into dtype */
typedef void (*lig_store_row_fn)(const float *src, int64_t n, lig_dtype dtype, void *dst, int64_t stride);
/* dst[0..n) += src[0..n) */
typedef void (*lig_add_row_fn)(float *dst, const float *src, int64_t n);

void lig_grad_scores__scalar(const float *q, const float *kp, int64_t G, int64_t nb, int64_t D, float *a,
                             int64_t lda);
void lig_grad_dq__scalar(const float *a, int64_t lda, const float *kp, int64_t G, int64_t nb, int64_t D, float *dq);
void lig_grad_dk__scalar(const float *a, int64_t lda, const float *q, int64_t G, int64_t nb, int64_t D, float *c);
void lig_load_row__scalar(lig_dtype dtype, const void *src, int64_t stride, int64_t n, float *dst);
void lig_store_row__scalar(const float *src, int64_t n, lig_dtype dtype, void *dst, int64_t stride);
void lig_add_row__scalar(float *dst, const float *src, int64_t n);

#if defined(LIG_HAVE_X86_KERNELS)
void lig_grad_scores__avx2(const float *q, const float *kp, int64_t G, int64_t nb, int64_t D, float *a, int64_t lda);
void lig_grad_dq__avx2(const float *a, int64_t lda, const float *kp, int64_t G, int64_t nb, int64_t D, float *dq);
void lig_grad_dk__avx2(const float *a, int64_t lda, const float *q, int64_t G, int64_t nb, int64_t D, float *c);
void lig_load_row__avx2(lig_dtype dtype, const void *src, int64_t stride, int64_t n, float *dst);
void lig_store_row__avx2(const float *src, int64_t n, lig_dtype dtype, void *dst, int64_t stride);
void lig_add_row__avx2(float *dst, const float *src, int64_t n);
#endif

#endif

/* What the two fp32 GEMM micro-kernels of the neon set share (8 x 12 and 12 x 8): one tile body
 * of `mr` rows and `nv` 128-bit column vectors, both compile-time constants, so that each case
 * keeps its accumulators in registers. Per k step: nv B loads, mr broadcasts of A (LD1R, any
 * strides) and mr x nv FMAs (FMLA), each C element one chain of fused multiply-adds in k order.
 * A last column vector of 1 to 3 live lanes (`rem`) is loaded and stored lane by lane, so no
 * float past column nr is read or written.
 *
 * Included by each file after MR and NV (its tile: MR rows x 4 NV columns). Compiled with that
 * file's flags: static inline, no symbol of its own. */
#ifndef LIG_BACKENDS_CPU_KERNELS_NEON_F32_GEMM_TILE_H
#define LIG_BACKENDS_CPU_KERNELS_NEON_F32_GEMM_TILE_H

#include <arm_neon.h>
#include <stdbool.h>
#include <stdint.h>

#include "backends/cpu/kernels/tile_rows.h"

/* the first rem (1..3) floats of p, zeros after */
static inline float32x4_t load_part(const float *p, int64_t rem) {
    float32x4_t v = vdupq_n_f32(0.0f);
    v = vld1q_lane_f32(p, v, 0);
    if (rem > 1) v = vld1q_lane_f32(p + 1, v, 1);
    if (rem > 2) v = vld1q_lane_f32(p + 2, v, 2);
    return v;
}

static inline void store_part(float *p, float32x4_t v, int64_t rem) {
    vst1q_lane_f32(p, v, 0);
    if (rem > 1) vst1q_lane_f32(p + 1, v, 1);
    if (rem > 2) vst1q_lane_f32(p + 2, v, 2);
}

/* vector v of a row: whole, or (the last one of a partial tile) its rem live lanes */
static inline __attribute__((always_inline)) float32x4_t load_vec(const float *p, const int v, const int nv,
                                                                  const bool partial, int64_t rem) {
    return partial && v == nv - 1 ? load_part(p, rem) : vld1q_f32(p);
}

static inline __attribute__((always_inline)) void f32_tile(const int mr, const int nv, const bool partial, int64_t rem,
                                                           int64_t K, const float *a, int64_t a_rs, int64_t a_cs,
                                                           const float *b, int64_t ldb, float *c, int64_t ldc,
                                                           bool accumulate) {
    float32x4_t acc[MR][NV];
#pragma GCC unroll 12
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 3
        for (int v = 0; v < nv; v++)
            acc[i][v] = accumulate ? load_vec(c + i * ldc + 4 * v, v, nv, partial, rem) : vdupq_n_f32(0.0f);
    for (int64_t k = 0; k < K; k++) {
        const float *bk = b + k * ldb, *ak = a + k * a_cs;
        float32x4_t bv[NV];
#pragma GCC unroll 3
        for (int v = 0; v < nv; v++) bv[v] = load_vec(bk + 4 * v, v, nv, partial, rem);
#pragma GCC unroll 12
        for (int i = 0; i < mr; i++) {
            const float32x4_t x = vld1q_dup_f32(ak + i * a_rs);
#pragma GCC unroll 3
            for (int v = 0; v < nv; v++) acc[i][v] = vfmaq_f32(acc[i][v], bv[v], x);
        }
    }
#pragma GCC unroll 12
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 3
        for (int v = 0; v < nv; v++) {
            if (partial && v == nv - 1) store_part(c + i * ldc + 4 * v, acc[i][v], rem);
            else vst1q_f32(c + i * ldc + 4 * v, acc[i][v]);
        }
}

/* The rows of a tile of nv vectors: one specialised body per row count. */
static inline __attribute__((always_inline)) void f32_tile_rows(int64_t mr, const int nv, const bool partial,
                                                                int64_t rem, int64_t K, const float *a, int64_t a_rs,
                                                                int64_t a_cs, const float *b, int64_t ldb, float *c,
                                                                int64_t ldc, bool accumulate) {
    LIG_TILE_ROWS(MR, mr, f32_tile, nv, partial, rem, K, a, a_rs, a_cs, b, ldb, c, ldc, accumulate);
}

/* Any mr <= MR, nr <= 4 NV: the vector count and whether the last one is partial, as constants. */
static inline __attribute__((always_inline)) void f32_tile_any(int64_t mr, int64_t nr, int64_t K, const float *a,
                                                               int64_t a_rs, int64_t a_cs, const float *b, int64_t ldb,
                                                               float *c, int64_t ldc, bool accumulate) {
    const int64_t rem = nr % 4;
    const bool partial = rem != 0;
    switch ((nr + 3) / 4) {
#if NV >= 3
    case 3:
        if (partial) f32_tile_rows(mr, 3, true, rem, K, a, a_rs, a_cs, b, ldb, c, ldc, accumulate);
        else if (mr == MR) f32_tile(MR, 3, false, 0, K, a, a_rs, a_cs, b, ldb, c, ldc, accumulate);
        else f32_tile_rows(mr, 3, false, 0, K, a, a_rs, a_cs, b, ldb, c, ldc, accumulate);
        break;
#endif
    case 2:
        if (partial) f32_tile_rows(mr, 2, true, rem, K, a, a_rs, a_cs, b, ldb, c, ldc, accumulate);
        else if (mr == MR) f32_tile(MR, 2, false, 0, K, a, a_rs, a_cs, b, ldb, c, ldc, accumulate);
        else f32_tile_rows(mr, 2, false, 0, K, a, a_rs, a_cs, b, ldb, c, ldc, accumulate);
        break;
    default:
        if (partial) f32_tile_rows(mr, 1, true, rem, K, a, a_rs, a_cs, b, ldb, c, ldc, accumulate);
        else f32_tile_rows(mr, 1, false, 0, K, a, a_rs, a_cs, b, ldb, c, ldc, accumulate);
        break;
    }
}

#endif /* LIG_BACKENDS_CPU_KERNELS_NEON_F32_GEMM_TILE_H */

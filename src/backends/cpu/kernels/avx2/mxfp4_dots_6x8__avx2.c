/* MXFP4 block-dot micro-kernel, 6 key rows x 8 query columns, AVX2 (see kernels.h,
 * lig_mxfp4_dots_kernel).
 *
 * vpmaddubsw multiplies unsigned by signed bytes and adds pairs into int16, saturating; here it
 * cannot saturate: the packed query values are Q + 12 (in [0, 24]), the keys K in [-12, 12], so a
 * pair sum is at most 2 * 24 * 12 = 576 in magnitude. A key row's quad (4 values) is one 32-bit
 * broadcast; against a quad of 8 columns' values (the panel's 32 bytes) the int16 lanes 2j and
 * 2j + 1 take column j's values 0-1 and 2-3. A block's 8 quads are added in int16 (each lane at most
 * 8 * 576 = 4608), then one vpmaddwd with ones adds each column's two lanes into int32 and the key
 * row's correction -12 * sum K makes P exact. Then vcvtdq2ps (exact, |P| <= 4608), vpaddd for the
 * bits of 2^(e + f) and vfmadd231ps into the row's fp32 sum: the product is exact (the engine's
 * check), so the fused add rounds as the portable engine's separate add. 32 multiply-adds per
 * vpmaddubsw, against 16 per vpmaddwd on the int8 GEMM's sign-extended int16. Registers: 6 int16
 * accumulators, 6 sums, the query quad, a broadcast. */
#include <immintrin.h>
#include <string.h>

#include "backends/cpu/kernels/avx2/avx2.h"
#include "backends/cpu/kernels/tile_rows.h"

#define MR 6
#define NR 8

static inline int32_t load_i32(const void *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline __attribute__((always_inline)) void tile(const int mr, int64_t nr, int64_t nblk, const int8_t *k,
                                                       int64_t ldk, const int32_t *kt, const void *q_panel,
                                                       float *out, int64_t ldo) {
    const uint8_t *qv = (const uint8_t *)q_panel;
    const int32_t *qe = (const int32_t *)(const void *)(qv + nblk * 32 * NR);
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 sum[MR];
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) sum[i] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nblk; b++) {
        __m256i acc[MR];
        const int8_t *kb = k + b * 32;
        const uint8_t *qb = qv + b * 32 * NR;
        {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)qb);
#pragma GCC unroll 6
            for (int i = 0; i < mr; i++) acc[i] = _mm256_maddubs_epi16(q, _mm256_set1_epi32(load_i32(kb + i * ldk)));
        }
#pragma GCC unroll 7
        for (int t = 1; t < 8; t++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(qb + t * 4 * NR));
#pragma GCC unroll 6
            for (int i = 0; i < mr; i++)
                acc[i] = _mm256_add_epi16(acc[i],
                                          _mm256_maddubs_epi16(q, _mm256_set1_epi32(load_i32(kb + i * ldk + 4 * t))));
        }
        const __m256i qbits = _mm256_loadu_si256((const __m256i *)(const void *)(qe + b * NR));
#pragma GCC unroll 6
        for (int i = 0; i < mr; i++) {
            const int32_t *kti = kt + i * 2 * nblk + 2 * b;
            const __m256i p = _mm256_add_epi32(_mm256_madd_epi16(acc[i], ones), _mm256_set1_epi32(kti[1]));
            const __m256 scale = _mm256_castsi256_ps(_mm256_add_epi32(qbits, _mm256_set1_epi32(kti[0])));
            sum[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), scale, sum[i]);
        }
    }
    if (nr == NR) {
#pragma GCC unroll 6
        for (int i = 0; i < mr; i++) _mm256_storeu_ps(out + i * ldo, sum[i]);
    } else {
        const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)nr), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
#pragma GCC unroll 6
        for (int i = 0; i < mr; i++) _mm256_maskstore_ps(out + i * ldo, m, sum[i]);
    }
}

void lig_mxfp4_dots_6x8__avx2(int64_t mr, int64_t nr, int64_t nblk, const int8_t *k, int64_t ldk, const int32_t *kt,
                              const void *q_panel, float *out, int64_t ldo) {
    LIG_TILE_ROWS(MR, mr, tile, nr, nblk, k, ldk, kt, q_panel, out, ldo);
}

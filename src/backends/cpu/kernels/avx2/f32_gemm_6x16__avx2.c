/* fp32 GEMM micro-kernel, 6 rows x 16 columns, AVX2 + FMA (see kernels.h): 12 ymm
 * accumulators + 2 B vectors + 1 broadcast; per k step 2 B loads and 6 broadcasts feed 12
 * FMAs. Partial tiles: masked columns, one specialised body per row count. */
#include <immintrin.h>
#include <stdbool.h>

#include "backends/cpu/kernels/avx2/avx2.h"
#include "backends/cpu/kernels/tile_rows.h"

#define MR 6
#define NR 16

static inline __attribute__((always_inline)) void tile(const int mr, const bool full, int64_t K, const float *a,
                                                       int64_t a_rs, int64_t a_cs, const float *b, int64_t ldb,
                                                       float *c, int64_t ldc, bool accumulate, __m256i mask0,
                                                       __m256i mask1) {
    __m256 acc[MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) {
        if (accumulate) {
            acc[i][0] = full ? _mm256_loadu_ps(c + i * ldc) : _mm256_maskload_ps(c + i * ldc, mask0);
            acc[i][1] = full ? _mm256_loadu_ps(c + i * ldc + 8) : _mm256_maskload_ps(c + i * ldc + 8, mask1);
        } else {
            acc[i][0] = _mm256_setzero_ps();
            acc[i][1] = _mm256_setzero_ps();
        }
    }
    for (int64_t k = 0; k < K; k++) {
        const float *bk = b + k * ldb;
        const __m256 b0 = full ? _mm256_loadu_ps(bk) : _mm256_maskload_ps(bk, mask0);
        const __m256 b1 = full ? _mm256_loadu_ps(bk + 8) : _mm256_maskload_ps(bk + 8, mask1);
        const float *ak = a + k * a_cs;
#pragma GCC unroll 6
        for (int i = 0; i < mr; i++) {
            const __m256 x = _mm256_broadcast_ss(ak + i * a_rs);
            acc[i][0] = _mm256_fmadd_ps(x, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(x, b1, acc[i][1]);
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) {
        if (full) {
            _mm256_storeu_ps(c + i * ldc, acc[i][0]);
            _mm256_storeu_ps(c + i * ldc + 8, acc[i][1]);
        } else {
            _mm256_maskstore_ps(c + i * ldc, mask0, acc[i][0]);
            _mm256_maskstore_ps(c + i * ldc + 8, mask1, acc[i][1]);
        }
    }
}

/* Rows of a tile: one specialised body per count, so the accumulators stay in registers. */
static inline __attribute__((always_inline)) void tile_rows(int64_t mr, const bool full, int64_t K, const float *a,
                                                            int64_t a_rs, int64_t a_cs, const float *b, int64_t ldb,
                                                            float *c, int64_t ldc, bool accumulate, __m256i m0,
                                                            __m256i m1) {
    LIG_TILE_ROWS(MR, mr, tile, full, K, a, a_rs, a_cs, b, ldb, c, ldc, accumulate, m0, m1);
}

void lig_f32_gemm_ukernel_6x16__avx2(int64_t mr, int64_t nr, int64_t kc, const float *a, int64_t a_rs, int64_t a_cs,
                                     const float *b, int64_t ldb, float *c, int64_t ldc, bool accumulate) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    /* lane i of a partial tile is live when i < nr (low half) or i + 8 < nr (high half) */
    const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)nr), lanes);
    const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)nr - 8), lanes);
    const bool full = nr == NR;
    if (full && mr == MR) tile(MR, true, kc, a, a_rs, a_cs, b, ldb, c, ldc, accumulate, m0, m1);
    else if (full) tile_rows(mr, true, kc, a, a_rs, a_cs, b, ldb, c, ldc, accumulate, m0, m1);
    else tile_rows(mr, false, kc, a, a_rs, a_cs, b, ldb, c, ldc, accumulate, m0, m1);
}

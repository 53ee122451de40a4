/* fp32 GEMM micro-kernel, 12 rows x 8 columns, AVX2 + FMA (see kernels.h): for a last
 * column tile of 8 or fewer (e.g. the scores of a group of 8 heads), so that half of every
 * FMA is not spent on masked-off lanes. 12 accumulators, 1 B load per k step; fewer rows are
 * done four at a time. */
#include <immintrin.h>
#include <stdbool.h>

#include "backends/cpu/kernels/avx2/avx2.h"
#include "backends/cpu/kernels/tile_rows.h"

#define MR8 12

static inline __attribute__((always_inline)) void tile8(const int mr, const bool full, int64_t K, const float *a,
                                                        int64_t a_rs, int64_t a_cs, const float *b, int64_t ldb,
                                                        float *c, int64_t ldc, bool accumulate, __m256i mask) {
    __m256 acc[MR8];
#pragma GCC unroll 12
    for (int i = 0; i < mr; i++)
        acc[i] = !accumulate ? _mm256_setzero_ps()
                 : full      ? _mm256_loadu_ps(c + i * ldc)
                             : _mm256_maskload_ps(c + i * ldc, mask);
    for (int64_t k = 0; k < K; k++) {
        const __m256 b0 = full ? _mm256_loadu_ps(b + k * ldb) : _mm256_maskload_ps(b + k * ldb, mask);
        const float *ak = a + k * a_cs;
#pragma GCC unroll 12
        for (int i = 0; i < mr; i++) acc[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(ak + i * a_rs), b0, acc[i]);
    }
#pragma GCC unroll 12
    for (int i = 0; i < mr; i++) {
        if (full) _mm256_storeu_ps(c + i * ldc, acc[i]);
        else _mm256_maskstore_ps(c + i * ldc, mask, acc[i]);
    }
}

void lig_f32_gemm_ukernel_12x8__avx2(int64_t mr, int64_t nr, int64_t kc, const float *a, int64_t a_rs, int64_t a_cs,
                                     const float *b, int64_t ldb, float *c, int64_t ldc, bool accumulate) {
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)nr), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    if (mr == MR8) {
        if (nr == 8) tile8(MR8, true, kc, a, a_rs, a_cs, b, ldb, c, ldc, accumulate, mask);
        else tile8(MR8, false, kc, a, a_rs, a_cs, b, ldb, c, ldc, accumulate, mask);
        return;
    }
    for (int64_t m = 0; m < mr; m += 4) {
        const float *am = a + m * a_rs;
        float *cm = c + m * ldc;
        LIG_TILE_ROWS(4, mr - m < 4 ? mr - m : 4, tile8, false, kc, am, a_rs, a_cs, b, ldb, cm, ldc, accumulate,
                      mask);
    }
}

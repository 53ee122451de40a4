/* fp32 GEMM micro-kernel, 24 rows x 16 columns, AVX-512 (see kernels.h): for a last column
 * tile of 16 or fewer (the scores of groups of up to 16 heads), so that half of every FMA is
 * not spent on masked-off lanes. 24 accumulators, 1 B load per k step; fewer rows are done
 * eight at a time. */
#include <immintrin.h>
#include <stdbool.h>

#include "backends/cpu/kernels/avx512/avx512.h"
#include "backends/cpu/kernels/tile_rows.h"

#define MR 24

static inline __attribute__((always_inline)) void tile(const int mr, int64_t K, const float *a, int64_t a_rs,
                                                       int64_t a_cs, const float *b, int64_t ldb, float *c,
                                                       int64_t ldc, bool accumulate, __mmask16 m) {
    __m512 acc[MR];
#pragma GCC unroll 24
    for (int i = 0; i < mr; i++) acc[i] = accumulate ? _mm512_maskz_loadu_ps(m, c + i * ldc) : _mm512_setzero_ps();
    for (int64_t k = 0; k < K; k++) {
        const __m512 b0 = _mm512_maskz_loadu_ps(m, b + k * ldb);
        const float *ak = a + k * a_cs;
#pragma GCC unroll 24
        for (int i = 0; i < mr; i++) acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(ak[i * a_rs]), b0, acc[i]);
    }
#pragma GCC unroll 24
    for (int i = 0; i < mr; i++) _mm512_mask_storeu_ps(c + i * ldc, m, acc[i]);
}

void lig_f32_gemm_ukernel_24x16__avx512(int64_t mr, int64_t nr, int64_t kc, const float *a, int64_t a_rs,
                                        int64_t a_cs, const float *b, int64_t ldb, float *c, int64_t ldc,
                                        bool accumulate) {
    const __mmask16 m = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1u);
    if (mr == MR) {
        tile(MR, kc, a, a_rs, a_cs, b, ldb, c, ldc, accumulate, m);
        return;
    }
    for (int64_t i = 0; i < mr; i += 8) {
        const float *ai = a + i * a_rs;
        float *ci = c + i * ldc;
        LIG_TILE_ROWS(8, mr - i < 8 ? mr - i : 8, tile, kc, ai, a_rs, a_cs, b, ldb, ci, ldc, accumulate, m);
    }
}

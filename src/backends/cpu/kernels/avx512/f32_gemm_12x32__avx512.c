/* fp32 GEMM micro-kernel, 12 rows x 32 columns, AVX-512 (see kernels.h): 24 zmm accumulators
 * + 2 B vectors + 1 broadcast of the 32 registers; per k step 2 B loads and 12 broadcasts
 * feed 24 FMAs. Partial tiles: masked columns, one specialised body per row count. */
#include <immintrin.h>
#include <stdbool.h>

#include "backends/cpu/kernels/avx512/avx512.h"
#include "backends/cpu/kernels/tile_rows.h"

#define MR 12
#define NR 32

static inline __attribute__((always_inline)) void tile(const int mr, int64_t K, const float *a, int64_t a_rs,
                                                       int64_t a_cs, const float *b, int64_t ldb, float *c,
                                                       int64_t ldc, bool accumulate, __mmask16 m0, __mmask16 m1) {
    __m512 acc[MR][2];
#pragma GCC unroll 12
    for (int i = 0; i < mr; i++) {
        acc[i][0] = accumulate ? _mm512_maskz_loadu_ps(m0, c + i * ldc) : _mm512_setzero_ps();
        acc[i][1] = accumulate ? _mm512_maskz_loadu_ps(m1, c + i * ldc + 16) : _mm512_setzero_ps();
    }
    for (int64_t k = 0; k < K; k++) {
        const float *bk = b + k * ldb;
        const __m512 b0 = _mm512_maskz_loadu_ps(m0, bk), b1 = _mm512_maskz_loadu_ps(m1, bk + 16);
        const float *ak = a + k * a_cs;
#pragma GCC unroll 12
        for (int i = 0; i < mr; i++) {
            const __m512 x = _mm512_set1_ps(ak[i * a_rs]);
            acc[i][0] = _mm512_fmadd_ps(x, b0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(x, b1, acc[i][1]);
        }
    }
#pragma GCC unroll 12
    for (int i = 0; i < mr; i++) {
        _mm512_mask_storeu_ps(c + i * ldc, m0, acc[i][0]);
        _mm512_mask_storeu_ps(c + i * ldc + 16, m1, acc[i][1]);
    }
}

void lig_f32_gemm_ukernel_12x32__avx512(int64_t mr, int64_t nr, int64_t kc, const float *a, int64_t a_rs,
                                        int64_t a_cs, const float *b, int64_t ldb, float *c, int64_t ldc,
                                        bool accumulate) {
    /* lane i of the low half is live when i < nr, of the high half when i + 16 < nr */
    const __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1u);
    const __mmask16 m1 = nr >= 32 ? 0xffff : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1u);
    LIG_TILE_ROWS(MR, mr, tile, kc, a, a_rs, a_cs, b, ldb, c, ldc, accumulate, m0, m1);
}

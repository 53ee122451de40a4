/* bf16 GEMM micro-kernel, 12 rows x 32 columns, AVX512_BF16 (see kernels.h): 24 zmm
 * accumulators; per pair of the reduction 2 B loads (32 columns of pairs) and 12 broadcasts of
 * an A pair feed 24 vdpbf16ps. Partial tiles: masked columns (masked-off pairs are zeros, which
 * add nothing), one specialised body per row count. */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "backends/cpu/kernels/avx512bf16/avx512bf16.h"
#include "backends/cpu/kernels/tile_rows.h"

#define MR 12

static inline __attribute__((always_inline)) void tile(const int mr, int64_t kc, const uint16_t *a, int64_t lda,
                                                       const uint16_t *b, int64_t ldb, float *c, int64_t ldc,
                                                       bool accumulate, __mmask16 m0, __mmask16 m1) {
    __m512 acc[MR][2];
#pragma GCC unroll 12
    for (int i = 0; i < mr; i++) {
        acc[i][0] = accumulate ? _mm512_maskz_loadu_ps(m0, c + i * ldc) : _mm512_setzero_ps();
        acc[i][1] = accumulate ? _mm512_maskz_loadu_ps(m1, c + i * ldc + 16) : _mm512_setzero_ps();
    }
    for (int64_t p = 0; p < kc / 2; p++) {
        const uint16_t *bp = b + p * ldb * 2;
        const __m512bh b0 = (__m512bh)_mm512_maskz_loadu_epi32(m0, bp);
        const __m512bh b1 = (__m512bh)_mm512_maskz_loadu_epi32(m1, bp + 32);
#pragma GCC unroll 12
        for (int i = 0; i < mr; i++) {
            uint32_t pair;
            memcpy(&pair, a + i * lda + 2 * p, sizeof pair);
            const __m512bh x = (__m512bh)_mm512_set1_epi32((int)pair);
            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], x, b0);
            acc[i][1] = _mm512_dpbf16_ps(acc[i][1], x, b1);
        }
    }
#pragma GCC unroll 12
    for (int i = 0; i < mr; i++) {
        _mm512_mask_storeu_ps(c + i * ldc, m0, acc[i][0]);
        _mm512_mask_storeu_ps(c + i * ldc + 16, m1, acc[i][1]);
    }
}

void lig_bf16_gemm_ukernel_12x32__avx512bf16(int64_t mr, int64_t nr, int64_t kc, const uint16_t *a, int64_t lda,
                                             const uint16_t *b, int64_t ldb, float *c, int64_t ldc, bool accumulate) {
    const __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1u);
    const __mmask16 m1 = nr >= 32 ? 0xffff : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1u);
    LIG_TILE_ROWS(MR, mr, tile, kc, a, lda, b, ldb, c, ldc, accumulate, m0, m1);
}

/* int8 GEMM micro-kernel, 12 key rows x 32 query columns, AVX-512 F/BW (see kernels.h): the AVX2
 * kernel's method on zmm. Sign-extension to int16 (vpmovsxbw) and 512-bit vpmaddwd (exact; the
 * saturating vpmaddubsw is not used).
 *
 * B panel (32 columns, kr = 2, int16 sign-extended at pack time):
 *   panel[(p*32 + j)*2 + e] = B[2p + e][j]      (p < ceil(K/2), zero-padded)
 * A rows are widened into a stack buffer KC values at a time (the tail with a masked load: no byte
 * past column kc is read). Per pair: 2 B loads, 12 broadcasts, 24 vpmaddwd + 24 vpaddd into 24 zmm
 * accumulators. |a0*b0 + a1*b1| <= 2^15, so with K <= 65536 every partial sum stays below 2^30. */
#include <immintrin.h>
#include <string.h>

#include "backends/cpu/kernels/avx512/avx512.h"

#define MR 12
#define NR 32
#define KC 256

typedef int16_t staged_t; /* A widened to int16 */
typedef int16_t panel_t;

#include "backends/cpu/kernels/avx512/i8_gemm_zmm_chunks.h"

void lig_i8_pack_b_12x32__avx512(int64_t K, int64_t N, const int8_t *src, int64_t ld, void *packed,
                                 int64_t panel_bytes) {
    lig_i8_pack_int16_pairs(NR, K, N, src, ld, packed, panel_bytes);
}

/* widened to int16, padded with zeros to a multiple of 32 */
static inline void stage_row(const int8_t *a, int64_t len, int16_t *buf) {
    for (int64_t k = 0; k < len; k += 32) {
        const __mmask32 live = len - k >= 32 ? 0xffffffffu : (__mmask32)((1u << (len - k)) - 1u);
        _mm512_storeu_si512(buf + k, _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(live, a + k)));
    }
}

/* acc += madd(x, b), as _mm512_add_epi32(acc, _mm512_madd_epi16(x, b)); in asm, each product next to
 * its add, because GCC 12 issued all 24 products first and spilled */
static inline __attribute__((always_inline)) void multiply_add_group(__m512i acc[2], __m512i x, __m512i b0,
                                                                     __m512i b1) {
    __m512i t0, t1;
    __asm__("vpmaddwd %[b], %[x], %[t]\n\tvpaddd %[t], %[acc], %[acc]"
            : [acc] "+v"(acc[0]), [t] "=&v"(t0) : [x] "v"(x), [b] "v"(b0));
    __asm__("vpmaddwd %[b], %[x], %[t]\n\tvpaddd %[t], %[acc], %[acc]"
            : [acc] "+v"(acc[1]), [t] "=&v"(t1) : [x] "v"(x), [b] "v"(b1));
}

/* `sum` (on the stack) starts as C's values when accumulating. */
static inline __attribute__((always_inline)) void tile(const int mr, int64_t nr, int64_t kc, const int8_t *a,
                                                       int64_t lda, const void *b_panel, int32_t *c, int64_t ldc,
                                                       bool accumulate) {
    __mmask16 m0, m1;
    zmm_column_masks(nr, &m0, &m1);
    int32_t sum[MR][NR] __attribute__((aligned(64)));
#pragma GCC unroll 12
    for (int i = 0; i < mr; i++) {
        _mm512_store_si512(sum[i], accumulate ? _mm512_maskz_loadu_epi32(m0, c + i * ldc) : _mm512_setzero_si512());
        _mm512_store_si512(sum[i] + 16, accumulate ? _mm512_maskz_loadu_epi32(m1, c + i * ldc + 16) : _mm512_setzero_si512());
    }
    accumulate_chunks(mr, kc, a, lda, b_panel, sum);
#pragma GCC unroll 12
    for (int i = 0; i < mr; i++) {
        _mm512_mask_storeu_epi32(c + i * ldc, m0, _mm512_load_si512(sum[i]));
        _mm512_mask_storeu_epi32(c + i * ldc + 16, m1, _mm512_load_si512(sum[i] + 16));
    }
}

#include "backends/cpu/kernels/i8_gemm_rows.h"

void lig_i8_gemm_ukernel_12x32__avx512(int64_t mr, int64_t nr, int64_t kc, const int8_t *a, int64_t lda,
                                       const void *b_panel, int32_t *c, int64_t ldc, bool accumulate) {
    tile_rows(mr, nr, kc, a, lda, b_panel, c, ldc, accumulate);
}

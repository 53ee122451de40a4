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

#include "backends/cpu/kernels/kernels.h"

#define MR 12
#define NR 32
#define KC 256

#include "backends/cpu/kernels/avx512/i8_gemm_zmm_sums.h"

void lig_i8_pack_b_12x32__avx512(int64_t K, int64_t N, const int8_t *src, int64_t ld, void *packed,
                                 int64_t panel_bytes) {
    lig_i8_pack_int16_pairs(NR, K, N, src, ld, packed, panel_bytes);
}

/* [k0, k0 + len) of a row as int16 into buf, padded with zeros to a multiple of 32 */
static inline void widen_row(const int8_t *a, int64_t len, int16_t *buf) {
    for (int64_t k = 0; k < len; k += 32) {
        const __mmask32 live = len - k >= 32 ? 0xffffffffu : (__mmask32)((1u << (len - k)) - 1u);
        _mm512_storeu_si512(buf + k, _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(live, a + k)));
    }
}

/* `sum` (on the stack) starts as C's values when accumulating; each chunk's accumulators are added to
 * it after the chunk (i8_gemm_zmm_sums.h says why). */
static inline __attribute__((always_inline)) void tile(const int mr, int64_t nr, int64_t kc, const int8_t *a,
                                                       int64_t lda, const void *b_panel, int32_t *c, int64_t ldc,
                                                       bool accumulate) {
    __mmask16 m0, m1;
    zmm_column_masks(nr, &m0, &m1);
    const int16_t *b = b_panel;
    int32_t sum[MR][NR] __attribute__((aligned(64)));
    int16_t buf[MR][KC];
#pragma GCC unroll 12
    for (int i = 0; i < mr; i++) {
        _mm512_store_si512(sum[i], accumulate ? _mm512_maskz_loadu_epi32(m0, c + i * ldc) : _mm512_setzero_si512());
        _mm512_store_si512(sum[i] + 16, accumulate ? _mm512_maskz_loadu_epi32(m1, c + i * ldc + 16) : _mm512_setzero_si512());
    }
    for (int64_t k0 = 0; k0 < kc; k0 += KC) {
        const int64_t len = kc - k0 < KC ? kc - k0 : KC;
        for (int i = 0; i < mr; i++) widen_row(a + i * lda + k0, len, buf[i]);
        __m512i acc[MR][2];
        zero_accumulators(mr, acc);
        const int16_t *bp = b + k0 * NR;
        for (int64_t p = 0; p < (len + 1) / 2; p++) {
            const __m512i b0 = _mm512_loadu_si512(bp + p * 2 * NR);
            const __m512i b1 = _mm512_loadu_si512(bp + p * 2 * NR + 32);
#pragma GCC unroll 12
            for (int i = 0; i < mr; i++) {
                const __m512i x = broadcast_group(&buf[i][2 * p]);
                /* acc += madd(x, b), as _mm512_add_epi32(acc, _mm512_madd_epi16(x, b)); in asm, each
                 * product next to its add, because GCC 12 issued all 24 products first and spilled */
                __m512i t0, t1;
                __asm__("vpmaddwd %[b], %[x], %[t]\n\tvpaddd %[t], %[acc], %[acc]"
                        : [acc] "+v"(acc[i][0]), [t] "=&v"(t0) : [x] "v"(x), [b] "v"(b0));
                __asm__("vpmaddwd %[b], %[x], %[t]\n\tvpaddd %[t], %[acc], %[acc]"
                        : [acc] "+v"(acc[i][1]), [t] "=&v"(t1) : [x] "v"(x), [b] "v"(b1));
            }
        }
        add_to_sums(mr, acc, sum);
    }
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

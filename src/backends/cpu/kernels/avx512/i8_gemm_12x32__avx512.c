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

/* Each chunk's sums start in registers at 0 and are added to `sum` (on the stack, C's values when
 * accumulating) after it, so no accumulator is live across the next chunk's widening (GCC spilled
 * them when they were). */
static inline __attribute__((always_inline)) void tile(const int mr, int64_t kc, const int8_t *a, int64_t lda,
                                                       const int16_t *b, int32_t *c, int64_t ldc, bool accumulate,
                                                       __mmask16 m0, __mmask16 m1) {
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
#pragma GCC unroll 12
        for (int i = 0; i < mr; i++) {
            acc[i][0] = _mm512_setzero_si512();
            acc[i][1] = _mm512_setzero_si512();
        }
        const int16_t *bp = b + k0 * NR;
        for (int64_t p = 0; p < (len + 1) / 2; p++) {
            const __m512i b0 = _mm512_loadu_si512(bp + p * 2 * NR);
            const __m512i b1 = _mm512_loadu_si512(bp + p * 2 * NR + 32);
#pragma GCC unroll 12
            for (int i = 0; i < mr; i++) {
                int32_t pair;
                memcpy(&pair, &buf[i][2 * p], sizeof pair);
                const __m512i x = _mm512_set1_epi32(pair);
                /* acc += madd(x, b), as _mm512_add_epi32(acc, _mm512_madd_epi16(x, b)); in asm, each
                 * product next to its add, because GCC 12 issued all 24 products first and spilled */
                __m512i t0, t1;
                __asm__("vpmaddwd %[b], %[x], %[t]\n\tvpaddd %[t], %[acc], %[acc]"
                        : [acc] "+v"(acc[i][0]), [t] "=&v"(t0) : [x] "v"(x), [b] "v"(b0));
                __asm__("vpmaddwd %[b], %[x], %[t]\n\tvpaddd %[t], %[acc], %[acc]"
                        : [acc] "+v"(acc[i][1]), [t] "=&v"(t1) : [x] "v"(x), [b] "v"(b1));
            }
        }
#pragma GCC unroll 12
        for (int i = 0; i < mr; i++) {
            _mm512_store_si512(sum[i], _mm512_add_epi32(_mm512_load_si512(sum[i]), acc[i][0]));
            _mm512_store_si512(sum[i] + 16, _mm512_add_epi32(_mm512_load_si512(sum[i] + 16), acc[i][1]));
        }
    }
#pragma GCC unroll 12
    for (int i = 0; i < mr; i++) {
        _mm512_mask_storeu_epi32(c + i * ldc, m0, _mm512_load_si512(sum[i]));
        _mm512_mask_storeu_epi32(c + i * ldc + 16, m1, _mm512_load_si512(sum[i] + 16));
    }
}

void lig_i8_gemm_ukernel_12x32__avx512(int64_t mr, int64_t nr, int64_t kc, const int8_t *a, int64_t lda,
                                       const void *b_panel, int32_t *c, int64_t ldc, bool accumulate) {
    const __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1u);
    const __mmask16 m1 = nr >= 32 ? 0xffff : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1u);
    const int16_t *b = b_panel;
    switch (mr) {
    case 12: tile(12, kc, a, lda, b, c, ldc, accumulate, m0, m1); break;
    case 11: tile(11, kc, a, lda, b, c, ldc, accumulate, m0, m1); break;
    case 10: tile(10, kc, a, lda, b, c, ldc, accumulate, m0, m1); break;
    case 9: tile(9, kc, a, lda, b, c, ldc, accumulate, m0, m1); break;
    case 8: tile(8, kc, a, lda, b, c, ldc, accumulate, m0, m1); break;
    case 7: tile(7, kc, a, lda, b, c, ldc, accumulate, m0, m1); break;
    case 6: tile(6, kc, a, lda, b, c, ldc, accumulate, m0, m1); break;
    case 5: tile(5, kc, a, lda, b, c, ldc, accumulate, m0, m1); break;
    case 4: tile(4, kc, a, lda, b, c, ldc, accumulate, m0, m1); break;
    case 3: tile(3, kc, a, lda, b, c, ldc, accumulate, m0, m1); break;
    case 2: tile(2, kc, a, lda, b, c, ldc, accumulate, m0, m1); break;
    default: tile(1, kc, a, lda, b, c, ldc, accumulate, m0, m1); break;
    }
}

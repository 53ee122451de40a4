/* Row pairs into the VNNI layout, AVX-512 (see kernels.h): two rows of 32 bf16 become 32
 * pairs with two word permutes. */
#include <immintrin.h>

#include "backends/cpu/kernels/avx512bf16/avx512bf16.h"

/* word i of the result takes word idx[i] of (a, b): b's words are numbered 32..63; the
 * upper half's indices are the lower half's plus 16 */
static const uint16_t interleave_lo[32] __attribute__((aligned(64))) = {
    0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
    8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47,
};

static inline __mmask32 first(int64_t n) { return n >= 32 ? 0xffffffffu : (__mmask32)((1u << n) - 1u); }

void lig_bf16_pack_pairs__avx512bf16(const uint16_t *src, int64_t ld, int64_t npairs, int64_t cols, uint16_t *out) {
    const __m512i lo = _mm512_load_si512(interleave_lo), hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
    for (int64_t p = 0; p < npairs; p++) {
        const uint16_t *r0 = src + 2 * p * ld, *r1 = r0 + ld;
        uint16_t *o = out + p * cols * 2;
        for (int64_t j = 0; j < cols; j += 32) {
            const int64_t left = cols - j;
            const __mmask32 live = first(left);
            const __m512i a = _mm512_maskz_loadu_epi16(live, r0 + j), b = _mm512_maskz_loadu_epi16(live, r1 + j);
            /* columns j..j+15, then j+16..j+31, two words each */
            _mm512_mask_storeu_epi16(o + 2 * j, first(2 * left), _mm512_permutex2var_epi16(a, lo, b));
            if (left > 16) _mm512_mask_storeu_epi16(o + 2 * j + 32, first(2 * (left - 16)), _mm512_permutex2var_epi16(a, hi, b));
        }
    }
}

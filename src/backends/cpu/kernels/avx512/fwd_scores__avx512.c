/* AVX-512 forward index scores (see kernels.h): sixteen heads per step in sixteen lanes, the
 * lanes then added pairwise in a fixed pattern. A sequential sum over heads would be bound by
 * the add latency, not by the multiplies. */
#include <immintrin.h>

#include "backends/cpu/kernels/avx512/avx512.h"

void lig_fwd_scores__avx512(const float *st, int64_t nb, int64_t ld, int64_t G, const float *w, float *score) {
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t n = 0; n < nb; n++) {
        const float *sn = st + n * ld;
        __m512 acc = zero;
        for (int64_t h = 0; h < G; h += 16) {
            const __mmask16 live = G - h >= 16 ? 0xffff : (__mmask16)((1u << (G - h)) - 1u);
            const __m512 s = _mm512_maskz_loadu_ps(live, sn + h);
            /* mask the product, not the score: a closed head adds 0 even when its weight is
             * not finite (a select, as the portable kernel does) */
            const __mmask16 open = _mm512_mask_cmp_ps_mask(live, s, zero, _CMP_GT_OQ);
            acc = _mm512_add_ps(acc, _mm512_maskz_mul_ps(open, _mm512_maskz_loadu_ps(live, w + h), s));
        }
        __m256 x8 = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
        __m128 x = _mm_add_ps(_mm256_castps256_ps128(x8), _mm256_extractf128_ps(x8, 1));
        x = _mm_add_ps(x, _mm_movehl_ps(x, x));
        x = _mm_add_ss(x, _mm_movehdup_ps(x));
        score[n] = _mm_cvtss_f32(x);
    }
}

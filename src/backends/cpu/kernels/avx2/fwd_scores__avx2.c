/* AVX2 forward index scores (see kernels.h): eight heads per step in eight lanes, the lanes
 * then added pairwise in a fixed pattern, the tail heads last. A sequential sum over heads
 * would be bound by the add latency, not by the multiplies. */
#include <immintrin.h>

#include "backends/cpu/kernels/avx2/avx2.h"

void lig_fwd_scores__avx2(const float *st, int64_t nb, int64_t ld, int64_t G, const float *w, float *score) {
    const __m256 zero = _mm256_setzero_ps();
    for (int64_t n = 0; n < nb; n++) {
        const float *sn = st + n * ld;
        __m256 acc = zero;
        int64_t h = 0;
        for (; h + 8 <= G; h += 8) {
            const __m256 s = _mm256_loadu_ps(sn + h);
            /* mask the product, not the score: a closed head adds 0 even when its weight is
             * not finite (a select, as the portable kernel and the backward's gate do) */
            const __m256 prod = _mm256_mul_ps(_mm256_loadu_ps(w + h), s);
            acc = _mm256_add_ps(acc, _mm256_and_ps(_mm256_cmp_ps(s, zero, _CMP_GT_OQ), prod));
        }
        __m128 x = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
        x = _mm_add_ps(x, _mm_movehl_ps(x, x));
        x = _mm_add_ss(x, _mm_movehdup_ps(x));
        float sum = _mm_cvtss_f32(x);
        for (; h < G; h++) sum += sn[h] > 0.0f ? w[h] * sn[h] : 0.0f;
        score[n] = sum;
    }
}

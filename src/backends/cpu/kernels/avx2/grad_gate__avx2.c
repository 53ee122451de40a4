/* AVX2 ReLU gate of the backward (see kernels.h): compare, multiply, and mask, with no
 * branches (scores are positive about half the time, which defeats branch prediction). */
#include <immintrin.h>

#include "backends/cpu/kernels/kernels.h"

void lig_grad_gate__avx2(float *st, int64_t nb, int64_t G, const float *w, const float *dy, float *dw) {
    const __m256 zero = _mm256_setzero_ps();
    for (int64_t n = 0; n < nb; n++) {
        float *sn = st + n * G;
        const __m256 g = _mm256_broadcast_ss(dy + n);
        int64_t h = 0;
        for (; h + 8 <= G; h += 8) {
            const __m256 s = _mm256_loadu_ps(sn + h);
            const __m256 open = _mm256_cmp_ps(s, zero, _CMP_GT_OQ);
            _mm256_storeu_ps(dw + h, _mm256_add_ps(_mm256_loadu_ps(dw + h), _mm256_and_ps(open, _mm256_mul_ps(s, g))));
            _mm256_storeu_ps(sn + h, _mm256_and_ps(open, _mm256_mul_ps(_mm256_loadu_ps(w + h), g)));
        }
        for (; h < G; h++) {
            const float s = sn[h];
            const int open = s > 0.0f;
            dw[h] += open ? s * dy[n] : 0.0f;
            sn[h] = open ? w[h] * dy[n] : 0.0f;
        }
    }
}

/* AVX-512 ReLU gate of the backward (see kernels.h): compare into a mask, then masked
 * multiply and add, with no branches. */
#include <immintrin.h>

#include "backends/cpu/kernels/kernels.h"

void lig_grad_gate__avx512(float *st, int64_t nb, int64_t G, const float *w, const float *dy, float *dw) {
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t n = 0; n < nb; n++) {
        float *sn = st + n * G;
        const __m512 g = _mm512_set1_ps(dy[n]);
        for (int64_t h = 0; h < G; h += 16) {
            const __mmask16 live = G - h >= 16 ? 0xffff : (__mmask16)((1u << (G - h)) - 1u);
            const __m512 s = _mm512_maskz_loadu_ps(live, sn + h);
            const __mmask16 open = _mm512_mask_cmp_ps_mask(live, s, zero, _CMP_GT_OQ);
            /* dw += open ? s * dy : 0, as a product then an add (the portable kernel's rounding) */
            const __m512 prod = _mm512_maskz_mul_ps(open, s, g);
            _mm512_mask_storeu_ps(dw + h, live, _mm512_add_ps(_mm512_maskz_loadu_ps(live, dw + h), prod));
            _mm512_mask_storeu_ps(sn + h, live, _mm512_maskz_mul_ps(open, _mm512_maskz_loadu_ps(live, w + h), g));
        }
    }
}

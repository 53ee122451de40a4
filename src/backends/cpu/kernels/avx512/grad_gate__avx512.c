/* AVX-512 ReLU gate of the backward (see kernels.h): compare into a mask, then masked
 * multiply and add, with no branches. Sixteen heads at a time over all the block's slots,
 * their dW sums held in a register: added in memory slot after slot, each would wait for the
 * store of the one before. */
#include <immintrin.h>

#include "backends/cpu/kernels/avx512/avx512.h"

void lig_grad_gate__avx512(float *st, int64_t nb, int64_t G, const float *w, const float *dy, float *dw) {
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t h = 0; h < G; h += 16) {
        const __mmask16 live = G - h >= 16 ? 0xffff : (__mmask16)((1u << (G - h)) - 1u);
        const __m512 wv = _mm512_maskz_loadu_ps(live, w + h);
        __m512 acc = _mm512_maskz_loadu_ps(live, dw + h);
        for (int64_t n = 0; n < nb; n++) {
            float *sn = st + n * G + h;
            const __m512 g = _mm512_set1_ps(dy[n]), s = _mm512_maskz_loadu_ps(live, sn);
            const __mmask16 open = _mm512_mask_cmp_ps_mask(live, s, zero, _CMP_GT_OQ);
            /* dw += open ? s * dy : 0, as a product then an add (the portable kernel's rounding) */
            acc = _mm512_add_ps(acc, _mm512_maskz_mul_ps(open, s, g));
            _mm512_mask_storeu_ps(sn, live, _mm512_maskz_mul_ps(open, wv, g));
        }
        _mm512_mask_storeu_ps(dw + h, live, acc);
    }
}

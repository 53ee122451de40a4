/* The bf16 engines' ReLU gate, AVX-512 (see kernels.h): 32 heads per step, a compare into a
 * 32-bit mask that selects the dK operand's weights, feeds the masked dW update and is kept,
 * as bits, for the dQ operand. */
#include <immintrin.h>

#include "backends/cpu/kernels/avx512bf16/avx512bf16.h"

void lig_bf16_gate__avx512bf16(const float *st, int64_t nb, int64_t gp, const float *dy, const uint16_t *w, float *dw,
                               uint16_t *a_dk, uint64_t *open_bits, uint64_t *head_open) {
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t h = 0; h < gp; h += 32) {
        const __m512i wv = _mm512_loadu_si512(w + h);
        __m512 dw0 = _mm512_loadu_ps(dw + h), dw1 = _mm512_loadu_ps(dw + h + 16);
        uint64_t *bits = open_bits + (h / 64) * nb;
        const int shift = (int)(h % 64);
        __mmask32 any = 0;
        for (int64_t n = 0; n < nb; n++) {
            const float *s = st + n * gp + h;
            const __m512 s0 = _mm512_loadu_ps(s), s1 = _mm512_loadu_ps(s + 16), g = _mm512_set1_ps(dy[n]);
            const __mmask16 o0 = _mm512_cmp_ps_mask(s0, zero, _CMP_GT_OQ), o1 = _mm512_cmp_ps_mask(s1, zero, _CMP_GT_OQ);
            /* a product then an add, as the portable kernel rounds */
            dw0 = _mm512_add_ps(dw0, _mm512_maskz_mul_ps(o0, s0, g));
            dw1 = _mm512_add_ps(dw1, _mm512_maskz_mul_ps(o1, s1, g));
            const __mmask32 open = _mm512_kunpackw(o1, o0);
            any = _kor_mask32(any, open);
            _mm512_storeu_si512(a_dk + n * gp + h, _mm512_maskz_mov_epi16(open, wv));
            const uint64_t b = (uint64_t)_cvtmask32_u32(open) << shift;
            bits[n] = shift ? bits[n] | b : b;
        }
        head_open[h / 64] |= (uint64_t)_cvtmask32_u32(any) << shift;
        _mm512_storeu_ps(dw + h, dw0);
        _mm512_storeu_ps(dw + h + 16, dw1);
    }
}

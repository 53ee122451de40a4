/* The bf16 engines' ReLU gate, NEON (see kernels.h): 16 heads per step over all the block's slots
 * (gp is a multiple of 32), four compares whose masks select the dK operand's weights, gate the
 * dW update (a product then an add, as the portable kernel rounds; the sums in registers across
 * the slots) and become 16 bits of the slot's open word. */
#include <arm_neon.h>

#include "backends/cpu/kernels/neonbf16/neonbf16.h"

void lig_bf16_gate__neonbf16(const float *st, int64_t nb, int64_t gp, const float *dy, const uint16_t *w, float *dw,
                             uint16_t *a_dk, uint64_t *open_bits, uint64_t *head_open) {
    const float32x4_t zero = vdupq_n_f32(0.0f);
    static const uint32_t weights[4] = {1, 2, 4, 8};
    const uint32x4_t unit = vld1q_u32(weights);
    for (int64_t h = 0; h < gp; h += 16) {
        const uint16x8_t w0 = vld1q_u16(w + h), w1 = vld1q_u16(w + h + 8);
        float32x4_t acc[4];
        for (int v = 0; v < 4; v++) acc[v] = vld1q_f32(dw + h + 4 * v);
        uint64_t *bits = open_bits + (h / 64) * nb;
        const int shift = (int)(h % 64);
        uint64_t any = 0;
        for (int64_t n = 0; n < nb; n++) {
            const float *s = st + n * gp + h;
            const float32x4_t g = vld1q_dup_f32(dy + n);
            uint32x4_t open[4];
            uint32_t word = 0;
            for (int v = 0; v < 4; v++) {
                const float32x4_t sv = vld1q_f32(s + 4 * v);
                open[v] = vcgtq_f32(sv, zero); /* false for NaN */
                acc[v] = vaddq_f32(acc[v], vbslq_f32(open[v], vmulq_f32(sv, g), zero));
                word |= vaddvq_u32(vandq_u32(open[v], unit)) << (4 * v);
            }
            const uint16x8_t m0 = vcombine_u16(vmovn_u32(open[0]), vmovn_u32(open[1]));
            const uint16x8_t m1 = vcombine_u16(vmovn_u32(open[2]), vmovn_u32(open[3]));
            vst1q_u16(a_dk + n * gp + h, vandq_u16(m0, w0));
            vst1q_u16(a_dk + n * gp + h + 8, vandq_u16(m1, w1));
            const uint64_t b = (uint64_t)word << shift;
            bits[n] = shift ? bits[n] | b : b;
            any |= b;
        }
        head_open[h / 64] |= any;
        for (int v = 0; v < 4; v++) vst1q_f32(dw + h + 4 * v, acc[v]);
    }
}

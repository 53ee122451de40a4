/* NEON ReLU gate of the backward (see kernels.h): compare, multiply and mask, with no branches.
 * Four heads at a time over all the block's slots, their dW sums held in a register (added in
 * memory slot after slot, each would wait for the store of the one before). A product then an
 * add (FMUL, FADD: the build does not contract them), as the portable kernel rounds. */
#include <arm_neon.h>

#include "backends/cpu/kernels/neon/neon.h"
#include "backends/cpu/kernels/portable_tails.h"

void lig_grad_gate__neon(float *st, int64_t nb, int64_t G, const float *w, const float *dy, float *dw) {
    const float32x4_t zero = vdupq_n_f32(0.0f);
    int64_t h = 0;
    for (; h + 4 <= G; h += 4) {
        const float32x4_t wv = vld1q_f32(w + h);
        float32x4_t acc = vld1q_f32(dw + h);
        for (int64_t n = 0; n < nb; n++) {
            float *sn = st + n * G + h;
            const float32x4_t g = vld1q_dup_f32(dy + n), s = vld1q_f32(sn);
            const uint32x4_t open = vcgtq_f32(s, zero); /* false for NaN */
            /* a select of the product, never a product with 0: a closed slot's Inf dy adds nothing */
            acc = vaddq_f32(acc, vbslq_f32(open, vmulq_f32(s, g), zero));
            vst1q_f32(sn, vbslq_f32(open, vmulq_f32(wv, g), zero));
        }
        vst1q_f32(dw + h, acc);
    }
    lig_grad_gate_heads(st, nb, G, w, dy, dw, h);
}

/* NEON forward index scores (see kernels.h): four heads per step in four lanes, the lanes then
 * added pairwise (FADDP) in a fixed pattern, the tail heads last. A sequential sum over heads
 * would be bound by the add latency, not by the multiplies. */
#include <arm_neon.h>

#include "backends/cpu/kernels/neon/neon.h"

void lig_fwd_scores__neon(const float *st, int64_t nb, int64_t ld, int64_t G, const float *w, float *score) {
    const float32x4_t zero = vdupq_n_f32(0.0f);
    for (int64_t n = 0; n < nb; n++) {
        const float *sn = st + n * ld;
        float32x4_t acc = zero;
        int64_t h = 0;
        for (; h + 4 <= G; h += 4) {
            const float32x4_t s = vld1q_f32(sn + h);
            /* select the product, not the score: a closed head adds 0 even when its weight is
             * not finite (a select, as the portable kernel and the backward's gate do) */
            const float32x4_t prod = vmulq_f32(vld1q_f32(w + h), s);
            acc = vaddq_f32(acc, vbslq_f32(vcgtq_f32(s, zero), prod, zero));
        }
        /* (l0 + l1) + (l2 + l3) */
        const float32x2_t pairs = vpadd_f32(vget_low_f32(acc), vget_high_f32(acc));
        float sum = vget_lane_f32(vpadd_f32(pairs, pairs), 0);
        for (; h < G; h++) sum += sn[h] > 0.0f ? w[h] * sn[h] : 0.0f;
        score[n] = sum;
    }
}

/* The dQ operand from the gate's bits, NEON (see kernels.h): per head, 8 slots at a time, the
 * head's bit of each slot's word (shifted down, masked) widened to a 16-bit lane mask that
 * selects dy. */
#include <arm_neon.h>

#include "backends/cpu/kernels/neonbf16/neonbf16.h"

void lig_bf16_dq_operand__neonbf16(const uint64_t *open_bits, int64_t nb, int64_t gp, const uint16_t *dy,
                                   uint16_t *a_dq) {
    const uint64x2_t one = vdupq_n_u64(1);
    for (int64_t h = 0; h < gp; h++) {
        const uint64_t *bits = open_bits + (h / 64) * nb;
        const int64x2_t down = vdupq_n_s64(-(h % 64));
        uint16_t *row = a_dq + h * nb;
        for (int64_t n = 0; n < nb; n += 8) { /* nb is a multiple of 64 */
            uint32x2_t m[4];
            for (int q = 0; q < 4; q++) {
                const uint64x2_t x = vandq_u64(vshlq_u64(vld1q_u64(bits + n + 2 * q), down), one);
                m[q] = vmovn_u64(vceqq_u64(x, one));
            }
            const uint16x8_t mask = vcombine_u16(vmovn_u32(vcombine_u32(m[0], m[1])), vmovn_u32(vcombine_u32(m[2], m[3])));
            vst1q_u16(row + n, vandq_u16(mask, vld1q_u16(dy + n)));
        }
    }
}

/* Row pairs into the pairs layout, NEON (see kernels.h): two rows of 8 bf16 become 8 pairs with
 * ZIP1/ZIP2; a row tail goes element by element. */
#include <arm_neon.h>

#include "backends/cpu/kernels/neonbf16/neonbf16.h"

void lig_bf16_pack_pairs__neonbf16(const uint16_t *src, int64_t ld, int64_t npairs, int64_t cols, uint16_t *out) {
    for (int64_t p = 0; p < npairs; p++) {
        const uint16_t *r0 = src + 2 * p * ld, *r1 = r0 + ld;
        uint16_t *o = out + p * cols * 2;
        int64_t j = 0;
        for (; j + 8 <= cols; j += 8) {
            const uint16x8_t a = vld1q_u16(r0 + j), b = vld1q_u16(r1 + j);
            vst1q_u16(o + 2 * j, vzip1q_u16(a, b));
            vst1q_u16(o + 2 * j + 8, vzip2q_u16(a, b));
        }
        for (; j < cols; j++) {
            o[2 * j] = r0[j];
            o[2 * j + 1] = r1[j];
        }
    }
}

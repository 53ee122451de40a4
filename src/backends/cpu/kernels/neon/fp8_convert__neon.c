/* FP8 e4m3fn to bf16 / fp32, NEON (see kernels.h), 16 codes per step, integer operations only
 * (no dependence on FPCR's flush-to-zero). For the 7-bit magnitude m = code & 0x7f:
 *   normal (m >= 8):   bf16 = (m << 4) + (120 << 7)    (exponent e - 7 + 127, mantissa shifted up 4)
 *   subnormal (m < 8): two 16-byte tables (low and high bytes of m * 2^-9 normalised), looked up
 *                      with TBL on m (indices past the table give 0, and those lanes are normal)
 *   m = 0x7f:          the NaN 0x7fc0
 * then the sign bit moves from bit 7 to bit 15. Row tails go through a zeroed scratch
 * (portable_tails.h). */
#include <arm_neon.h>

#include "backends/cpu/kernels/neon/neon.h"
#include "backends/cpu/kernels/portable_tails.h"

/* bf16 bits of m * 2^-9 for m = 0..7: low bytes, high bytes */
static const uint8_t sub_lo[16] = {0x00, 0x00, 0x80, 0xC0, 0x00, 0x20, 0x40, 0x60};
static const uint8_t sub_hi[16] = {0x00, 0x3B, 0x3B, 0x3B, 0x3C, 0x3C, 0x3C, 0x3C};

/* 8 codes' magnitudes (and the table lookups of 16) to 8 bf16 words */
static inline uint16x8_t words8(uint8x8_t code, uint8x8_t lo, uint8x8_t hi) {
    const uint16x8_t mag = vmovl_u8(vand_u8(code, vdup_n_u8(0x7f)));
    const uint16x8_t normal = vaddq_u16(vshlq_n_u16(mag, 4), vdupq_n_u16(120 << 7));
    const uint16x8_t sub = vorrq_u16(vmovl_u8(lo), vshll_n_u8(hi, 8));
    uint16x8_t r = vbslq_u16(vcltq_u16(mag, vdupq_n_u16(8)), sub, normal);
    r = vbslq_u16(vceqq_u16(mag, vdupq_n_u16(0x7f)), vdupq_n_u16(0x7fc0), r);
    return vorrq_u16(r, vshll_n_u8(vand_u8(code, vdup_n_u8(0x80)), 8));
}

/* 16 codes at s to 16 bf16 words at d */
static inline void to_bf16_16(const uint8_t *s, void *dst) {
    uint16_t *d = dst;
    const uint8x16_t code = vld1q_u8(s), mag = vandq_u8(code, vdupq_n_u8(0x7f));
    const uint8x16_t lo = vqtbl1q_u8(vld1q_u8(sub_lo), mag), hi = vqtbl1q_u8(vld1q_u8(sub_hi), mag);
    vst1q_u16(d, words8(vget_low_u8(code), vget_low_u8(lo), vget_low_u8(hi)));
    vst1q_u16(d + 8, words8(vget_high_u8(code), vget_high_u8(lo), vget_high_u8(hi)));
}

/* 16 codes at s to 16 fp32 at d: the bf16 words shifted into the upper half */
static inline void to_f32_16(const uint8_t *s, void *dst) {
    float *d = dst;
    uint16_t w[16];
    to_bf16_16(s, w);
    for (int q = 0; q < 2; q++) {
        const uint16x8_t x = vld1q_u16(w + 8 * q);
        vst1q_f32(d + 8 * q, vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(x), 16)));
        vst1q_f32(d + 8 * q + 4, vreinterpretq_f32_u32(vshll_high_n_u16(x, 16)));
    }
}

void lig_fp8_to_bf16__neon(int64_t rows, int64_t n, const uint8_t *src, int64_t lds, uint16_t *dst, int64_t ldd) {
    lig_fp8_rows_by16(rows, n, src, lds, dst, ldd, sizeof *dst, to_bf16_16);
}

void lig_fp8_to_f32__neon(int64_t rows, int64_t n, const uint8_t *src, int64_t lds, float *dst, int64_t ldd) {
    lig_fp8_rows_by16(rows, n, src, lds, dst, ldd, sizeof *dst, to_f32_16);
}

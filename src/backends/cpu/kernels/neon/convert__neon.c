/* NEON row conversions for unit-stride rows (see kernels.h); other strides use the portable code.
 * fp16 takes the conversion instructions (FCVTL, FCVTN: exact widening, round to nearest even
 * under the FPCR lig sets, subnormals kept with FZ off); NaN lanes take the portable code's bits
 * (quieted, sign and top payload kept) by integer operations, so that FPCR.DN cannot change them.
 * bf16 is integer work (a shift; the portable code's rounding add). */
#include <arm_neon.h>

#include "backends/cpu/kernels/neon/neon.h"
#include "backends/cpu/kernels/scalar/scalar.h"

/* 8 fp16 to fp32: NaN lanes quieted by setting the fp32 quiet bit, as lig_f16_to_f32 does */
static inline void f16x8_to_f32(uint16x8_t h, float *dst) {
    const float32x4_t lo = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h)));
    const float32x4_t hi = vcvt_high_f32_f16(vreinterpretq_f16_u16(h));
    const uint32x4_t ulo = vmovl_u16(vget_low_u16(h)), uhi = vmovl_high_u16(h);
    /* the widened NaN: sign << 16 | 0x7f800000 | man << 13 | 0x400000 */
    const uint32x4_t nan_lo = vorrq_u32(vorrq_u32(vshlq_n_u32(vandq_u32(ulo, vdupq_n_u32(0x8000u)), 16),
                                                  vshlq_n_u32(vandq_u32(ulo, vdupq_n_u32(0x3ffu)), 13)),
                                        vdupq_n_u32(0x7fc00000u));
    const uint32x4_t nan_hi = vorrq_u32(vorrq_u32(vshlq_n_u32(vandq_u32(uhi, vdupq_n_u32(0x8000u)), 16),
                                                  vshlq_n_u32(vandq_u32(uhi, vdupq_n_u32(0x3ffu)), 13)),
                                        vdupq_n_u32(0x7fc00000u));
    const uint32x4_t is_nan_lo = vcgtq_u32(vandq_u32(ulo, vdupq_n_u32(0x7fffu)), vdupq_n_u32(0x7c00u));
    const uint32x4_t is_nan_hi = vcgtq_u32(vandq_u32(uhi, vdupq_n_u32(0x7fffu)), vdupq_n_u32(0x7c00u));
    vst1q_f32(dst, vbslq_f32(is_nan_lo, vreinterpretq_f32_u32(nan_lo), lo));
    vst1q_f32(dst + 4, vbslq_f32(is_nan_hi, vreinterpretq_f32_u32(nan_hi), hi));
}

void lig_load_row__neon(lig_dtype dtype, const void *src, int64_t stride, int64_t n, float *dst) {
    if (lig_load_row_plain(dtype, src, stride, n, dst)) return;
    int64_t i = 0;
    const uint16_t *s = src;
    if (dtype == LIG_BFLOAT16) {
        for (; i + 8 <= n; i += 8) {
            const uint16x8_t x = vld1q_u16(s + i);
            vst1q_f32(dst + i, vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(x), 16)));
            vst1q_f32(dst + i + 4, vreinterpretq_f32_u32(vshll_high_n_u16(x, 16)));
        }
    } else {
        for (; i + 8 <= n; i += 8) f16x8_to_f32(vld1q_u16(s + i), dst + i);
    }
    lig_load_row__scalar(dtype, s + i, 1, n - i, dst + i);
}

/* fp32 -> bf16 bits, round to nearest even, NaN quieted (lig_f32_to_bf16's integer steps) */
static inline uint16x4_t f32_to_bf16(float32x4_t v) {
    const uint32x4_t x = vreinterpretq_u32_f32(v);
    const uint32x4_t lsb = vandq_u32(vshrq_n_u32(x, 16), vdupq_n_u32(1));
    const uint32x4_t rounded = vshrq_n_u32(vaddq_u32(vaddq_u32(x, vdupq_n_u32(0x7fffu)), lsb), 16);
    const uint32x4_t quiet = vorrq_u32(vshrq_n_u32(x, 16), vdupq_n_u32(0x40u));
    const uint32x4_t is_nan = vcgtq_u32(vandq_u32(x, vdupq_n_u32(0x7fffffffu)), vdupq_n_u32(0x7f800000u));
    return vmovn_u32(vbslq_u32(is_nan, quiet, rounded));
}

/* fp32 -> fp16 bits: FCVTN, NaN lanes as lig_f32_to_f16 writes them (sign | 0x7e00 | top payload) */
static inline uint16x4_t f32_to_f16(float32x4_t v) {
    const uint32x4_t x = vreinterpretq_u32_f32(v);
    const uint16x4_t h = vreinterpret_u16_f16(vcvt_f16_f32(v));
    const uint32x4_t nan = vorrq_u32(vorrq_u32(vandq_u32(vshrq_n_u32(x, 16), vdupq_n_u32(0x8000u)),
                                               vandq_u32(vshrq_n_u32(x, 13), vdupq_n_u32(0x3ffu))),
                                     vdupq_n_u32(0x7e00u));
    const uint32x4_t is_nan = vcgtq_u32(vandq_u32(x, vdupq_n_u32(0x7fffffffu)), vdupq_n_u32(0x7f800000u));
    return vbsl_u16(vmovn_u32(is_nan), vmovn_u32(nan), h);
}

void lig_store_row__neon(const float *src, int64_t n, lig_dtype dtype, void *dst, int64_t stride) {
    if (lig_store_row_plain(src, n, dtype, dst, stride)) return;
    uint16_t *d = dst;
    int64_t i = 0;
    if (dtype == LIG_BFLOAT16) {
        for (; i + 8 <= n; i += 8)
            vst1q_u16(d + i, vcombine_u16(f32_to_bf16(vld1q_f32(src + i)), f32_to_bf16(vld1q_f32(src + i + 4))));
    } else {
        for (; i + 8 <= n; i += 8)
            vst1q_u16(d + i, vcombine_u16(f32_to_f16(vld1q_f32(src + i)), f32_to_f16(vld1q_f32(src + i + 4))));
    }
    lig_store_row__scalar(src + i, n - i, dtype, d + i, 1);
}

void lig_axpy_row__neon(float *dst, float a, const float *x, int64_t n) {
    const float32x4_t va = vdupq_n_f32(a);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, vfmaq_f32(vld1q_f32(dst + i), va, vld1q_f32(x + i)));
    lig_axpy_row__scalar(dst + i, a, x + i, n - i);
}

/* The one implementation of lig's MXFP4 element and scale formats (OCP Microscaling v1.0), shared
 * by the library's public entries (lig_float4_e2m1_to_float, lig_float_to_float4_e2m1,
 * lig_float8_e8m0fnu_to_float), the MXFP4 quantizer (api/mxfp4_quant.c) and, being header-only,
 * device code:
 *
 *   e2m1 code S.EE.M (a nibble), bias 1:  E = 0      (-1)^S * M * 0.5          (zero, the subnormal 0.5)
 *                                         E > 0      (-1)^S * (1 + M/2) * 2^(E-1)
 *   magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6; no infinities, no NaN.
 *   e8m0 scale byte E (unsigned, exponent only):  2^(E-127) for E < 255 (E = 0 is 2^-127, an fp32
 *   subnormal), E = 255 NaN.
 *
 * Decoding is exact both ways. Encoding e2m1 has two tie rules because the sources differ (see
 * docs/inference.md, "DeepSeek-V4: MXFP4"): the engines' kernels convert with the hardware's
 * round-to-nearest-even (PTX cvt.rn.satfinite), DeepGEMM's reference helper rounds every tie
 * towards zero and never writes a negative zero. */
#ifndef LIG_CORE_FP4_BITS_H
#define LIG_CORE_FP4_BITS_H

#include <stdint.h>

#include "core/half_bits.h"

/* Twice the magnitude of code c (its low three bits), an integer in 0..12: every magnitude is a
 * small multiple of 0.5, (2 + m) * 2^(e-2) for e > 0 and m * 0.5 for e = 0. The integer form is what
 * the MXFP4 engines multiply (exact int8 products). */
LIG_HALF_FN int32_t lig_fp4e2m1_twice_magnitude(uint8_t c) {
    const int32_t e = (c >> 1) & 3, m = c & 1;
    return e == 0 ? m : (2 + m) << (e - 1);
}

LIG_HALF_FN float lig_fp4e2m1_to_f32(uint8_t c) {
    const float v = (float)lig_fp4e2m1_twice_magnitude(c) * 0.5f;
    return (c & 8u) ? -v : v;
}

/* Round to nearest, ties to the even code (the code's lowest bit), saturating: every magnitude
 * above 6, infinities included, becomes 6. The decision points are the midpoints between
 * neighbouring magnitudes (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5); at 0.25, 1.25, 2.5 and 5 the lower
 * neighbour's code is even, at 0.75, 1.75 and 3.5 the upper one's. A value that rounds to zero
 * keeps its sign (0x8 is -0). NaN has no code: it becomes 0x7 (+6), the choice documented in
 * docs/contract.md section 5. */
LIG_HALF_FN uint8_t lig_f32_to_fp4e2m1(float f) {
    const uint32_t x = lig_half_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7u;
    const float a = lig_half_bits_f32(x & 0x7fffffffu);
    const uint8_t code = (uint8_t)((a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) + (a >= 3.5f) +
                                   (a > 5.0f));
    return (uint8_t)(((x >> 28) & 8u) | code);
}

/* DeepGEMM's reference rounding: nearest, every tie towards zero (a midpoint takes the smaller
 * magnitude), saturating at 6, the sign kept only on a non-zero code (so never 0x8); NaN becomes
 * 0 as the helper's comparisons make it. */
LIG_HALF_FN uint8_t lig_f32_to_fp4e2m1_ties_to_zero(float f) {
    const uint32_t x = lig_half_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return 0;
    const float a = lig_half_bits_f32(x & 0x7fffffffu);
    const uint8_t code = (uint8_t)((a > 0.25f) + (a > 0.75f) + (a > 1.25f) + (a > 1.75f) + (a > 2.5f) + (a > 3.5f) +
                                   (a > 5.0f));
    return (uint8_t)((code != 0 && (x >> 31)) ? (8u | code) : code);
}

LIG_HALF_FN float lig_e8m0_to_f32(uint8_t e) {
    if (e == 255u) return lig_half_bits_f32(0x7fc00000u);
    if (e == 0u) return lig_half_bits_f32(0x00400000u); /* 2^-127: the one scale below fp32's normals */
    return lig_half_bits_f32((uint32_t)e << 23);
}

/* The e8m0 byte of the smallest power of two >= t, for t a positive normal finite fp32 (the
 * quantizer's floors keep it there): the biased exponent, plus one when any mantissa bit is set. */
LIG_HALF_FN uint8_t lig_e8m0_ceil_of(float t) {
    return (uint8_t)((lig_half_f32_bits(t) + 0x7fffffu) >> 23);
}

/* 1 / 2^(e-127) as an exact fp32, for a scale byte e in [1, 254]. */
LIG_HALF_FN float lig_e8m0_inverse(uint8_t e) {
    return e == 254u ? lig_half_bits_f32(0x00400000u) : lig_half_bits_f32((uint32_t)(254u - e) << 23);
}

#endif

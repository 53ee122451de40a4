/* The one implementation of lig's FLOAT8_E4M3FN conversions (OCP 8-bit float, E4M3, "fn": finite
 * only), shared by the library (core/dtype_convert.h), its public entries
 * (lig_float8_e4m3fn_to_float and lig_float_to_float8_e4m3fn) and, being header-only, device code:
 *
 *   code S.EEEE.MMM, bias 7:  E = 0        (-1)^S * M * 2^-9                 (zero, subnormals)
 *                             0 < E, not S.1111.111   (-1)^S * (1 + M/8) * 2^(E-7)
 *                             S.1111.111   NaN (there are no infinities; the largest finite is 448)
 *
 * Decoding is exact: every code is an fp32 value. Encoding rounds to nearest even and follows
 * PyTorch's tensor.to(torch.float8_e4m3fn) (c10's fp8e4m3fn_from_fp32_value since it saturates):
 * every value of magnitude >= 448, infinities included, becomes +-448 (0x7E / 0xFE) -- the
 * values in (448, 464] would round to 448 anyway, those above it have no code -- and NaN becomes
 * 0x7F with the input's sign bit. */
#ifndef LIG_CORE_FP8_BITS_H
#define LIG_CORE_FP8_BITS_H

#include <stdint.h>

#include "core/half_bits.h"

LIG_HALF_FN float lig_fp8e4m3_to_f32(uint8_t c) {
    const uint32_t sign = (uint32_t)(c & 0x80u) << 24, exp = (c >> 3) & 0xfu, man = c & 0x7u;
    if (exp == 0xf && man == 0x7) return lig_half_bits_f32(sign | 0x7fc00000u); /* the NaN code: a quiet NaN */
    if (exp == 0) {
        const float v = (float)man * 0.001953125f; /* man * 2^-9: exact */
        return sign ? -v : v;
    }
    return lig_half_bits_f32(sign | ((exp + 120u) << 23) | (man << 20)); /* rebias 7 -> 127 */
}

LIG_HALF_FN uint8_t lig_f32_to_fp8e4m3(float f) {
    const uint32_t x = lig_half_f32_bits(f);
    const uint8_t sign = (uint8_t)((x >> 24) & 0x80u);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint8_t)(sign | 0x7fu); /* NaN */
    if (ax >= 0x43e00000u) return (uint8_t)(sign | 0x7eu); /* >= 448, Inf included: saturate */
    if (ax >= 0x3c800000u) {                               /* >= 2^-6: a normal code */
        uint32_t m = ax;
        /* just under half an ulp of the 3-bit mantissa, plus one when the kept lsb is odd: ties
         * to even; a carry into the exponent is the right rounding (below 448 it stays finite) */
        m += 0x7ffffu + ((m >> 20) & 1u);
        return (uint8_t)(sign | ((m >> 20) - (120u << 3)));
    }
    if (ax <= 0x3a800000u) return sign; /* at most 2^-10, half the smallest subnormal: the tie goes to even 0 */
    /* a subnormal code (or 2^-6 after rounding up): the value in units of 2^-9 is man * 2^(exp - 141) */
    const uint32_t exp = ax >> 23, man = (ax & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 141u - exp; /* exp 117..120: 21..24 */
    uint32_t q = man >> shift;
    const uint32_t rem = man & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (uint8_t)(sign | q);
}

#endif

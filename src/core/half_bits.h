/* The one implementation of lig's scalar conversions between fp32 and the 16-bit float formats,
 * shared by the library (core/dtype_convert.h), its public entries (lig_float_to_bfloat16 and
 * kin, which the aclnn front end uses) and the CUDA kernels (compiled by nvcc for host and
 * device): round to nearest even, NaN stays NaN (quieted, sign and top payload bits kept), Inf
 * stays Inf, subnormals are exact both ways. Header-only so that device code can inline it. */
#ifndef LIG_CORE_HALF_BITS_H
#define LIG_CORE_HALF_BITS_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define LIG_HALF_FN static __host__ __device__ __forceinline__
#else
#define LIG_HALF_FN static inline
#endif

LIG_HALF_FN uint32_t lig_half_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

LIG_HALF_FN float lig_half_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

LIG_HALF_FN float lig_bf16_to_f32(uint16_t h) { return lig_half_bits_f32((uint32_t)h << 16); }

LIG_HALF_FN uint16_t lig_f32_to_bf16(float f) {
    uint32_t x = lig_half_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x0040u); /* quiet the NaN */
    /* add just under half an ulp, plus one when the kept lsb is odd: ties go to even;
     * a carry into the exponent is the correct rounding (up to Inf) */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

LIG_HALF_FN float lig_f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return lig_half_bits_f32(sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0)); /* Inf, quiet NaN */
    if (exp == 0) {
        const float v = (float)man * 5.9604644775390625e-08f; /* zero or subnormal (man * 2^-24): exact in fp32 */
        return sign ? -v : v;
    }
    return lig_half_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

LIG_HALF_FN uint16_t lig_f32_to_f16(float f) {
    const uint32_t x = lig_half_f32_bits(f);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* Inf, or NaN kept quiet with the top payload bits */
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to Inf */
    if (ax >= 0x38800000u) {                                  /* normal half: rebias by 112 */
        uint32_t m = ax - 0x38000000u;
        m += 0xfffu + ((m >> 13) & 1u);
        return (uint16_t)(sign | (m >> 13));
    }
    if (ax < 0x33000000u) return sign; /* at most 2^-25: rounds to zero (the tie goes to even 0) */
    /* subnormal half: the value in units of 2^-24 is man * 2^(exp - 126) */
    const uint32_t exp = ax >> 23, man = (ax & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exp; /* 14..24 */
    uint32_t q = man >> shift;
    const uint32_t rem = man & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (uint16_t)(sign | q);
}

#endif

#include "core/dtype_convert.h"

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float lig_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t lig_f32_to_bf16(float f) {
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x0040u); /* quiet the NaN */
    /* add just under half an ulp, plus one when the kept lsb is odd: ties go to even;
     * a carry into the exponent is the correct rounding (up to Inf) */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

float lig_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0)); /* Inf, quiet NaN */
    if (exp == 0) {
        float v = (float)man * 0x1p-24f; /* zero or subnormal: exact in fp32 */
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

uint16_t lig_f32_to_f16(float f) {
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
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
    uint32_t exp = ax >> 23, man = (ax & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - exp; /* 14..24 */
    uint32_t q = man >> shift, rem = man & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (uint16_t)(sign | q);
}

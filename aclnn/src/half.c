#include "half.h"

#include <string.h>

#include "../include/acl/acl_base.h"

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float float_of(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float fe_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
        if (mant == 0) return float_of(sign);
        uint32_t e = 113; /* 2^-14 is float exponent 113; normalise the subnormal */
        while (!(mant & 0x400u)) {
            mant <<= 1;
            e--;
        }
        return float_of(sign | (e << 23) | ((mant & 0x3ffu) << 13));
    }
    if (exp == 31) return float_of(sign | 0x7f800000u | (mant << 13));
    return float_of(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t fe_float_to_half(float f) {
    uint32_t x = bits_of(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t a = x & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN stays NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to infinity */
    if (a >= 0x38800000u) {                                  /* a normal half */
        uint32_t h = ((((a >> 23) - 112) << 10) | ((a & 0x7fffffu) >> 13));
        uint32_t rest = a & 0x1fffu;
        if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
        return (uint16_t)(sign | h);
    }
    if (a <= 0x33000000u) return sign; /* at most 2^-25: ties to the even zero */
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - (a >> 23); /* 14..24 */
    uint32_t h = m >> shift;
    uint32_t rest = m & ((1u << shift) - 1u), half_way = 1u << (shift - 1);
    if (rest > half_way || (rest == half_way && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

float fe_bf16_to_float(uint16_t b) { return float_of((uint32_t)b << 16); }

uint16_t fe_float_to_bf16(float f) {
    uint32_t x = bits_of(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

float aclFloat16ToFloat(aclFloat16 value) { return fe_half_to_float(value); }

aclFloat16 aclFloatToFloat16(float value) { return fe_float_to_half(value); }

#include "float_formats.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/*
 * Generic RNE rounding of a double into a binary format with `p` significand bits (implicit
 * bit included) and normal exponents emin..emax. Scaling by a power of two is exact, and
 * nearbyint() rounds half to even in the default rounding mode, so the result is the
 * correctly rounded value, subnormals included.
 */
static double round_format(double x, int p, int emin, int emax)
{
    if (isnan(x) || isinf(x) || x == 0.0) {
        return x;
    }
    int ex = 0;
    (void)frexp(x, &ex); /* x = m * 2^ex, 0.5 <= |m| < 1 */
    int e = ex - 1;      /* x = 1.f * 2^e */
    if (e < emin) {
        e = emin; /* subnormal range: fixed quantum */
    }
    int quantum_exp = e - (p - 1);
    double y = ldexp(nearbyint(ldexp(x, -quantum_exp)), quantum_exp);
    double max_finite = ldexp(2.0 - ldexp(1.0, 1 - p), emax);
    if (fabs(y) > max_finite) {
        return copysign(INFINITY, x);
    }
    return y;
}

double th_round_f32(double x)
{
    return round_format(x, 24, -126, 127);
}

double th_round_f16(double x)
{
    return round_format(x, 11, -14, 15);
}

double th_round_bf16(double x)
{
    return round_format(x, 8, -126, 127);
}

double th_round_dtype(lig_dtype dtype, double x)
{
    switch (dtype) {
    case LIG_FLOAT32: return th_round_f32(x);
    case LIG_FLOAT16: return th_round_f16(x);
    case LIG_BFLOAT16: return th_round_bf16(x);
    default: return x;
    }
}

uint32_t th_f32_bits(double x)
{
    /* The rounded value is exactly representable, so the conversion to float is exact. */
    float f = (float)th_round_f32(x);
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

double th_f32_value(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return (double)f;
}

uint16_t th_bf16_bits(double x)
{
    if (isnan(x)) {
        return (uint16_t)(signbit(x) ? 0xFFC0u : 0x7FC0u);
    }
    /* bf16 values are float values whose low 16 bits are zero. */
    return (uint16_t)(th_f32_bits(th_round_bf16(x)) >> 16);
}

double th_bf16_value(uint16_t bits)
{
    return th_f32_value((uint32_t)bits << 16);
}

uint16_t th_f16_bits(double x)
{
    uint16_t sign = signbit(x) ? 0x8000u : 0u;
    if (isnan(x)) {
        return (uint16_t)(sign | 0x7E00u);
    }
    double y = fabs(th_round_f16(x));
    if (isinf(y)) {
        return (uint16_t)(sign | 0x7C00u);
    }
    if (y == 0.0) {
        return sign;
    }
    int ex = 0;
    (void)frexp(y, &ex);
    int e = ex - 1;
    if (e < -14) {
        /* subnormal: y = m * 2^-24, 0 < m < 1024 */
        return (uint16_t)(sign | (uint16_t)ldexp(y, 24));
    }
    uint16_t mant = (uint16_t)(ldexp(y, 10 - e) - 1024.0); /* y = (1024 + mant) * 2^(e-10) */
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | mant);
}

double th_f16_value(uint16_t bits)
{
    int e = (bits >> 10) & 0x1F;
    int m = bits & 0x3FF;
    double v;
    if (e == 0x1F) {
        v = m != 0 ? NAN : INFINITY;
    } else if (e == 0) {
        v = ldexp((double)m, -24);
    } else {
        v = ldexp((double)(1024 + m), e - 25);
    }
    return (bits & 0x8000u) ? -v : v;
}

/* The contract's element sizes, written apart from the library's lig_dtype_size on purpose: the
 * harness sizes and reads its buffers without trusting the code under test. */
size_t th_dtype_size(lig_dtype dtype)
{
    switch (dtype) {
    case LIG_FLOAT32: return 4;
    case LIG_FLOAT16: return 2;
    case LIG_BFLOAT16: return 2;
    case LIG_INT32: return 4;
    case LIG_INT64: return 8;
    case LIG_FLOAT8_E4M3FN: return 1;
    case LIG_INT8: return 1;
    case LIG_UINT8: return 1;
    case LIG_FLOAT4_E2M1X2: return 1;
    default: return 0;
    }
}

int th_dtype_is_float(lig_dtype dtype)
{
    return dtype == LIG_FLOAT32 || dtype == LIG_FLOAT16 || dtype == LIG_BFLOAT16;
}

const char *th_dtype_name(lig_dtype dtype)
{
    switch (dtype) {
    case LIG_FLOAT32: return "f32";
    case LIG_FLOAT16: return "f16";
    case LIG_BFLOAT16: return "bf16";
    case LIG_INT32: return "i32";
    case LIG_INT64: return "i64";
    case LIG_FLOAT8_E4M3FN: return "fp8e4m3";
    case LIG_INT8: return "i8";
    case LIG_UINT8: return "u8";
    case LIG_FLOAT4_E2M1X2: return "fp4e2m1x2";
    default: return "bad-dtype";
    }
}

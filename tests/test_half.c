/* Self-checks of the test-side fp16/bf16 helpers (the tests trust them to build inputs and to
 * read outputs, so they are checked exhaustively against independent formulations). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "float_formats.h"
#include "framework.h"
#include "lig.h"
#include "rng.h"

LIG_TEST(half_known_values)
{
    CHECK(th_f16_bits(1.0) == 0x3C00, "f16(1.0) = %04x", th_f16_bits(1.0));
    CHECK(th_f16_bits(-2.0) == 0xC000, "f16(-2.0) = %04x", th_f16_bits(-2.0));
    CHECK(th_f16_bits(65504.0) == 0x7BFF, "f16(65504) = %04x", th_f16_bits(65504.0));
    CHECK(th_f16_bits(65519.0) == 0x7BFF, "65519 rounds down to the largest finite");
    CHECK(th_f16_bits(65520.0) == 0x7C00, "65520 (the midpoint to 2^16) rounds to inf");
    CHECK(th_f16_bits(ldexp(1.0, -24)) == 0x0001, "smallest subnormal");
    CHECK(th_f16_bits(ldexp(1.0, -25)) == 0x0000, "half the smallest subnormal ties to even (0)");
    CHECK(th_f16_bits(ldexp(3.0, -25)) == 0x0002, "1.5 x smallest subnormal ties to even (2)");
    CHECK(th_f16_bits(ldexp(1.0, -14)) == 0x0400, "smallest normal");
    CHECK(th_f16_bits(-0.0) == 0x8000, "negative zero keeps its sign");
    CHECK(th_f16_bits(1.0 + ldexp(1.0, -11)) == 0x3C00, "1 + half ulp ties to even (down)");
    CHECK(th_f16_bits(1.0 + 3 * ldexp(1.0, -11)) == 0x3C02, "1 + 1.5 ulp ties to even (up)");
    CHECK((th_f16_bits(NAN) & 0x7C00) == 0x7C00 && (th_f16_bits(NAN) & 0x3FF) != 0, "NaN stays NaN");
    CHECK(th_f16_value(0x3555) == 0.333251953125, "f16 0x3555");

    CHECK(th_bf16_bits(1.0) == 0x3F80, "bf16(1.0) = %04x", th_bf16_bits(1.0));
    CHECK(th_bf16_bits(1.0 + ldexp(1.0, -8)) == 0x3F80, "bf16 1 + half ulp ties to even (down)");
    CHECK(th_bf16_bits(1.0 + 3 * ldexp(1.0, -8)) == 0x3F82, "bf16 1 + 1.5 ulp ties to even (up)");
    CHECK(th_bf16_bits(1.0 + ldexp(1.0, -8) + ldexp(1.0, -30)) == 0x3F81,
          "just above the midpoint rounds up (no double rounding through float)");
    CHECK(th_bf16_bits(3.4e38) == 0x7F80, "bf16 overflow to inf");
    CHECK(th_bf16_bits(-INFINITY) == 0xFF80, "bf16 -inf");
    CHECK(isnan(th_bf16_value(th_bf16_bits(NAN))), "bf16 NaN");
    CHECK(th_f32_bits(1.0 + ldexp(1.0, -24) + ldexp(1.0, -40)) == 0x3F800001u,
          "f32 rounding straight from double");
    CHECK(isinf(th_round_f32(1e39)), "f32 overflow to inf");
}

/* Patterns of a 16-bit format that do not survive value -> bits (NaN: stays NaN) or rounding. */
static int roundtrip_failures(double (*value)(uint16_t), uint16_t (*bits)(double), double (*round)(double))
{
    int bad = 0;
    for (uint32_t u = 0; u < 65536u; u++) {
        double v = value((uint16_t)u);
        if (isnan(v)) {
            bad += !isnan(value(bits(v)));
        } else {
            bad += bits(v) != u;
            bad += round(v) != v;
        }
    }
    return bad;
}

LIG_TEST(half_roundtrip_all_patterns)
{
    int bad_f16 = roundtrip_failures(th_f16_value, th_f16_bits, th_round_f16);
    int bad_bf16 = roundtrip_failures(th_bf16_value, th_bf16_bits, th_round_bf16);
    CHECK(bad_f16 == 0, "%d f16 patterns do not round-trip", bad_f16);
    CHECK(bad_bf16 == 0, "%d bf16 patterns do not round-trip", bad_bf16);
}

/* For every pair of neighbouring positive finite values: the exact midpoint goes to the even
 * pattern, anything a hair off the midpoint goes to the nearer one. */
static int check_midpoints(double (*value)(uint16_t), uint16_t (*bits)(double), uint16_t last_finite,
                           uint16_t inf_bits)
{
    int bad = 0;
    for (uint32_t u = 0; u < last_finite; u++) {
        double a = value((uint16_t)u), b = value((uint16_t)(u + 1));
        double mid = 0.5 * (a + b), eps = (b - a) / 1024.0;
        uint16_t even = (u & 1u) ? (uint16_t)(u + 1) : (uint16_t)u;
        bad += bits(mid) != even;
        bad += bits(mid - eps) != u;
        bad += bits(mid + eps) != u + 1;
    }
    double top = value(last_finite), below = value((uint16_t)(last_finite - 1));
    double over = top + 0.5 * (top - below);
    bad += bits(over) != inf_bits;                       /* the midpoint to 2^(emax+1) */
    bad += bits(over - (top - below) / 1024.0) != last_finite;
    return bad;
}

LIG_TEST(half_rounding_midpoints)
{
    int bad = check_midpoints(th_f16_value, th_f16_bits, 0x7BFF, 0x7C00);
    CHECK(bad == 0, "%d f16 midpoint roundings wrong", bad);
    bad = check_midpoints(th_bf16_value, th_bf16_bits, 0x7F7F, 0x7F80);
    CHECK(bad == 0, "%d bf16 midpoint roundings wrong", bad);
}

/* bf16 from float via the usual integer trick, as an independent formulation. */
LIG_TEST(half_bf16_matches_bit_trick)
{
    th_rng r = th_rng_make(7);
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        uint32_t u = (uint32_t)th_rng_next(&r);
        if (((u >> 23) & 0xFF) == 0xFF) {
            continue; /* inf/NaN */
        }
        float f;
        memcpy(&f, &u, 4);
        uint32_t trick = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
        if (th_bf16_bits((double)f) != (uint16_t)trick) {
            bad++;
        }
    }
    CHECK(bad == 0, "%d random floats round differently from the bit trick", bad);
}

/* lig's public conversions (lig.h, the one implementation the library, the CANN front end and
 * the CUDA kernels share) against the test-side formulation: every 16-bit pattern decoded, and
 * float patterns encoded: every midpoint between neighbouring 16-bit values and the floats just
 * below and above it, and a stride through all 2^32 patterns. */
static int encode_mismatch(float f, uint16_t got, uint16_t (*reference)(double), double (*value)(uint16_t)) {
    if (isnan(f)) return !isnan(value(got));
    return got != reference((double)f);
}

LIG_TEST(half_public_conversions)
{
    int bad_dec = 0, bad_enc = 0;
    for (uint32_t u = 0; u < 65536u; u++) {
        const double f16 = th_f16_value((uint16_t)u), bf16 = th_bf16_value((uint16_t)u);
        const float a = lig_float16_to_float((uint16_t)u), b = lig_bfloat16_to_float((uint16_t)u);
        bad_dec += isnan(f16) ? !isnan(a) : (double)a != f16 || !signbit(a) != !signbit(f16);
        bad_dec += isnan(bf16) ? !isnan(b) : (double)b != bf16 || !signbit(b) != !signbit(bf16);
        /* the midpoint above each pattern (exact in fp32) and the floats next to it */
        const double f16_next = th_f16_value((uint16_t)(u + 1));
        const float f16_mid = (u & 0x7fffu) < 0x7c00u ? (float)(0.5 * (f16 + f16_next)) : (float)f16;
        for (int32_t d = -1; d <= 1; d++) {
            float g;
            const uint32_t bits = (u << 16) + 0x8000u + (uint32_t)d;
            memcpy(&g, &bits, sizeof g);
            bad_enc += encode_mismatch(g, lig_float_to_bfloat16(g), th_bf16_bits, th_bf16_value);
            const float h = d == 0 ? f16_mid : nextafterf(f16_mid, d * INFINITY);
            bad_enc += encode_mismatch(h, lig_float_to_float16(h), th_f16_bits, th_f16_value);
        }
    }
    for (uint64_t x = 0; x < (1ull << 32); x += 65521u) {
        const uint32_t bits = (uint32_t)x;
        float g;
        memcpy(&g, &bits, sizeof g);
        bad_enc += encode_mismatch(g, lig_float_to_float16(g), th_f16_bits, th_f16_value);
        bad_enc += encode_mismatch(g, lig_float_to_bfloat16(g), th_bf16_bits, th_bf16_value);
    }
    CHECK(bad_dec == 0, "%d 16-bit patterns decoded differently from the reference", bad_dec);
    CHECK(bad_enc == 0, "%d floats encoded differently from the reference", bad_enc);
    CHECK((lig_float_to_float16(NAN) & 0x7e00) == 0x7e00 && (lig_float_to_bfloat16(NAN) & 0x7fc0) == 0x7fc0,
          "NaN encodes as a quiet NaN");
}

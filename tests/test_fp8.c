/* FLOAT8_E4M3FN conversions (lig_float8_e4m3fn_to_float, lig_float_to_float8_e4m3fn; contract 5):
 * every code against a decode written here from the OCP definition, every midpoint between two
 * neighbouring codes, the overflow, NaN and subnormal cases, a brute-force nearest-code encoder
 * over many floats, and a table of PyTorch's tensor.to(torch.float8_e4m3fn) results. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "framework.h"
#include "lig.h"
#include "rng.h"

/* OCP E4M3FN: S.EEEE.MMM, bias 7, E = 0 subnormal (M * 2^-9), S.1111.111 NaN, no infinities. */
static double fp8_value(unsigned c)
{
    const unsigned e = (c >> 3) & 15u, m = c & 7u;
    const double sign = (c & 0x80u) ? -1.0 : 1.0;
    if (e == 15u && m == 7u) {
        return NAN;
    }
    return sign * (e == 0 ? ldexp((double)m, -9) : ldexp((double)(8u + m), (int)e - 10));
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The nearest finite code by brute force, ties to the even code (even mantissa), saturating at
 * +-448 as PyTorch does; NaN to 0x7F with the sign bit, infinities to +-448. */
static unsigned fp8_nearest(float f)
{
    const unsigned sign = (f32_bits(f) >> 24) & 0x80u;
    if (isnan(f)) {
        return sign | 0x7fu;
    }
    const double a = fabs((double)f);
    if (isinf(f)) {
        return sign | 0x7eu;
    }
    unsigned best = 0;
    double best_d = INFINITY;
    for (unsigned c = 0; c <= 0x7eu; c++) {
        const double d = fabs(fp8_value(c) - a);
        if (d < best_d || (d == best_d && (c & 1u) == 0)) {
            best = c;
            best_d = d;
        }
    }
    return sign | best;
}

LIG_TEST(fp8_decode_all_codes)
{
    int nan_codes = 0;
    for (unsigned c = 0; c < 256; c++) {
        const float got = lig_float8_e4m3fn_to_float((uint8_t)c);
        const double want = fp8_value(c);
        if (isnan(want)) {
            nan_codes++;
            CHECK(isnan(got), "code 0x%02x: expected NaN, got %.9g", c, (double)got);
            CHECK(((f32_bits(got) >> 31) != 0) == ((c & 0x80u) != 0), "code 0x%02x: NaN sign", c);
        } else {
            CHECK((double)got == want && !signbit(got) == !signbit(want), "code 0x%02x: expected %.9g, got %.9g", c,
                  want, (double)got);
            /* every finite code round-trips */
            CHECK(lig_float_to_float8_e4m3fn(got) == c, "code 0x%02x: re-encoded as 0x%02x", c,
                  lig_float_to_float8_e4m3fn(got));
        }
    }
    CHECK(nan_codes == 2, "expected the two NaN codes 0x7f and 0xff, got %d", nan_codes);
    CHECK(lig_float8_e4m3fn_to_float(0x7e) == 448.0f && lig_float8_e4m3fn_to_float(0x01) == 0x1p-9f &&
              lig_float8_e4m3fn_to_float(0x08) == 0x1p-6f && lig_float8_e4m3fn_to_float(0x07) == 7 * 0x1p-9f,
          "known codes: max 448, smallest subnormal 2^-9, smallest normal 2^-6, largest subnormal 7 * 2^-9");
}

LIG_TEST(fp8_encode_midpoints)
{
    int64_t checked = 0;
    for (unsigned sign = 0; sign <= 0x80u; sign += 0x80u) {
        for (unsigned c = 0; c < 0x7eu; c++) {
            const double lo = fp8_value(c), hi = fp8_value(c + 1);
            const float mid = (float)((lo + hi) / 2); /* at most 5 significant bits: exact */
            const float m = sign ? -mid : mid;
            const unsigned even = (c & 1u) ? c + 1 : c;
            CHECK(lig_float_to_float8_e4m3fn(m) == (sign | even), "midpoint %.9g of 0x%02x/0x%02x: expected 0x%02x, "
                  "got 0x%02x", (double)m, c, c + 1, sign | even, lig_float_to_float8_e4m3fn(m));
            /* one fp32 ulp either side decides */
            const float below = nextafterf(m, 0.0f), above = nextafterf(m, sign ? -INFINITY : INFINITY);
            CHECK(lig_float_to_float8_e4m3fn(below) == (sign | c), "just below midpoint %.9g: expected 0x%02x, got "
                  "0x%02x", (double)m, sign | c, lig_float_to_float8_e4m3fn(below));
            CHECK(lig_float_to_float8_e4m3fn(above) == (sign | (c + 1)), "just above midpoint %.9g: expected 0x%02x, "
                  "got 0x%02x", (double)m, sign | (c + 1), lig_float_to_float8_e4m3fn(above));
            checked += 3;
        }
    }
    th_note("%lld midpoint encodings checked", (long long)checked);
}

LIG_TEST(fp8_encode_special_values)
{
    static const struct {
        float in;
        unsigned out;
        const char *what;
    } cases[] = {
        {0.0f, 0x00, "+0"}, {-0.0f, 0x80, "-0"}, {0x1p-10f, 0x00, "half the smallest subnormal ties to 0"},
        {-0x1p-10f, 0x80, "its negative to -0"}, {0x1.000002p-10f, 0x01, "just above it rounds up"},
        {0x1p-149f, 0x00, "an fp32 subnormal"}, {-0x1p-149f, 0x80, "a negative fp32 subnormal"},
        {0x1.8p-9f, 0x02, "1.5 * 2^-9 ties to the even subnormal 2"}, {0x1.4p-7f, 0x05, "5 * 2^-9"},
        {0x1.ep-7f, 0x08, "7.5 * 2^-9 rounds up into the normal range"}, {448.0f, 0x7e, "the largest finite"},
        {464.0f, 0x7e, "the midpoint above 448 ties to 448"}, {470.0f, 0x7e, "above it: saturates"},
        {480.0f, 0x7e, "480: saturates"}, {1e30f, 0x7e, "1e30: saturates"}, {-1e30f, 0xfe, "-1e30: saturates"},
        {INFINITY, 0x7e, "+inf saturates"}, {-INFINITY, 0xfe, "-inf saturates"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const unsigned got = lig_float_to_float8_e4m3fn(cases[i].in);
        CHECK(got == cases[i].out, "%s (%a): expected 0x%02x, got 0x%02x", cases[i].what, (double)cases[i].in,
              cases[i].out, got);
    }
    CHECK(lig_float_to_float8_e4m3fn(NAN) == 0x7f, "NaN: expected 0x7f, got 0x%02x", lig_float_to_float8_e4m3fn(NAN));
    CHECK(lig_float_to_float8_e4m3fn(-NAN) == 0xff, "-NaN: expected 0xff, got 0x%02x",
          lig_float_to_float8_e4m3fn(-NAN));
    CHECK(lig_float_to_float8_e4m3fn(bits_f32(0x7f800001u)) == 0x7f, "a signalling NaN becomes the NaN code");
}

LIG_TEST(fp8_encode_brute_force)
{
    th_rng r = th_rng_make(0xf8e4u);
    int64_t n = 0, bad = 0;
    /* every fp32 with the exponents of the fp8 range and 12 random low bits, plus random bits */
    for (uint32_t e = 100; e <= 140; e++) {
        for (uint32_t hi = 0; hi < 2048; hi++) {
            const uint32_t bits = (e << 23) | (hi << 12) | (uint32_t)th_rng_range(&r, 0, 4095);
            for (int s = 0; s < 2; s++) {
                const float f = bits_f32(bits | (s ? 0x80000000u : 0));
                const unsigned want = fp8_nearest(f), got = lig_float_to_float8_e4m3fn(f);
                if (got != want && bad++ < 5) {
                    CHECK(0, "%a: expected 0x%02x, got 0x%02x", (double)f, want, got);
                }
                n++;
            }
        }
    }
    for (int i = 0; i < 200000; i++) {
        const float f = bits_f32((uint32_t)th_rng_next(&r));
        const unsigned want = fp8_nearest(f), got = lig_float_to_float8_e4m3fn(f);
        if (got != want && bad++ < 5) {
            CHECK(0, "%a: expected 0x%02x, got 0x%02x", (double)f, want, got);
        }
        n++;
    }
    CHECK(bad == 0, "%lld of %lld encodings differ from the nearest code", (long long)bad, (long long)n);
    th_note("%lld floats encoded", (long long)n);
}

/* Recorded from PyTorch 2.15 (CPU): torch.tensor(vals, dtype=torch.float32).to(torch.float8_e4m3fn),
 * as (fp32 bits, code); -nan gave 0xff and nan 0x7f. */
static const struct {
    uint32_t in;
    uint8_t code;
} torch_table[] = {
    {0x00000000u, 0x00},
    {0x80000000u, 0x80},
    {0x3a800000u, 0x00},
    {0xba800000u, 0x80},
    {0x3a800001u, 0x01},
    {0x3b000000u, 0x01},
    {0x3b400000u, 0x02},
    {0x3ba00000u, 0x02},
    {0x3c700000u, 0x08},
    {0x3c800000u, 0x08},
    {0x3c880000u, 0x08},
    {0x3f880000u, 0x38},
    {0x3f980000u, 0x3a},
    {0xc0533333u, 0xc5},
    {0x43700000u, 0x77},
    {0x43800000u, 0x78},
    {0x43d80000u, 0x7e},
    {0x43dc0000u, 0x7e},
    {0x43dff333u, 0x7e},
    {0x43e00000u, 0x7e},
    {0x43e40000u, 0x7e},
    {0x43e80000u, 0x7e},
    {0x43eb0000u, 0x7e},
    {0x43f00000u, 0x7e},
    {0x49742400u, 0x7e},
    {0x7f800000u, 0x7e},
    {0xff800000u, 0xfe},
    {0xc3fa0000u, 0xfe},
    {0x0da24260u, 0x00},
    {0x8da24260u, 0x80},
    {0x7f7fc99eu, 0x7e},
    {0xc39f5e19u, 0xfa},
    {0x43216e38u, 0x72},
    {0xc32570b7u, 0xf2},
    {0xc39707bbu, 0xf9},
    {0xc127c12cu, 0xd2},
    {0xc0bee3e9u, 0xcc},
    {0xc1a1d1d6u, 0xda},
    {0xc226acf0u, 0xe2},
    {0xc36b783eu, 0xf7},
    {0xc37632f6u, 0xf7},
    {0x433fe14eu, 0x74},
    {0xc32f8fd6u, 0xf3},
    {0x3b33042au, 0x01},
    {0x3cbb5d37u, 0x0c},
    {0xbc297525u, 0x85},
    {0x40f07626u, 0x4f},
    {0xc098a490u, 0xca},
    {0xbd915bd7u, 0x99},
    {0xbdf0a4efu, 0x9f},
    {0x3cf38c49u, 0x0f},
    {0x3f0b28abu, 0x31},
    {0x3f9b3a31u, 0x3a},
    {0xbce951e8u, 0x8f},
    {0x3ccca82eu, 0x0d}
};

LIG_TEST(fp8_matches_torch)
{
    const size_t n = sizeof torch_table / sizeof torch_table[0];
    for (size_t i = 0; i < n; i++) {
        const float f = bits_f32(torch_table[i].in);
        const unsigned got = lig_float_to_float8_e4m3fn(f);
        CHECK(got == torch_table[i].code, "%a (0x%08x): torch gives 0x%02x, lig 0x%02x", (double)f,
              (unsigned)torch_table[i].in, torch_table[i].code, got);
    }
    th_note("%zu values against PyTorch's encoding", n);
}

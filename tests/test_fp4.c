/* MXFP4's formats and quantizer (lig_float4_e2m1_to_float, lig_float_to_float4_e2m1,
 * lig_float8_e8m0fnu_to_float, lig_mxfp4_quantize, lig_mxfp4_cache_write; contract 5, "MXFP4"):
 * every code and every scale against decodes written here from the OCP definition, every code
 * times every scale, the encoder's ties, saturation, zeros and NaN against a brute-force nearest
 * code, and both quantizer recipes and the fused-cache writer against a float64 reference of
 * their definitions (docs/inference.md, "DeepSeek-V4: MXFP4"), with ties, subnormals, zeros,
 * NaN / Inf blocks, all-zero blocks, partial blocks, every input dtype and strided views. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "framework.h"
#include "lig.h"
#include "rng.h"

/* OCP e2m1: S.EE.M, bias 1; E = 0 holds 0 and the subnormal 0.5. */
static double e2m1_value(unsigned c)
{
    const unsigned e = (c >> 1) & 3u, m = c & 1u;
    const double mag = e == 0 ? 0.5 * m : ldexp(1.0 + 0.5 * m, (int)e - 1);
    return (c & 8u) ? -mag : mag;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

enum tie_rule { TIES_TO_EVEN, TIES_TO_ZERO };

/* The nearest e2m1 code by brute force over the eight magnitudes: ties to the even code or to the
 * smaller magnitude; saturation comes from 6 being the nearest magnitude to anything above it. The
 * sign: kept always (to even, the IEEE rule, so -0 is 0x8) or only on a non-zero code (to zero,
 * DeepGEMM's helper). NaN: 0x7 (to even, lig's choice) or 0 (to zero). */
static unsigned e2m1_nearest(double y, enum tie_rule rule)
{
    if (isnan(y)) {
        return rule == TIES_TO_EVEN ? 0x7u : 0u;
    }
    const double a = fabs(y);
    unsigned best = 7; /* above 6 (infinity included) the saturating conversion gives 6; the distances
                        * to 4 and 6 of a huge value would round to the same double */
    if (a < 6.0) {
        double best_d = INFINITY;
        for (unsigned c = 0; c < 8; c++) {
            const double d = fabs(e2m1_value(c) - a);
            if (d < best_d || (d == best_d && rule == TIES_TO_EVEN && (c & 1u) == 0)) {
                best = c;
                best_d = d;
            }
        }
    }
    const int negative = signbit(y) != 0;
    if (rule == TIES_TO_EVEN) {
        return (negative ? 8u : 0u) | best;
    }
    return (negative && best != 0) ? (8u | best) : best;
}

LIG_TEST(fp4_decode_all_codes)
{
    for (unsigned byte = 0; byte < 256; byte++) {
        const unsigned c = byte & 15u; /* the high nibble is ignored */
        const float got = lig_float4_e2m1_to_float((uint8_t)byte);
        const double want = e2m1_value(c);
        CHECK((double)got == want && !signbit(got) == !signbit(want), "byte 0x%02x: expected %.9g, got %.9g", byte,
              want, (double)got);
        if (byte < 16) {
            CHECK(lig_float_to_float4_e2m1(got) == c, "code 0x%x re-encoded as 0x%x", c, lig_float_to_float4_e2m1(got));
        }
    }
    CHECK(lig_float4_e2m1_to_float(0x7) == 6.0f && lig_float4_e2m1_to_float(0x1) == 0.5f &&
              lig_float4_e2m1_to_float(0xf) == -6.0f && signbit(lig_float4_e2m1_to_float(0x8)),
          "known codes: 0x7 = 6, 0x1 = 0.5, 0xf = -6, 0x8 = -0");
}

/* E8M0: byte E is 2^(E-127), E = 255 NaN. */
LIG_TEST(fp4_e8m0_decode_all_scales)
{
    for (unsigned e = 0; e < 256; e++) {
        const float got = lig_float8_e8m0fnu_to_float((uint8_t)e);
        if (e == 255) {
            CHECK(isnan(got), "0xff: expected NaN, got %.9g", (double)got);
        } else {
            CHECK((double)got == ldexp(1.0, (int)e - 127), "0x%02x: expected 2^%d, got %a", e, (int)e - 127, (double)got);
        }
    }
}

LIG_TEST(fp4_every_code_times_every_scale)
{
    int64_t n = 0;
    for (unsigned e = 0; e < 255; e++) {
        for (unsigned c = 0; c < 16; c++) {
            const double got = (double)lig_float4_e2m1_to_float((uint8_t)c) * (double)lig_float8_e8m0fnu_to_float((uint8_t)e);
            const double want = ldexp(e2m1_value(c), (int)e - 127);
            CHECK(got == want, "code 0x%x scale 0x%02x: expected %a, got %a", c, e, want, got);
            /* every value that fp32 can hold, the fp32 product holds exactly */
            const float p = lig_float4_e2m1_to_float((uint8_t)c) * lig_float8_e8m0fnu_to_float((uint8_t)e);
            if (fabs(want) <= 0x1.fffffep127) {
                CHECK((double)p == want, "code 0x%x scale 0x%02x: the fp32 product %a is not %a", c, e, (double)p, want);
            }
            n++;
        }
    }
    th_note("%lld code x scale values checked", (long long)n);
}

LIG_TEST(fp4_encode_midpoints_and_specials)
{
    for (unsigned sign = 0; sign <= 8u; sign += 8u) {
        for (unsigned c = 0; c < 7; c++) {
            const double lo = e2m1_value(c), hi = e2m1_value(c + 1);
            const float mid = (float)((lo + hi) / 2), m = sign ? -mid : mid;
            const unsigned even = (c & 1u) ? c + 1 : c;
            CHECK(lig_float_to_float4_e2m1(m) == (sign | even), "midpoint %g: expected 0x%x, got 0x%x", (double)m,
                  sign | even, lig_float_to_float4_e2m1(m));
            const float below = nextafterf(m, 0.0f), above = nextafterf(m, sign ? -INFINITY : INFINITY);
            CHECK(lig_float_to_float4_e2m1(below) == (sign | c), "just below %g: expected 0x%x, got 0x%x", (double)m,
                  sign | c, lig_float_to_float4_e2m1(below));
            CHECK(lig_float_to_float4_e2m1(above) == (sign | (c + 1)), "just above %g: expected 0x%x, got 0x%x",
                  (double)m, sign | (c + 1), lig_float_to_float4_e2m1(above));
        }
    }
    /* (input, code, what it shows) */
    static const struct { float in; unsigned out; const char *what; } cases[] = {
        {0.0f, 0x0, "+0"}, {-0.0f, 0x8, "-0 keeps its sign"}, {0x1p-149f, 0x0, "an fp32 subnormal"},
        {-0x1p-149f, 0x8, "a negative fp32 subnormal rounds to -0"}, {0.25f, 0x0, "0.25 ties to 0"},
        {0.75f, 0x2, "0.75 ties to 1 (even code 2)"}, {6.0f, 0x7, "the largest"}, {7.0f, 0x7, "7 saturates"},
        {1e30f, 0x7, "1e30 saturates"}, {-1e30f, 0xf, "-1e30 saturates"}, {INFINITY, 0x7, "+inf saturates"},
        {-INFINITY, 0xf, "-inf saturates"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const unsigned got = lig_float_to_float4_e2m1(cases[i].in);
        CHECK(got == cases[i].out, "%s (%a): expected 0x%x, got 0x%x", cases[i].what, (double)cases[i].in,
              cases[i].out, got);
    }
    CHECK(lig_float_to_float4_e2m1(NAN) == 0x7 && lig_float_to_float4_e2m1(-NAN) == 0x7 &&
              lig_float_to_float4_e2m1(bits_f32(0x7f800001u)) == 0x7,
          "NaN (either sign, quiet or signalling): expected 0x7");
}

static void check_encoding(float f, int64_t *bad)
{
    const unsigned want = e2m1_nearest(f, TIES_TO_EVEN), got = lig_float_to_float4_e2m1(f);
    if (got != want && (*bad)++ < 5) {
        CHECK(0, "%a: expected 0x%x, got 0x%x", (double)f, want, got);
    }
}

LIG_TEST(fp4_encode_brute_force)
{
    int64_t n = 0, bad = 0;
    /* every 4099th bit pattern: every exponent, both signs, subnormals, infinities and NaNs */
    for (uint64_t u = 0; u <= 0xffffffffu; u += 4099, n++) {
        check_encoding(bits_f32((uint32_t)u), &bad);
    }
    /* the 64 floats either side of every decision point, in both signs */
    static const float points[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f};
    for (size_t i = 0; i < sizeof points / sizeof points[0]; i++) {
        float lo = points[i], hi = points[i];
        for (int j = 0; j < 64; j++, n += 4) {
            lo = nextafterf(lo, 0.0f);
            hi = nextafterf(hi, INFINITY);
            check_encoding(lo, &bad);
            check_encoding(hi, &bad);
            check_encoding(-lo, &bad);
            check_encoding(-hi, &bad);
        }
    }
    CHECK(bad == 0, "%lld of %lld encodings differ from the nearest code", (long long)bad, (long long)n);
}

/* ---- the quantizer's float64 reference ---------------------------------------------------- */

/* The smallest power of two >= t (t > 0 finite), as an e8m0 byte. */
static unsigned ceil_pow2_byte(double t)
{
    int x;
    const double f = frexp(t, &x); /* t = f * 2^x, f in [0.5, 1) */
    const int k = f == 0.5 ? x - 1 : x;
    return (unsigned)(k + 127);
}

/* One block of n values (exact doubles of the inputs): its scale byte and codes, by the recipe's
 * definition. */
static unsigned ref_block(const double *v, int n, lig_mxfp4_recipe recipe, unsigned *codes)
{
    double amax = 0.0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(v[i])) {
            for (int j = 0; j < n; j++) {
                codes[j] = 0;
            }
            return 255u;
        }
        amax = fmax(amax, fabs(v[i]));
    }
    float t;
    if (recipe == LIG_MXFP4_RECIPE_ENGINE) {
        const double a = fmax(amax, ldexp(6.0, -126));
        t = (float)(a * (double)(1.0f / 6.0f)); /* exact in double, then one rounding: fp32's product */
    } else {
        const double a = fmax(amax, (double)1e-4f);
        t = (float)(a / 6.0); /* a double quotient rounded to fp32 is fp32's quotient (53 >= 2*24+2) */
    }
    const unsigned e = ceil_pow2_byte(t);
    for (int i = 0; i < n; i++) {
        const float y = (float)ldexp(v[i], 127 - (int)e); /* exact, then fp32's rounding of the product */
        codes[i] = e2m1_nearest(y, recipe == LIG_MXFP4_RECIPE_ENGINE ? TIES_TO_EVEN : TIES_TO_ZERO);
    }
    return e;
}

/* Rows of x (given as exact doubles) into the packed codes and padded scale bytes. */
static void ref_rows(const double *x, int64_t rows, int64_t cols, lig_mxfp4_recipe recipe, uint8_t *codes,
                     uint8_t *scales)
{
    const int64_t blocks = (cols + 31) / 32, bytes = (blocks + 3) / 4 * 4;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t b = 0; b < bytes; b++) {
            scales[r * bytes + b] = 127;
        }
        for (int64_t b = 0; b < blocks; b++) {
            const int n = (int)(cols - b * 32 < 32 ? cols - b * 32 : 32);
            unsigned c[32];
            scales[r * bytes + b] = (uint8_t)ref_block(x + r * cols + b * 32, n, recipe, c);
            for (int i = 0; i < n; i += 2) {
                codes[r * (cols / 2) + (b * 32 + i) / 2] = (uint8_t)(c[i] | (c[i + 1] << 4));
            }
        }
    }
}

static const double tie_points[] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0};

/* Test rows: random magnitudes across the range, exact ties at a chosen power-of-two scale,
 * signed zeros, fp32 subnormals, all-zero blocks, a NaN and an infinity block, the largest
 * floats. Values are fp32s (then rounded to the dtype by the caller). */
static void make_rows(float *x, int64_t rows, int64_t cols, th_rng *r)
{
    for (int64_t i = 0; i < rows * cols; i++) {
        x[i] = (float)ldexp(th_rng_unit(r) * 2.0 - 1.0, (int)th_rng_range(r, -20, 20));
    }
    for (int64_t row = 0; row < rows; row++) {
        float *v = x + row * cols;
        const int64_t blocks = (cols + 31) / 32;
        for (int64_t b = 0; b < blocks; b++) {
            float *blk = v + b * 32;
            const int n = (int)(cols - b * 32 < 32 ? cols - b * 32 : 32);
            switch ((row * 7 + b) % 9) {
            case 0: { /* ties: amax = 6 * 2^k makes the scale 2^k; the others sit on midpoints */
                const int k = (int)th_rng_range(r, -30, 30);
                for (int i = 0; i < n; i++) {
                    const double m = i == 0 ? 6.0 : tie_points[th_rng_range(r, 0, 6)];
                    blk[i] = (float)ldexp(th_rng_chance(r, 0.5) ? -m : m, k);
                }
                break;
            }
            case 1: /* all zeros, some negative: the floor decides the scale */
                for (int i = 0; i < n; i++) {
                    blk[i] = (i % 3 == 0) ? -0.0f : 0.0f;
                }
                break;
            case 2: /* fp32 subnormals and tiny values */
                for (int i = 0; i < n; i++) {
                    blk[i] = (float)ldexp((double)th_rng_range(r, -1000, 1000), (int)th_rng_range(r, -149, -120));
                }
                break;
            case 3: /* a NaN in the block */
                blk[th_rng_range(r, 0, n - 1)] = NAN;
                break;
            case 4: /* an infinity in the block */
                blk[th_rng_range(r, 0, n - 1)] = th_rng_chance(r, 0.5) ? INFINITY : -INFINITY;
                break;
            case 5: /* the largest floats */
                blk[0] = 0x1.fffffep127f;
                blk[n - 1] = -0x1.fffffep127f;
                break;
            case 6: /* amax just off a power-of-two boundary: 6 * 2^k times (1 +- an ulp) */
                blk[0] = nextafterf((float)ldexp(6.0, (int)th_rng_range(r, -20, 20)), th_rng_chance(r, 0.5) ? 0.0f : INFINITY);
                break;
            default:
                break;
            }
        }
    }
}

static lig_tensor *tensor2(void *data, lig_dtype dtype, int64_t d0, int64_t d1, const int64_t *strides)
{
    const int64_t shape[2] = {d0, d1};
    return lig_create_tensor(data, dtype, 2, shape, strides);
}

static void check_quantize(lig_mxfp4_recipe recipe, lig_dtype dtype, int64_t rows, int64_t cols, bool transposed,
                           bool words, uint64_t seed)
{
    th_rng r = th_rng_make(seed);
    const int64_t blocks = (cols + 31) / 32, bytes = (blocks + 3) / 4 * 4, n = rows * cols;
    float *xf = malloc(sizeof(float) * (size_t)n);
    double *xd = malloc(sizeof(double) * (size_t)n);
    uint16_t *xh = malloc(sizeof(uint16_t) * (size_t)n);
    void *xin = malloc(sizeof(float) * (size_t)n);
    uint8_t *want_c = malloc((size_t)(rows * cols / 2 + 1)), *want_s = malloc((size_t)(rows * bytes + 1));
    uint8_t *got_c = malloc((size_t)(rows * cols + 1)), *got_s = malloc((size_t)(rows * bytes + 1));
    int32_t *got_w = malloc(sizeof(int32_t) * (size_t)(rows * bytes / 4 + 1));
    REQUIRE(xf && xd && xh && xin && want_c && want_s && got_c && got_s && got_w, "memory");
    make_rows(xf, rows, cols, &r);
    for (int64_t i = 0; i < n; i++) {
        if (dtype == LIG_BFLOAT16) {
            xh[i] = lig_float_to_bfloat16(xf[i]);
            xd[i] = (double)bits_f32((uint32_t)xh[i] << 16); /* bf16 is fp32's top half: decoded by hand */
        } else if (dtype == LIG_FLOAT16) {
            xh[i] = lig_float_to_float16(xf[i]);
            xd[i] = (double)lig_float16_to_float(xh[i]);
        } else {
            xd[i] = (double)xf[i];
        }
    }
    /* the input as [rows, cols], stored row-major or (transposed) column-major */
    const size_t es = dtype == LIG_FLOAT32 ? 4 : 2;
    for (int64_t i = 0; i < rows; i++) {
        for (int64_t j = 0; j < cols; j++) {
            const int64_t at = transposed ? j * rows + i : i * cols + j;
            memcpy((char *)xin + (size_t)at * es, dtype == LIG_FLOAT32 ? (const void *)&xf[i * cols + j] : (const void *)&xh[i * cols + j], es);
        }
    }
    const int64_t xstr[2] = {transposed ? 1 : cols, transposed ? rows : 1};
    /* codes with a row stride of cols (half of it unused: a strided output) */
    const int64_t cstr[2] = {cols, 1};
    lig_tensor *x = tensor2(xin, dtype, rows, cols, xstr);
    lig_tensor *codes = tensor2(got_c, LIG_UINT8, rows, cols / 2, cstr);
    lig_tensor *scales = words ? tensor2(got_w, LIG_INT32, rows, bytes / 4, NULL) : tensor2(got_s, LIG_UINT8, rows, bytes, NULL);
    REQUIRE(x && codes && scales, "tensors: %s", lig_get_last_error());
    ref_rows(xd, rows, cols, recipe, want_c, want_s);
    const lig_status st = lig_mxfp4_quantize(x, recipe, codes, scales);
    CHECK(st == LIG_SUCCESS, "lig_mxfp4_quantize: %s", lig_get_last_error());
    if (words) {
        for (int64_t i = 0; i < rows * bytes / 4; i++) {
            uint32_t u;
            memcpy(&u, &got_w[i], sizeof u);
            for (int b = 0; b < 4; b++) {
                got_s[4 * i + b] = (uint8_t)(u >> (8 * b)); /* byte b of the word is bits 8b..8b+7 */
            }
        }
    }
    int64_t bad = 0;
    for (int64_t i = 0; i < rows; i++) {
        for (int64_t j = 0; j < cols / 2; j++) {
            const unsigned g = got_c[i * cols + j], w = want_c[i * (cols / 2) + j];
            if (g != w && bad++ < 5) {
                CHECK(0, "recipe %d dtype %d row %lld byte %lld (x %a, %a): expected 0x%02x, got 0x%02x", (int)recipe,
                      (int)dtype, (long long)i, (long long)j, xd[i * cols + 2 * j], xd[i * cols + 2 * j + 1], w, g);
            }
        }
        for (int64_t b = 0; b < bytes; b++) {
            const unsigned g = got_s[i * bytes + b], w = want_s[i * bytes + b];
            if (g != w && bad++ < 5) {
                CHECK(0, "recipe %d dtype %d row %lld scale %lld: expected 0x%02x, got 0x%02x", (int)recipe, (int)dtype,
                      (long long)i, (long long)b, w, g);
            }
        }
    }
    CHECK(bad == 0, "%lld bytes differ from the reference", (long long)bad);
    lig_destroy_tensor(x);
    lig_destroy_tensor(codes);
    lig_destroy_tensor(scales);
    free(xf);
    free(xd);
    free(xh);
    free(xin);
    free(want_c);
    free(want_s);
    free(got_c);
    free(got_s);
    free(got_w);
}

LIG_TEST(fp4_quantize_matches_reference)
{
    const lig_mxfp4_recipe recipes[2] = {LIG_MXFP4_RECIPE_ENGINE, LIG_MXFP4_RECIPE_DEEPGEMM_TEST};
    const lig_dtype dtypes[3] = {LIG_FLOAT32, LIG_BFLOAT16, LIG_FLOAT16};
    const int64_t cols[5] = {128, 64, 48, 2, 320};
    uint64_t seed = 1;
    for (int ri = 0; ri < 2; ri++) {
        for (int di = 0; di < 3; di++) {
            for (int ci = 0; ci < 5; ci++) {
                check_quantize(recipes[ri], dtypes[di], 45, cols[ci], ci % 2 == 1, ci % 3 == 0, seed++);
            }
        }
    }
}

/* A few blocks worked by hand, so that the reference itself is pinned to the sources' numbers. */
LIG_TEST(fp4_quantize_known_blocks)
{
    float x[64] = {0};
    uint8_t codes[32], scales[4];
    /* block 0: amax 6 -> scale 2^0 (0x7f); 0.75 ties to 1 (0x2) for the engines, to 0.5 (0x1) for DeepGEMM */
    x[0] = 6.0f;
    x[1] = 0.75f;
    x[2] = -0.1f;
    x[3] = 1.75f;
    /* block 1: all zero -> the floor: engines 2^-126 (0x01), DeepGEMM ceil(1e-4 / 6) = 2^-15 (0x70) */
    lig_tensor *xt = tensor2(x, LIG_FLOAT32, 1, 64, NULL), *ct = tensor2(codes, LIG_UINT8, 1, 32, NULL),
               *st = tensor2(scales, LIG_UINT8, 1, 4, NULL);
    REQUIRE(xt && ct && st, "tensors");
    REQUIRE(lig_mxfp4_quantize(xt, LIG_MXFP4_RECIPE_ENGINE, ct, st) == LIG_SUCCESS, "%s", lig_get_last_error());
    CHECK(scales[0] == 0x7f && scales[1] == 0x01 && scales[2] == 127 && scales[3] == 127,
          "engine scales: expected 7f 01 7f 7f, got %02x %02x %02x %02x", scales[0], scales[1], scales[2], scales[3]);
    CHECK(codes[0] == 0x27 && codes[1] == 0x48, "engine codes: expected 0x27 (6, 1) 0x48 (-0, 2), got 0x%02x 0x%02x",
          codes[0], codes[1]);
    REQUIRE(lig_mxfp4_quantize(xt, LIG_MXFP4_RECIPE_DEEPGEMM_TEST, ct, st) == LIG_SUCCESS, "%s", lig_get_last_error());
    CHECK(scales[0] == 0x7f && scales[1] == 0x70, "DeepGEMM scales: expected 7f 70, got %02x %02x", scales[0], scales[1]);
    CHECK(codes[0] == 0x17 && codes[1] == 0x30, "DeepGEMM codes: expected 0x17 (6, 0.5) 0x30 (+0, 1.5), got 0x%02x 0x%02x",
          codes[0], codes[1]);
    lig_destroy_tensor(xt);
    lig_destroy_tensor(ct);
    lig_destroy_tensor(st);
}

LIG_TEST(fp4_cache_write_matches_reference)
{
    th_rng r = th_rng_make(0xcac4eu);
    const int64_t dims[2] = {128, 64};
    for (int di = 0; di < 2; di++) {
        for (int ri = 0; ri < 2; ri++) {
            const lig_mxfp4_recipe recipe = ri ? LIG_MXFP4_RECIPE_DEEPGEMM_TEST : LIG_MXFP4_RECIPE_ENGINE;
            const int64_t D = dims[di], T = 11, nb = 5, bs = 4, row = D / 2 + 4, bstride = bs * row + 12;
            float *k = malloc(sizeof(float) * (size_t)(T * D));
            double *kd = malloc(sizeof(double) * (size_t)(T * D));
            uint8_t *cache = malloc((size_t)(nb * bstride)), *want = malloc((size_t)(nb * bstride));
            uint8_t *rc = malloc((size_t)(T * D / 2)), *rs = malloc((size_t)(T * 4));
            REQUIRE(k && kd && cache && want && rc && rs, "memory");
            make_rows(k, T, D, &r);
            for (int64_t i = 0; i < T * D; i++) {
                kd[i] = (double)k[i];
            }
            /* distinct slots in a shuffled order, two tokens skipped */
            int64_t slots[11];
            int64_t perm[20];
            for (int64_t i = 0; i < nb * bs; i++) {
                perm[i] = i;
            }
            for (int64_t i = nb * bs - 1; i > 0; i--) {
                const int64_t j = th_rng_range(&r, 0, i), t = perm[i];
                perm[i] = perm[j];
                perm[j] = t;
            }
            for (int64_t t = 0; t < T; t++) {
                slots[t] = (t == 3 || t == 8) ? -1 : perm[t];
            }
            memset(cache, 0xa5, (size_t)(nb * bstride));
            memcpy(want, cache, (size_t)(nb * bstride));
            ref_rows(kd, T, D, recipe, rc, rs);
            for (int64_t t = 0; t < T; t++) {
                if (slots[t] < 0) {
                    continue;
                }
                /* DeepGEMM's block: bs * D/2 code bytes, token-major, then bs 4-byte scale words */
                uint8_t *blk = want + (slots[t] / bs) * bstride;
                memcpy(blk + (slots[t] % bs) * (D / 2), rc + t * (D / 2), (size_t)(D / 2));
                memcpy(blk + bs * (D / 2) + (slots[t] % bs) * 4, rs + t * 4, 4);
            }
            const int64_t cshape[4] = {nb, bs, 1, row}, cstr[4] = {bstride, row, row, 1}, sshape[1] = {T};
            lig_tensor *kt = tensor2(k, LIG_FLOAT32, T, D, NULL);
            lig_tensor *ct = lig_create_tensor(cache, LIG_UINT8, 4, cshape, cstr);
            lig_tensor *sm = lig_create_tensor(slots, LIG_INT64, 1, sshape, NULL);
            REQUIRE(kt && ct && sm, "tensors: %s", lig_get_last_error());
            CHECK(lig_mxfp4_cache_write(kt, sm, recipe, ct) == LIG_SUCCESS, "D %lld: %s", (long long)D, lig_get_last_error());
            CHECK(memcmp(cache, want, (size_t)(nb * bstride)) == 0, "D %lld recipe %d: the cache bytes differ from the "
                  "reference layout", (long long)D, (int)recipe);
            /* a slot given twice, or past the cache: refused by name, nothing written */
            memcpy(cache, want, (size_t)(nb * bstride));
            slots[3] = slots[0];
            CHECK(lig_mxfp4_cache_write(kt, sm, recipe, ct) == LIG_ERR_PARAM_INVALID &&
                      strstr(lig_get_last_error(), "slot_mapping") != NULL,
                  "a repeated slot: expected LIG_ERR_PARAM_INVALID naming slot_mapping, got \"%s\"", lig_get_last_error());
            slots[3] = nb * bs;
            CHECK(lig_mxfp4_cache_write(kt, sm, recipe, ct) == LIG_ERR_PARAM_INVALID &&
                      strstr(lig_get_last_error(), "slot_mapping") != NULL,
                  "a slot past the cache: expected LIG_ERR_PARAM_INVALID naming slot_mapping, got \"%s\"",
                  lig_get_last_error());
            CHECK(memcmp(cache, want, (size_t)(nb * bstride)) == 0, "a refused call wrote into the cache");
            lig_destroy_tensor(kt);
            lig_destroy_tensor(ct);
            lig_destroy_tensor(sm);
            free(k);
            free(kd);
            free(cache);
            free(want);
            free(rc);
            free(rs);
        }
    }
}

static void expect_refused(lig_status got, lig_status want, const char *name, const char *what)
{
    CHECK(got == want && strstr(lig_get_last_error(), name) != NULL, "%s: expected status %d naming %s, got %d \"%s\"",
          what, (int)want, name, (int)got, lig_get_last_error());
}

LIG_TEST(fp4_quantize_errors)
{
    float x[4 * 64];
    uint8_t codes[4 * 32], scales[4 * 8];
    memset(codes, 0x5a, sizeof codes);
    memset(scales, 0x5a, sizeof scales);
    for (int i = 0; i < 4 * 64; i++) {
        x[i] = (float)i;
    }
    lig_tensor *xt = tensor2(x, LIG_FLOAT32, 4, 64, NULL), *ct = tensor2(codes, LIG_UINT8, 4, 32, NULL),
               *st = tensor2(scales, LIG_UINT8, 4, 4, NULL);
    lig_tensor *x_odd = tensor2(x, LIG_FLOAT32, 4, 63, NULL), *x_i8 = tensor2(x, LIG_INT8, 4, 64, NULL);
    lig_tensor *c_bad = tensor2(codes, LIG_UINT8, 4, 31, NULL), *s_bad = tensor2(scales, LIG_UINT8, 4, 2, NULL);
    lig_tensor *s_f32 = tensor2(scales, LIG_FLOAT32, 4, 4, NULL), *c_alias = tensor2(x, LIG_UINT8, 4, 32, NULL);
    REQUIRE(xt && ct && st && x_odd && x_i8 && c_bad && s_bad && s_f32 && c_alias, "tensors");
    expect_refused(lig_mxfp4_quantize(NULL, LIG_MXFP4_RECIPE_ENGINE, ct, st), LIG_ERR_PARAM_NULLPTR, "x", "NULL x");
    expect_refused(lig_mxfp4_quantize(xt, LIG_MXFP4_RECIPE_ENGINE, NULL, st), LIG_ERR_PARAM_NULLPTR, "codes", "NULL codes");
    expect_refused(lig_mxfp4_quantize(xt, LIG_MXFP4_RECIPE_ENGINE, ct, NULL), LIG_ERR_PARAM_NULLPTR, "scales", "NULL scales");
    expect_refused(lig_mxfp4_quantize(xt, (lig_mxfp4_recipe)2, ct, st), LIG_ERR_PARAM_INVALID, "recipe", "recipe 2");
    expect_refused(lig_mxfp4_quantize(x_odd, LIG_MXFP4_RECIPE_ENGINE, ct, st), LIG_ERR_PARAM_INVALID, "x", "odd cols");
    expect_refused(lig_mxfp4_quantize(x_i8, LIG_MXFP4_RECIPE_ENGINE, ct, st), LIG_ERR_PARAM_INVALID, "x", "INT8 x");
    expect_refused(lig_mxfp4_quantize(xt, LIG_MXFP4_RECIPE_ENGINE, c_bad, st), LIG_ERR_PARAM_INVALID, "codes", "codes shape");
    expect_refused(lig_mxfp4_quantize(xt, LIG_MXFP4_RECIPE_ENGINE, ct, s_bad), LIG_ERR_PARAM_INVALID, "scales",
                   "2 scale bytes where the padding makes 4");
    expect_refused(lig_mxfp4_quantize(xt, LIG_MXFP4_RECIPE_ENGINE, ct, s_f32), LIG_ERR_PARAM_INVALID, "scales",
                   "FLOAT32 scales");
    expect_refused(lig_mxfp4_quantize(xt, LIG_MXFP4_RECIPE_ENGINE, c_alias, st), LIG_ERR_PARAM_INVALID, "codes",
                   "codes over x");
    for (size_t i = 0; i < sizeof codes; i++) {
        CHECK(codes[i] == 0x5a, "a refused call wrote codes[%zu]", i);
    }
    for (size_t i = 0; i < sizeof scales; i++) {
        CHECK(scales[i] == 0x5a, "a refused call wrote scales[%zu]", i);
    }
    /* the cache writer's own shape checks */
    uint8_t cache[2 * 4 * 36];
    int32_t slots[4] = {0, 1, 2, 3};
    const int64_t bad_shape[3] = {2, 4, 35}, sshape[1] = {4};
    lig_tensor *cb = lig_create_tensor(cache, LIG_UINT8, 3, bad_shape, NULL), *sm = lig_create_tensor(slots, LIG_INT32, 1, sshape, NULL);
    REQUIRE(cb && sm, "tensors");
    expect_refused(lig_mxfp4_cache_write(xt, sm, LIG_MXFP4_RECIPE_ENGINE, cb), LIG_ERR_PARAM_INVALID, "kv_cache",
                   "a row of 35 bytes for D 64");
    expect_refused(lig_mxfp4_cache_write(xt, NULL, LIG_MXFP4_RECIPE_ENGINE, cb), LIG_ERR_PARAM_NULLPTR, "slot_mapping",
                   "NULL slot_mapping");
    lig_destroy_tensor(cb);
    lig_destroy_tensor(sm);
    lig_destroy_tensor(xt);
    lig_destroy_tensor(ct);
    lig_destroy_tensor(st);
    lig_destroy_tensor(x_odd);
    lig_destroy_tensor(x_i8);
    lig_destroy_tensor(c_bad);
    lig_destroy_tensor(s_bad);
    lig_destroy_tensor(s_f32);
    lig_destroy_tensor(c_alias);
}

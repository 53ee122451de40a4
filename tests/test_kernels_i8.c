/*
 * The quantized forward's kernels, white-box, every kernel set this CPU supports (the scalar set
 * included): the int8 GEMM family (pack + micro-kernel + driver) against an int64 triple loop in
 * this file, bit for bit, and the FP8 e4m3fn conversions against a decode written here from the
 * OCP definition. Sets the CPU lacks are reported as skipped, by name.
 *
 * Over-reads: every operand is allocated to its last byte (the last A row ends at column D, the
 * packed B at lig_i8_packed_b_bytes), so a read past them is an AddressSanitizer error; the bytes
 * between D and a row's stride hold values that would change the result if they were used.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels/kernel_set.h"
#include "backends/cpu/kernels/scalar/scalar.h" /* the portable references */
#include "framework.h"
#include "lig.h"
#include "problem_case.h"
#include "rng.h"
#include "tests.h"

int supported_sets(const lig_kernel_set **out) {
    int n, m = 0;
    const lig_kernel_set *const *t = lig_kernel_set_table(&n);
    for (int i = 0; i < n; i++) {
        if (t[i]->cpu_supports()) out[m++] = t[i];
        else th_skip("kernel set %s: this CPU lacks %s", t[i]->name, t[i]->features);
    }
    return m;
}

enum { FILL_RANDOM, FILL_MIN, FILL_MAX, FILL_A_MAX_B_MIN, FILL_A_MIN_B_MAX, FILL_EXTREMES, FILL_COUNT };
static const char *const fill_names[FILL_COUNT] = {"random", "-128 everywhere", "127 everywhere", "A=127 B=-128",
                                                   "A=-128 B=127", "random +-extremes"};

static int8_t value(th_rng *r, int fill, int is_a) {
    switch (fill) {
    case FILL_MIN: return -128;
    case FILL_MAX: return 127;
    case FILL_A_MAX_B_MIN: return is_a ? 127 : -128;
    case FILL_A_MIN_B_MAX: return is_a ? -128 : 127;
    case FILL_EXTREMES: return th_rng_range(r, 0, 1) ? 127 : -128;
    default: return (int8_t)th_rng_range(r, -128, 127);
    }
}

/* One product through the set's pack and driver against the int64 reference; returns 1 when it
 * matched. C has a sentinel border (columns N..ldc and one row below) that must stay untouched. */
static int check_i8(const lig_kernel_set *ks, int64_t M, int64_t N, int64_t D, int fill, bool accumulate, th_rng *r) {
    const lig_i8_gemm_config *cfg = &ks->i8->gemm;
    const int64_t lda = D + (M % 3) * 5, ldq = D + (N % 2) * 3, ldc = N + 3;
    const size_t a_n = (size_t)((M - 1) * lda + D), q_n = (size_t)((N - 1) * ldq + D);
    int8_t *a = th_xmalloc(a_n), *q = th_xmalloc(q_n);
    for (int64_t i = 0; i < M; i++)
        for (int64_t k = 0; k < lda && i * lda + k < (int64_t)a_n; k++)
            a[i * lda + k] = k < D ? value(r, fill, 1) : 101; /* past D: must not count */
    for (int64_t j = 0; j < N; j++)
        for (int64_t k = 0; k < ldq && j * ldq + k < (int64_t)q_n; k++)
            q[j * ldq + k] = k < D ? value(r, fill, 0) : -77;
    const int64_t pb = lig_i8_packed_b_bytes(cfg, D, N);
    void *packed = th_xmalloc((size_t)pb);
    memset(packed, 0xa5, (size_t)pb); /* the pack must write every byte the kernel reads */
    cfg->pack_b(D, N, q, ldq, packed, lig_i8_panel_bytes(cfg, D));
    const size_t c_n = (size_t)(ldc * (M + 1));
    int32_t *c = th_xmalloc(sizeof(int32_t) * c_n), *ref = th_xmalloc(sizeof(int32_t) * c_n);
    for (size_t i = 0; i < c_n; i++) {
        const int live = (int64_t)(i % (size_t)ldc) < N && i < (size_t)(ldc * M);
        c[i] = ref[i] = live ? (int32_t)th_rng_range(r, -1000000, 1000000) : (int32_t)0x5eed5eed;
    }
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            int64_t s = accumulate ? ref[i * ldc + j] : 0;
            for (int64_t k = 0; k < D; k++) s += (int64_t)a[i * lda + k] * (int64_t)q[j * ldq + k];
            CHECK(s <= INT32_MAX && s >= INT32_MIN, "test bug: the reference passes int32");
            ref[i * ldc + j] = (int32_t)s;
        }
    lig_i8_gemm(cfg, M, N, D, a, lda, packed, c, ldc, accumulate);
    int64_t bad = -1;
    for (size_t i = 0; i < c_n && bad < 0; i++)
        if (c[i] != ref[i]) bad = (int64_t)i;
    CHECK(bad < 0, "%s int8 GEMM M=%lld N=%lld D=%lld %s accumulate=%d: C[%lld][%lld] = %d, exact %d", ks->name,
          (long long)M, (long long)N, (long long)D, fill_names[fill], (int)accumulate,
          bad >= 0 ? (long long)(bad / ldc) : 0LL, bad >= 0 ? (long long)(bad % ldc) : 0LL, bad >= 0 ? c[bad] : 0,
          bad >= 0 ? ref[bad] : 0);
    free(a);
    free(q);
    free(packed);
    free(c);
    free(ref);
    return bad < 0;
}

/* Shapes around each set's tile (1, MR - 1, MR, MR + 1, 2 MR + 3 rows; the same for columns),
 * reductions 1, 7, 64, 128, 129, 4096 and a few odd ones, every fill, accumulate on and off. */
LIG_TEST(kernels_i8_gemm) {
    static const int64_t dims[] = {1, 2, 3, 5, 7, 64, 127, 128, 129, 255, 4096};
    const lig_kernel_set *sets[8];
    const int m = supported_sets(sets);
    th_rng r = th_rng_make(0x69386b72u);
    int64_t calls = 0, passed = 0;
    for (int s = 0; s < m; s++) {
        const lig_i8_gemm_config *cfg = &sets[s]->i8->gemm;
        CHECK(cfg->pack_b && cfg->ukernel && cfg->kr >= 1 && cfg->max_k >= 4096, "%s: incomplete int8 config",
              sets[s]->name);
        const int64_t ms[] = {1, cfg->mr - 1 > 0 ? cfg->mr - 1 : 2, cfg->mr, cfg->mr + 1, 2 * cfg->mr + 3};
        const int64_t ns[] = {1, cfg->nr - 1 > 0 ? cfg->nr - 1 : 2, cfg->nr, cfg->nr + 1, 2 * cfg->nr + 5};
        for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
            for (int mi = 0; mi < 5; mi++)
                for (int ni = 0; ni < 5; ni++) {
                    const int64_t D = dims[di];
                    if (D >= 4096 && (mi + ni) % 3 != 0) continue; /* the long reduction on a third of the shapes */
                    const int fill = (int)((di + (size_t)mi * 5 + (size_t)ni) % FILL_COUNT);
                    const bool acc = (mi + ni + (int)di) % 2 == 0;
                    passed += check_i8(sets[s], ms[mi], ns[ni], D, fill, acc, &r);
                    calls++;
                }
        /* the worst cases at the largest accepted reduction: every product at its extreme, the
         * same sign all along (VNNI: A + 128 = 255 against -128, or 0 against anything) */
        for (int fill = FILL_MIN; fill <= FILL_A_MIN_B_MAX; fill++) {
            passed += check_i8(sets[s], cfg->mr, cfg->nr, cfg->max_k, fill, fill % 2 == 0, &r);
            calls++;
        }
    }
    th_note("%lld int8 products compared with the exact reference, %lld equal", (long long)calls, (long long)passed);
}

/* ---- FP8 e4m3fn ---------------------------------------------------------------------------- */

/* The OCP 8-bit floating point specification's E4M3: sign, 4 exponent bits (bias 7), 3 mantissa
 * bits; exponent 0 is subnormal (m/8 * 2^-6); no infinities; S.1111.111 is NaN. */
static double ocp_e4m3(uint8_t code, int *is_nan) {
    const int s = code >> 7, e = (code >> 3) & 15, mt = code & 7;
    *is_nan = e == 15 && mt == 7;
    const double mag = e == 0 ? ldexp(mt / 8.0, -6) : ldexp(1.0 + mt / 8.0, e - 7);
    return s ? -mag : mag;
}

/* the bf16 bits of an e4m3 value: exact when its fp32 bits end in 16 zeros (checked) */
static uint16_t expected_bf16(uint8_t code) {
    int nan;
    const double v = ocp_e4m3(code, &nan);
    if (nan) return (uint16_t)((code & 0x80) << 8 | 0x7fc0);
    const float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    CHECK((double)f == v && (u & 0xffffu) == 0, "e4m3 code 0x%02x: %g is not a bf16 value", code, v);
    return (uint16_t)(u >> 16);
}

LIG_TEST(kernels_fp8_all_codes) {
    const lig_kernel_set *sets[8];
    const int m = supported_sets(sets);
    uint8_t codes[256];
    for (int i = 0; i < 256; i++) codes[i] = (uint8_t)i;
    /* spot values of the definition itself */
    int nan;
    CHECK(ocp_e4m3(0x7e, &nan) == 448.0 && !nan && ocp_e4m3(0x01, &nan) == 0x1p-9 && ocp_e4m3(0x08, &nan) == 0x1p-6 &&
              ocp_e4m3(0xb8, &nan) == -1.0 && (ocp_e4m3(0xff, &nan), nan),
          "the test's own e4m3 decode");
    for (int s = 0; s < m; s++) {
        uint16_t out[256];
        float outf[256];
        sets[s]->fp8->to_bf16(1, 256, codes, 256, out, 256);
        sets[s]->fp8->to_f32(1, 256, codes, 256, outf, 256);
        int bad = 0;
        for (int i = 0; i < 256 && bad < 4; i++) {
            const uint16_t want = expected_bf16((uint8_t)i);
            uint32_t fu;
            memcpy(&fu, &outf[i], sizeof fu);
            if (out[i] != want || fu != (uint32_t)want << 16) {
                bad++;
                CHECK(0, "%s fp8 code 0x%02x: bf16 0x%04x, fp32 0x%08x, expected 0x%04x", sets[s]->name, i, out[i],
                      fu, want);
            }
        }
        if (!bad) {
            int nans = 0;
            for (int i = 0; i < 256; i++) nans += isnan(outf[i]) && (signbit(outf[i]) != 0) == (i >= 128);
            CHECK(nans == 2, "%s fp8: %d NaNs with their sign, expected 2 (0x7f, 0xff)", sets[s]->name, nans);
        }
    }
}

/* Blocks of rows with odd lengths and strides against the scalar kernels: destination padding
 * must stay untouched, the source's padding must not matter. */
LIG_TEST(kernels_fp8_rows) {
    static const int64_t lens[] = {1, 2, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 1000};
    const lig_kernel_set *sets[8];
    const int m = supported_sets(sets);
    th_rng r = th_rng_make(0x66703872u);
    int64_t blocks = 0;
    for (int s = 0; s < m; s++)
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
            for (int64_t rows = 1; rows <= 5; rows += 2) {
                const int64_t n = lens[li], lds = n + (int64_t)(li % 3) * 7, ldd = n + (int64_t)(li % 2) * 5 + 1;
                const size_t src_n = (size_t)((rows - 1) * lds + n), dst_n = (size_t)(rows * ldd);
                uint8_t *src = th_xmalloc(src_n);
                for (size_t i = 0; i < src_n; i++) src[i] = (uint8_t)th_rng_range(&r, 0, 255);
                uint16_t *b1 = th_xmalloc(sizeof(uint16_t) * dst_n), *b2 = th_xmalloc(sizeof(uint16_t) * dst_n);
                float *f1 = th_xmalloc(sizeof(float) * dst_n), *f2 = th_xmalloc(sizeof(float) * dst_n);
                memset(b1, 0x5a, sizeof(uint16_t) * dst_n);
                memset(b2, 0x5a, sizeof(uint16_t) * dst_n);
                memset(f1, 0x5a, sizeof(float) * dst_n);
                memset(f2, 0x5a, sizeof(float) * dst_n);
                sets[s]->fp8->to_bf16(rows, n, src, lds, b1, ldd);
                lig_fp8_to_bf16__scalar(rows, n, src, lds, b2, ldd);
                sets[s]->fp8->to_f32(rows, n, src, lds, f1, ldd);
                lig_fp8_to_f32__scalar(rows, n, src, lds, f2, ldd);
                CHECK(memcmp(b1, b2, sizeof(uint16_t) * dst_n) == 0, "%s fp8 to bf16 rows=%lld n=%lld lds=%lld differs",
                      sets[s]->name, (long long)rows, (long long)n, (long long)lds);
                CHECK(memcmp(f1, f2, sizeof(float) * dst_n) == 0, "%s fp8 to fp32 rows=%lld n=%lld lds=%lld differs",
                      sets[s]->name, (long long)rows, (long long)n, (long long)lds);
                for (int64_t i = 0; i < rows && s == 0; i++) /* the scalar kernel against the definition */
                    for (int64_t j = 0; j < n; j++)
                        if (b2[i * ldd + j] != expected_bf16(src[i * lds + j])) {
                            CHECK(0, "scalar fp8 row %lld col %lld differs from the definition", (long long)i, (long long)j);
                            i = rows;
                            break;
                        }
                blocks++;
                free(src);
                free(b1);
                free(b2);
                free(f1);
                free(f2);
            }
    th_note("%lld blocks of fp8 rows compared with the scalar kernels", (long long)blocks);
}

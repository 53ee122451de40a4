/*
 * Every micro-kernel of every kernel set this CPU supports, against the scalar set (the
 * portable reference), white-box through the kernel-set table: edge sizes from 1 to past two
 * tiles, strided and transposed operands, partial tiles, accumulate on and off, special float
 * values. Data on a coarse grid makes every product and partial sum exact, so any two correct
 * kernels agree bit for bit whatever their summation order. Sets the CPU lacks are reported
 * as skipped, by name.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels/kernel_set.h"
#include "backends/cpu/kernels/scalar/scalar.h" /* the portable references */
#include "framework.h"
#include "lig.h"
#include "rng.h"
#include "problem_case.h"

static const lig_kernel_set *scalar_set(void) {
    int n;
    const lig_kernel_set *const *t = lig_kernel_set_table(&n);
    return t[0];
}

/* The sets to test (all but scalar); reports the ones this CPU lacks. */
static int sets_under_test(const lig_kernel_set **out, int report) {
    int n, m = 0;
    const lig_kernel_set *const *t = lig_kernel_set_table(&n);
    for (int i = 1; i < n; i++) {
        if (t[i]->cpu_supports()) out[m++] = t[i];
        else if (report) th_skip("kernel set %s: this CPU lacks %s", t[i]->name, t[i]->features);
    }
    if (m == 0 && report) th_skip("no kernel set but scalar in this build and CPU: nothing to compare with it");
    return m;
}

/* The sets to test, as sets_under_test reports them, and the scalar set they are compared with. */
static int sets_against_scalar(const lig_kernel_set **out, const lig_kernel_set **ref_set) {
    *ref_set = scalar_set();
    return sets_under_test(out, 1);
}

/* Multiples of 1/8 in [-2, 2]: products are multiples of 2^-6, sums exact below 2^18. */
static float grid_value(th_rng *r) { return (float)th_rng_range(r, -16, 16) / 8.0f; }

static void fill_grid(th_rng *r, float *v, size_t n) {
    for (size_t i = 0; i < n; i++) v[i] = grid_value(r);
}

/* What the engines and the docs read from every set's configuration: each family, the unit it
 * runs on, and paddings the bf16 engines can use (see lig_bf16_kernels). */
static void check_config(const lig_kernel_set *ks) {
    CHECK(ks->f32 && ks->i8 && ks->fp8, "set %s lacks a family every set has (f32 %p, i8 %p, fp8 %p)", ks->name,
          (const void *)ks->f32, (const void *)ks->i8, (const void *)ks->fp8);
    if (!ks->f32 || !ks->i8) return;
    CHECK(ks->f32->unit && ks->i8->unit, "set %s: a family does not name its unit", ks->name);
    const lig_bf16_kernels *b = ks->bf16;
    if (!b) return;
    CHECK(b->unit != NULL, "set %s: the bf16 family does not name its unit", ks->name);
    CHECK(b->col_pad > 0 && b->k_pad > 0 && b->k_pad % 2 == 0 && b->row_pad > 0 && 64 % b->row_pad == 0,
          "set %s: bf16 paddings col %lld, k %lld, rows %lld (expected positive, k even, rows dividing 64)", ks->name,
          (long long)b->col_pad, (long long)b->k_pad, (long long)b->row_pad);
}

LIG_TEST(kernels_sets_reported) {
    int n;
    const lig_kernel_set *const *t = lig_kernel_set_table(&n);
    const char *supported = lig_kernel_sets();
    CHECK(strcmp(t[0]->name, "scalar") == 0, "the first set is %s, expected scalar", t[0]->name);
    /* automatic selection: the widest set the CPU supports (the table runs portable to widest),
     * and, where the run names it (the cross build's run on a CPU model without the optional
     * features), the set detection must pick there */
    const lig_kernel_set *widest = t[0];
    for (int i = 0; i < n; i++) {
        check_config(t[i]);
        if (t[i]->cpu_supports()) widest = t[i];
    }
    const char *isa = getenv("LIG_ISA"), *off = getenv("LIG_DISABLE_SIMD"), *expected = getenv("LIG_EXPECT_KERNEL_SET");
    CHECK(lig_set_kernel_set(NULL) == LIG_SUCCESS, "returning to automatic selection failed");
    if ((!isa || !*isa) && (!off || !*off || strcmp(off, "0") == 0)) {
        CHECK(strcmp(lig_get_kernel_set(), widest->name) == 0, "automatic selection picked %s, expected %s",
              lig_get_kernel_set(), widest->name);
        if (expected && *expected)
            CHECK(strcmp(lig_get_kernel_set(), expected) == 0,
                  "automatic selection picked %s, expected %s (LIG_EXPECT_KERNEL_SET); this CPU supports %s",
                  lig_get_kernel_set(), expected, supported);
    }
    for (int i = 0; i < n; i++) {
        const int listed = strstr(supported, t[i]->name) != NULL;
        CHECK(listed == (int)t[i]->cpu_supports(), "set %s: listed %d in \"%s\", supported %d", t[i]->name, listed,
              supported, (int)t[i]->cpu_supports());
        th_note("kernel set %-10s %s", t[i]->name, t[i]->cpu_supports() ? "supported" : "not supported by this CPU");
        const lig_status st = lig_set_kernel_set(t[i]->name);
        if (t[i]->cpu_supports()) {
            CHECK(st == LIG_SUCCESS && strcmp(lig_get_kernel_set(), t[i]->name) == 0, "forcing %s: %s", t[i]->name,
                  lig_get_last_error());
        } else {
            CHECK(st == LIG_ERR_PARAM_INVALID && strstr(lig_get_last_error(), t[i]->name) != NULL,
                  "forcing unsupported %s: status %d, message \"%s\"", t[i]->name, (int)st, lig_get_last_error());
        }
    }
    const char *before = lig_get_kernel_set();
    CHECK(lig_set_kernel_set("no-such-set") == LIG_ERR_PARAM_INVALID, "an unknown set was accepted");
    CHECK(strstr(lig_get_last_error(), "no-such-set") != NULL && strstr(lig_get_last_error(), "scalar") != NULL,
          "message: %s", lig_get_last_error());
    CHECK(strcmp(lig_get_kernel_set(), before) == 0, "a refused set changed the selection");
    CHECK(lig_set_kernel_set(NULL) == LIG_SUCCESS, "returning to automatic selection failed");
}

/* One micro-kernel call against the scalar micro-kernel on the same operands; C carries a
 * sentinel border that must stay untouched. */
static void check_ukernel(const char *set, const char *which, lig_f32_gemm_ukernel_fn uk, int64_t mr, int64_t nr,
                          int64_t kc, int transposed, int accumulate, th_rng *r) {
    const int64_t pad = 3, lda_major = (transposed ? mr : kc) + pad;
    const int64_t ldb = nr + pad, ldc = nr + pad;
    const int64_t a_rs = transposed ? 1 : lda_major, a_cs = transposed ? lda_major : 1;
    const size_t a_n = (size_t)(lda_major * (transposed ? kc : mr) + pad), b_n = (size_t)(ldb * kc + pad);
    const size_t c_n = (size_t)(ldc * (mr + 1));
    float *a = th_xmalloc(sizeof(float) * a_n), *b = th_xmalloc(sizeof(float) * b_n);
    float *c = th_xmalloc(sizeof(float) * c_n), *ref = th_xmalloc(sizeof(float) * c_n);
    fill_grid(r, a, a_n);
    fill_grid(r, b, b_n);
    for (size_t i = 0; i < c_n; i++) c[i] = ref[i] = (i % (size_t)ldc) < (size_t)nr && i < (size_t)(ldc * mr)
                                                          ? grid_value(r) : -12345.0f;
    uk(mr, nr, kc, a, a_rs, a_cs, b, ldb, c, ldc, accumulate);
    /* the scalar reference, one 4 x 4 tile at a time */
    for (int64_t i0 = 0; i0 < mr; i0 += 4)
        for (int64_t j0 = 0; j0 < nr; j0 += 4)
            lig_f32_gemm_ukernel_4x4__scalar(mr - i0 < 4 ? mr - i0 : 4, nr - j0 < 4 ? nr - j0 : 4, kc, a + i0 * a_rs,
                                             a_rs, a_cs, b + j0, ldb, ref + i0 * ldc + j0, ldc, accumulate);
    int64_t bad = -1;
    for (size_t i = 0; i < c_n && bad < 0; i++)
        if (memcmp(&c[i], &ref[i], sizeof(float)) != 0) bad = (int64_t)i;
    CHECK(bad < 0, "%s %s mr=%lld nr=%lld kc=%lld %s accumulate=%d: C[%lld] = %g, scalar %g", set, which,
          (long long)mr, (long long)nr, (long long)kc, transposed ? "A^T" : "A", accumulate,
          (long long)bad, bad >= 0 ? c[bad] : 0.0, bad >= 0 ? ref[bad] : 0.0);
    free(a);
    free(b);
    free(c);
    free(ref);
}

LIG_TEST(kernels_f32_gemm_ukernels) {
    static const int64_t kcs[] = {1, 2, 3, 7, 16, 33, 128};
    const lig_kernel_set *sets[8];
    const int m = sets_under_test(sets, 1);
    th_rng r = th_rng_make(0x6b65726eu);
    int64_t calls = 0;
    for (int s = 0; s < m; s++) {
        const lig_f32_gemm_config *cfg = &sets[s]->f32->gemm;
        for (int which = 0; which < 2; which++) {
            const lig_f32_gemm_ukernel_fn uk = which ? cfg->narrow_ukernel : cfg->ukernel;
            const int64_t MR = which ? cfg->narrow_mr : cfg->mr, NR = which ? cfg->narrow_nr : cfg->nr;
            if (!uk) continue;
            for (int64_t mr = 1; mr <= MR; mr++)
                for (int64_t nr = 1; nr <= NR; nr++)
                    for (size_t k = 0; k < sizeof kcs / sizeof kcs[0]; k++) {
                        check_ukernel(sets[s]->name, which ? "narrow" : "main", uk, mr, nr, kcs[k], (int)(k % 2),
                                      (int)((mr + nr + k) % 2), &r);
                        calls++;
                    }
        }
    }
    th_note("%lld micro-kernel calls compared with the scalar set", (long long)calls);
}

/* The tiled driver over each set's micro-kernels against the scalar set's, M, N, K from 1 to
 * past two tiles. */
LIG_TEST(kernels_f32_gemm_driver) {
    const lig_kernel_set *sets[8], *ref_set;
    const int m = sets_against_scalar(sets, &ref_set);
    th_rng r = th_rng_make(0x64726976u);
    for (int s = 0; s < m; s++) {
        const lig_f32_gemm_config *cfg = &sets[s]->f32->gemm;
        const int64_t maxm = 2 * (cfg->mr > cfg->narrow_mr ? cfg->mr : cfg->narrow_mr) + 1, maxn = 2 * cfg->nr + 1;
        for (int64_t M = 1; M <= maxm; M += 1 + M / 5)
            for (int64_t N = 1; N <= maxn; N += 1 + N / 6)
                for (int64_t K = 1; K <= 70; K += 23) {
                    const int transposed = (int)((M + N) % 2);
                    const int64_t a_rs = transposed ? 1 : K, a_cs = transposed ? M : 1, ldb = N + 1, ldc = N + 2;
                    float *a = th_xmalloc(sizeof(float) * (size_t)(M * K));
                    float *b = th_xmalloc(sizeof(float) * (size_t)(K * ldb));
                    float *c = th_xmalloc(sizeof(float) * (size_t)(M * ldc));
                    float *ref = th_xmalloc(sizeof(float) * (size_t)(M * ldc));
                    fill_grid(&r, a, (size_t)(M * K));
                    fill_grid(&r, b, (size_t)(K * ldb));
                    fill_grid(&r, c, (size_t)(M * ldc));
                    memcpy(ref, c, sizeof(float) * (size_t)(M * ldc));
                    const bool acc = (K % 2) == 1;
                    lig_f32_gemm(cfg, M, N, K, a, a_rs, a_cs, b, ldb, c, ldc, acc);
                    lig_f32_gemm(&ref_set->f32->gemm, M, N, K, a, a_rs, a_cs, b, ldb, ref, ldc, acc);
                    CHECK(memcmp(c, ref, sizeof(float) * (size_t)(M * ldc)) == 0,
                          "%s driver M=%lld N=%lld K=%lld: differs from the scalar set", sets[s]->name, (long long)M,
                          (long long)N, (long long)K);
                    free(a);
                    free(b);
                    free(c);
                    free(ref);
                }
    }
}

/* Gate scores: a zero, a negative zero or NaN, each one draw in `draws`, a grid value otherwise. */
static void fill_gate_scores(th_rng *r, float *st, int64_t n, int64_t draws)
{
    for (int64_t i = 0; i < n; i++) {
        const int64_t k = th_rng_range(r, 0, draws - 1);
        st[i] = k == 0 ? 0.0f : k == 1 ? -0.0f : k == 2 ? NAN : grid_value(r);
    }
}

/* The backward's gate and the forward's score sum: grid scores (exact products and sums),
 * zeros and negatives; non-finite dy and weights where the gate is closed must add nothing. */
LIG_TEST(kernels_gate_and_scores) {
    const lig_kernel_set *sets[8], *ref_set;
    const int m = sets_against_scalar(sets, &ref_set);
    th_rng r = th_rng_make(0x67617465u);
    for (int s = 0; s < m; s++) {
        for (int64_t G = 1; G <= 40; G += 1 + G / 4)
            for (int64_t nb = 1; nb <= 50; nb += 7) {
                float *st = th_xmalloc(sizeof(float) * (size_t)(nb * G)), *st2 = th_xmalloc(sizeof(float) * (size_t)(nb * G));
                float *w = th_xmalloc(sizeof(float) * (size_t)G), *dy = th_xmalloc(sizeof(float) * (size_t)nb);
                float dw[40], dw2[40], score[50], score2[50];
                fill_gate_scores(&r, st, nb * G, 10);
                for (int64_t h = 0; h < G; h++) {
                    w[h] = grid_value(&r);
                    dw[h] = dw2[h] = grid_value(&r);
                }
                for (int64_t n = 0; n < nb; n++) dy[n] = grid_value(&r);
                /* a slot whose scores are all closed may carry a non-finite dy */
                for (int64_t h = 0; h < G; h++) st[h] = -1.0f;
                dy[0] = INFINITY;
                memcpy(st2, st, sizeof(float) * (size_t)(nb * G));
                sets[s]->f32->fwd_scores(st, nb, G, G, w, score);
                ref_set->f32->fwd_scores(st, nb, G, G, w, score2);
                CHECK(memcmp(score, score2, sizeof(float) * (size_t)nb) == 0, "%s fwd_scores G=%lld nb=%lld differs",
                      sets[s]->name, (long long)G, (long long)nb);
                /* one row's heads among wider rows (several query rows' columns): the same scores */
                float *wide = th_xmalloc(sizeof(float) * (size_t)(nb * (G + 5)));
                for (int64_t n = 0; n < nb; n++)
                    for (int64_t c = 0; c < G + 5; c++) wide[n * (G + 5) + c] = c >= 2 && c < G + 2 ? st[n * G + c - 2] : NAN;
                sets[s]->f32->fwd_scores(wide + 2, nb, G + 5, G, w, score2);
                CHECK(memcmp(score, score2, sizeof(float) * (size_t)nb) == 0, "%s fwd_scores G=%lld nb=%lld with ld=G+5 differs",
                      sets[s]->name, (long long)G, (long long)nb);
                free(wide);
                sets[s]->f32->grad_gate(st, nb, G, w, dy, dw);
                ref_set->f32->grad_gate(st2, nb, G, w, dy, dw2);
                CHECK(memcmp(st, st2, sizeof(float) * (size_t)(nb * G)) == 0 && memcmp(dw, dw2, sizeof(float) * (size_t)G) == 0,
                      "%s grad_gate G=%lld nb=%lld differs", sets[s]->name, (long long)G, (long long)nb);
                for (int64_t h = 0; h < G; h++) CHECK(isfinite(dw[h]), "%s grad_gate: a closed slot's Inf dy reached dW",
                                                      sets[s]->name);
                free(st);
                free(st2);
                free(w);
                free(dy);
            }
    }
}

/* Row conversions: every dtype, strides, lengths 0..70, special values (NaN, Inf, subnormals,
 * rounding ties), and axpy against fmaf. */
LIG_TEST(kernels_rows) {
    static const lig_dtype dtypes[] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -3e-39f, 6e-8f, 65520.0f,
                                     1.00390625f, 1.01171875f, 3.4e38f, 5.9604645e-8f, 0x1.002p0f};
    const lig_kernel_set *sets[8], *ref_set;
    const int m = sets_against_scalar(sets, &ref_set);
    th_rng r = th_rng_make(0x726f7773u);
    for (int s = 0; s < m; s++)
        for (size_t di = 0; di < 3; di++)
            for (int64_t stride = 1; stride <= 5; stride += 2)
                for (int64_t n = 0; n <= 70; n += 1 + n / 8) {
                    float src[71], back[71], back2[71];
                    unsigned char raw[71 * 5 * 4], raw2[71 * 5 * 4];
                    for (int64_t i = 0; i < n; i++) {
                        const int64_t k = th_rng_range(&r, 0, 3);
                        src[i] = k == 0 ? specials[th_rng_range(&r, 0, (int64_t)(sizeof specials / sizeof specials[0]) - 1)]
                                        : (float)((th_rng_unit(&r) * 2.0 - 1.0) * pow(2.0, (double)th_rng_range(&r, -30, 20)));
                    }
                    memset(raw, 0x5a, sizeof raw);
                    memset(raw2, 0x5a, sizeof raw2);
                    sets[s]->f32->store_row(src, n, dtypes[di], raw, stride);
                    ref_set->f32->store_row(src, n, dtypes[di], raw2, stride);
                    CHECK(memcmp(raw, raw2, sizeof raw) == 0, "%s store_row dtype %d stride %lld n %lld differs",
                          sets[s]->name, (int)dtypes[di], (long long)stride, (long long)n);
                    sets[s]->f32->load_row(dtypes[di], raw, stride, n, back);
                    ref_set->f32->load_row(dtypes[di], raw, stride, n, back2);
                    CHECK(memcmp(back, back2, sizeof(float) * (size_t)n) == 0, "%s load_row dtype %d stride %lld n %lld differs",
                          sets[s]->name, (int)dtypes[di], (long long)stride, (long long)n);
                    float acc[71], acc2[71];
                    const float a = di == 0 ? 1.0f : (float)grid_value(&r) + 0.375f;
                    for (int64_t i = 0; i < n; i++) acc[i] = acc2[i] = (float)th_rng_unit(&r);
                    sets[s]->f32->axpy_row(acc, a, back, n);
                    for (int64_t i = 0; i < n; i++) acc2[i] = fmaf(a, back[i], acc2[i]);
                    CHECK(memcmp(acc, acc2, sizeof(float) * (size_t)n) == 0, "%s axpy_row a=%g n %lld differs from fmaf",
                          sets[s]->name, (double)a, (long long)n);
                }
}

static float bf16_value(uint16_t bits) {
    const uint32_t u = (uint32_t)bits << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* bf16 values on the grid of test_kernels (multiples of 1/8 in [-2, 2]) as bits. */
static uint16_t grid_bf16(th_rng *r) {
    const float f = grid_value(r);
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)(u >> 16); /* exact: 1/8-grid values have short significands */
}

/* Sets with bf16 kernels, configured for this thread (tiles); reports the others. */
static int bf16_sets(const lig_kernel_set **out) {
    const lig_kernel_set *sets[8];
    const int m = sets_under_test(sets, 1);
    int k = 0;
    for (int s = 0; s < m; s++)
        if (sets[s]->bf16) out[k++] = sets[s];
    if (k == 0 && m > 0) th_skip("none of the sets this CPU supports (%s) has bf16 micro-kernels", lig_kernel_sets());
    return k;
}

static void begin_thread(const lig_kernel_set *ks) {
    if (ks->bf16->gemm.thread_begin) ks->bf16->gemm.thread_begin();
}

static void end_thread(const lig_kernel_set *ks) {
    if (ks->bf16->gemm.thread_end) ks->bf16->gemm.thread_end();
}

/* The bf16 micro-kernels and their driver against the scalar reference on grid data (exact),
 * every shape from 1 to past two tiles, reductions from 2 to 3 whole tiles plus odd pairs. */
LIG_TEST(kernels_bf16_gemm) {
    const lig_kernel_set *sets[8];
    const int m = bf16_sets(sets);
    th_rng r = th_rng_make(0x62663136u);
    int64_t calls = 0;
    for (int s = 0; s < m; s++) {
        const lig_bf16_gemm_config *cfg = &sets[s]->bf16->gemm;
        begin_thread(sets[s]);
        for (int64_t M = 1; M <= 2 * cfg->mr + 1; M += 1 + M / 3)
            for (int64_t N = 1; N <= 2 * cfg->nr + 1; N += 1 + N / 3)
                for (int64_t K = 2; K <= 3 * cfg->kr + 2; K += K < 8 ? 2 : 2 + 2 * (K / 6)) {
                    const int64_t lda = K + 2, ldb = N + 1, ldc = N + 3;
                    uint16_t *a = th_xmalloc(sizeof(uint16_t) * (size_t)(M * lda));
                    uint16_t *b = th_xmalloc(sizeof(uint16_t) * (size_t)(K * ldb));
                    float *c = th_xmalloc(sizeof(float) * (size_t)(M * ldc)), *ref = th_xmalloc(sizeof(float) * (size_t)(M * ldc));
                    for (int64_t i = 0; i < M * lda; i++) a[i] = grid_bf16(&r);
                    for (int64_t i = 0; i < K * ldb; i++) b[i] = grid_bf16(&r);
                    for (int64_t i = 0; i < M * ldc; i++) c[i] = ref[i] = grid_value(&r);
                    const bool acc = (M + N + K) % 2 == 0;
                    lig_bf16_gemm(cfg, M, N, K, a, lda, b, ldb, c, ldc, acc);
                    lig_bf16_gemm_ukernel_4x4__scalar(M, N, K, a, lda, b, ldb, ref, ldc, acc);
                    CHECK(memcmp(c, ref, sizeof(float) * (size_t)(M * ldc)) == 0,
                          "%s bf16 GEMM M=%lld N=%lld K=%lld accumulate=%d differs from the scalar reference",
                          sets[s]->name, (long long)M, (long long)N, (long long)K, (int)acc);
                    calls++;
                    free(a);
                    free(b);
                    free(c);
                    free(ref);
                }
        end_thread(sets[s]);
    }
    th_note("%lld bf16 products compared with the scalar reference", (long long)calls);
}

/* The bf16 engines' packing, gate and transposed gate rows against their scalar references:
 * heads from the family's col_pad to 160 in steps of it (one and several 64-bit words of bits), blocks of 64 and 128 slots,
 * scores with zeros, negative zeros and NaN, non-finite dy on slots closed for every head. */
LIG_TEST(kernels_bf16_operands) {
    const lig_kernel_set *sets[8];
    const int m = bf16_sets(sets);
    th_rng r = th_rng_make(0x6f706e64u);
    for (int s = 0; s < m; s++)
        for (int64_t gp = sets[s]->bf16->col_pad; gp <= 160; gp += sets[s]->bf16->col_pad)
            for (int64_t nb = 64; nb <= 128; nb += 64) {
                const int64_t words = (gp + 63) / 64;
                float *st = th_xmalloc(sizeof(float) * (size_t)(nb * gp)), *dy = th_xmalloc(sizeof(float) * (size_t)nb);
                float *dw = th_xmalloc(sizeof(float) * (size_t)gp), *dw2 = th_xmalloc(sizeof(float) * (size_t)gp);
                uint16_t *w = th_xmalloc(sizeof(uint16_t) * (size_t)gp), *dy16 = th_xmalloc(sizeof(uint16_t) * (size_t)nb);
                uint16_t *adk = th_xmalloc(sizeof(uint16_t) * (size_t)(nb * gp)), *adk2 = th_xmalloc(sizeof(uint16_t) * (size_t)(nb * gp));
                uint16_t *adq = th_xmalloc(sizeof(uint16_t) * (size_t)(nb * gp)), *adq2 = th_xmalloc(sizeof(uint16_t) * (size_t)(nb * gp));
                uint64_t *bits = th_xmalloc(sizeof(uint64_t) * (size_t)(words * nb)), *bits2 = th_xmalloc(sizeof(uint64_t) * (size_t)(words * nb));
                uint64_t heads[3] = {0, 0, 0}, heads2[3] = {0, 0, 0};
                fill_gate_scores(&r, st, nb * gp, 8);
                for (int64_t h = 0; h < gp; h++) {
                    w[h] = grid_bf16(&r);
                    dw[h] = dw2[h] = grid_value(&r);
                    if (h % 7 == 3) /* a head closed for every slot */
                        for (int64_t n = 0; n < nb; n++) st[n * gp + h] = -1.0f;
                }
                for (int64_t n = 0; n < nb; n++) {
                    dy16[n] = grid_bf16(&r);
                    dy[n] = bf16_value(dy16[n]);
                }
                for (int64_t h = 0; h < gp; h++) st[h] = -2.0f; /* slot 0 closed for every head... */
                dy[0] = INFINITY;                               /* ...may carry a non-finite dy */
                sets[s]->bf16->gate(st, nb, gp, dy, w, dw, adk, bits, heads);
                lig_bf16_gate__scalar(st, nb, gp, dy, w, dw2, adk2, bits2, heads2);
                CHECK(memcmp(dw, dw2, sizeof(float) * (size_t)gp) == 0, "%s bf16 gate gp=%lld nb=%lld: dW differs",
                      sets[s]->name, (long long)gp, (long long)nb);
                CHECK(memcmp(adk, adk2, sizeof(uint16_t) * (size_t)(nb * gp)) == 0,
                      "%s bf16 gate gp=%lld nb=%lld: the dK operand differs", sets[s]->name, (long long)gp, (long long)nb);
                CHECK(memcmp(bits, bits2, sizeof(uint64_t) * (size_t)(words * nb)) == 0 &&
                          memcmp(heads, heads2, sizeof heads) == 0,
                      "%s bf16 gate gp=%lld nb=%lld: the open bits differ", sets[s]->name, (long long)gp, (long long)nb);
                sets[s]->bf16->dq_operand(bits2, nb, gp, dy16, adq);
                lig_bf16_dq_operand__scalar(bits2, nb, gp, dy16, adq2);
                CHECK(memcmp(adq, adq2, sizeof(uint16_t) * (size_t)(nb * gp)) == 0,
                      "%s bf16 open rows gp=%lld nb=%lld: the dQ operand differs", sets[s]->name, (long long)gp,
                      (long long)nb);
                /* pairs: any row count and width, from the gate's operand */
                for (int64_t cols = 1; cols <= gp; cols += 13) {
                    uint16_t *p1 = th_xcalloc((size_t)(nb * cols), sizeof(uint16_t));
                    uint16_t *p2 = th_xcalloc((size_t)(nb * cols), sizeof(uint16_t));
                    sets[s]->bf16->pack_pairs(adk2, gp, nb / 2, cols, p1);
                    lig_bf16_pack_pairs__scalar(adk2, gp, nb / 2, cols, p2);
                    CHECK(memcmp(p1, p2, sizeof(uint16_t) * (size_t)(nb * cols)) == 0,
                          "%s bf16 pack pairs cols=%lld differs", sets[s]->name, (long long)cols);
                    free(p1);
                    free(p2);
                }
                free(st);
                free(dy);
                free(dw);
                free(dw2);
                free(w);
                free(dy16);
                free(adk);
                free(adk2);
                free(adq);
                free(adq2);
                free(bits);
                free(bits2);
            }
}

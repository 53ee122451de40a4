/*
 * The quantized forward's SIMD pieces, white-box, on every kernel set this CPU supports:
 *   - each set's quant score kernels (fp32 and int32 dot products) against lig_quant_scores__scalar,
 *     bit for bit, over tails of keys and heads, strides, absent query scales and non-finite values;
 *   - the INT8 engine (the set's int8 GEMM) against the portable engine (the set's fp32 GEMM, exact
 *     chunks), score for score and bit for bit, over D, heads, rows per pass, strided queries and
 *     keys read in place or gathered.
 * Sets the CPU lacks are reported as skipped, by name.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels/kernel_set.h"
#include "backends/cpu/kernels/scalar/scalar.h" /* the portable references */
#include "backends/cpu/operators/fwd_engine.h"
#include "framework.h"
#include "lig.h"
#include "rng.h"
#include "tests.h"

static void free_each(void *const *p, int n) {
    for (int i = 0; i < n; i++) free(p[i]);
}

/* equal bits, or both NaN (a NaN's payload is not part of the contract) */
static int same_float(float a, float b) {
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

static float wild(th_rng *r, double p_special) {
    if (th_rng_chance(r, p_special)) {
        static const float special[5] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN};
        return special[th_rng_range(r, 0, 4)];
    }
    return (float)((th_rng_unit(r) - 0.4) * 8.0);
}

LIG_TEST(quant_engines_scores) {
    const lig_kernel_set *sets[16];
    const int n_sets = supported_sets(sets);
    static const int64_t nbs[6] = {1, 5, 16, 17, 33, 96}, Gs[8] = {1, 3, 8, 15, 16, 17, 64, 70};
    th_rng r = th_rng_make(0x5c0e5u);
    int64_t cases = 0, bad = 0;
    for (int v = 0; v < 96; v++) {
        const int64_t nb = nbs[v % 6], G = Gs[(v / 6) % 8], ld = G + (v % 3 == 0 ? 3 : 0);
        const int with_sq = v % 2, special = v % 4 == 3;
        float *st = malloc(sizeof(float) * (size_t)(nb * ld)), *sk = malloc(sizeof(float) * (size_t)nb);
        int32_t *sti = malloc(sizeof(int32_t) * (size_t)(nb * ld));
        float *sq = malloc(sizeof(float) * (size_t)G), *w = malloc(sizeof(float) * (size_t)G);
        float *want = malloc(sizeof(float) * (size_t)nb), *wanti = malloc(sizeof(float) * (size_t)nb);
        float *got = malloc(sizeof(float) * (size_t)nb);
        for (int64_t i = 0; i < nb * ld; i++) {
            st[i] = wild(&r, special ? 0.1 : 0.0);
            /* past 2^24 too, where the conversion rounds */
            sti[i] = (int32_t)th_rng_range(&r, -(1 << 30), 1 << 30) >> (int)th_rng_range(&r, 0, 24);
        }
        for (int64_t n = 0; n < nb; n++) sk[n] = th_rng_chance(&r, 0.9) ? (float)th_rng_unit(&r) : wild(&r, special);
        for (int64_t h = 0; h < G; h++) {
            sq[h] = (float)(th_rng_unit(&r) * 2.0);
            w[h] = wild(&r, special ? 0.05 : 0.0);
        }
        const float *sqp = with_sq ? sq : NULL;
        lig_quant_scores__scalar(st, nb, ld, G, sk, sqp, w, want);
        lig_quant_scores_i32__scalar(sti, nb, ld, G, sk, sqp, w, wanti);
        for (int si = 0; si < n_sets; si++) {
            const lig_f32_kernels *f = sets[si]->f32;
            for (int i32 = 0; i32 < 2; i32++) {
                for (int64_t n = 0; n < nb; n++) got[n] = -1234.5f;
                if (i32) f->quant_scores_i32(sti, nb, ld, G, sk, sqp, w, got);
                else f->quant_scores(st, nb, ld, G, sk, sqp, w, got);
                const float *ref = i32 ? wanti : want;
                for (int64_t n = 0; n < nb; n++) {
                    if (!same_float(got[n], ref[n]) && bad++ < 5) {
                        CHECK(0, "set %s, %s dots, nb %lld G %lld ld %lld sq %d: key %lld scores %a, the portable kernel %a",
                              sets[si]->name, i32 ? "int32" : "fp32", (long long)nb, (long long)G, (long long)ld,
                              with_sq, (long long)n, (double)got[n], (double)ref[n]);
                    }
                }
                cases++;
            }
        }
        void *const bufs[] = {st, sti, sk, sq, w, want, wanti, got};
        free_each(bufs, 8);
    }
    th_note("%lld kernel runs compared over %d sets", (long long)cases, n_sets);
    CHECK(bad == 0, "%lld scores differ from the portable kernel's", (long long)bad);
}

/* One engine's scores of `nb` keys for the rows of one pass, into score[rows][nb]: the keys in
 * blocks of the engine's size, one begin_rows for them all, as the operator runs it. */
static void engine_scores(const lig_fwd_engine *e, lig_fwd_ctx c, int64_t rows, const char *const *q,
                          const char *const *w, const char *const *sq, int64_t nb, const char *const *key,
                          const char *const *ksc, float *score) {
    e->configure(&c);
    const uint64_t bytes = e->scratch_bytes(&c);
    char *scratch = aligned_alloc(64, (size_t)((bytes + 63) / 64 * 64));
    float *out = malloc(sizeof(float) * (size_t)(rows * c.block));
    if (e->thread_begin) e->thread_begin(&c);
    e->begin_rows(&c, scratch, rows, q, w, sq);
    for (int64_t s0 = 0; s0 < nb; s0 += c.block) {
        const int64_t m = nb - s0 < c.block ? nb - s0 : c.block;
        e->score_block(&c, scratch, rows, m, key + s0, ksc + s0, out);
        for (int64_t i = 0; i < rows; i++) memcpy(score + i * nb + s0, out + i * c.block, sizeof(float) * (size_t)m);
    }
    if (e->thread_end) e->thread_end(&c);
    free(out);
    free(scratch);
}

LIG_TEST(quant_engines_int8_same_as_portable) {
    const lig_kernel_set *sets[16];
    const int n_sets = supported_sets(sets);
    static const int64_t Ds[6] = {1, 7, 64, 128, 129, 300}, Gs[5] = {1, 3, 5, 16, 64};
    th_rng r = th_rng_make(0x18e9u);
    int64_t cases = 0, bad = 0;
    for (int v = 0; v < 60; v++) {
        const int64_t D = Ds[v % 6], G = Gs[(v / 6) % 5], rows = 1 + v % lig_fwd_rows_for(G);
        const int64_t q_dim = v % 4 == 1 ? 2 : 1, k_dim = v % 5 == 2 ? 3 : 1, gather = v % 3 == 1;
        const int has_sq = v % 2 == 0, extreme = v % 7 == 3;
        const int64_t nk = 120; /* more than one block of either engine */
        /* queries [rows][G][D * q_dim], weights [rows][G], scales; keys [nk][D * k_dim] + scales */
        int8_t *qd = malloc((size_t)(rows * G * D * q_dim)), *kd = malloc((size_t)(nk * D * k_dim));
        float *wd = malloc(sizeof(float) * (size_t)(rows * G)), *sqd = malloc(sizeof(float) * (size_t)(rows * G));
        uint16_t *skd = malloc(sizeof(uint16_t) * (size_t)nk); /* FLOAT16 key scales */
        for (int64_t i = 0; i < rows * G * D * q_dim; i++) qd[i] = (int8_t)(extreme ? -128 : th_rng_range(&r, -128, 127));
        for (int64_t i = 0; i < nk * D * k_dim; i++) kd[i] = (int8_t)(extreme ? -128 : th_rng_range(&r, -128, 127));
        for (int64_t i = 0; i < rows * G; i++) {
            wd[i] = (float)(th_rng_unit(&r) - 0.3);
            sqd[i] = (float)th_rng_unit(&r);
        }
        for (int64_t i = 0; i < nk; i++) skd[i] = (uint16_t)(0x2000 + th_rng_range(&r, 0, 0x1800)); /* positive halves */
        const char *q[LIG_FWD_MAX_ROWS], *w[LIG_FWD_MAX_ROWS], *sq[LIG_FWD_MAX_ROWS];
        for (int64_t i = 0; i < rows; i++) {
            q[i] = (const char *)(qd + i * G * D * q_dim);
            w[i] = (const char *)(wd + i * G);
            sq[i] = (const char *)(sqd + i * G);
        }
        const char *key[128], *ksc[128];
        for (int64_t n = 0; n < nk; n++) {
            /* gathered: a permutation (rows of a paged cache across blocks), else in order */
            const int64_t src = gather ? (n * 37 + 11) % nk : n;
            key[n] = (const char *)(kd + src * D * k_dim);
            ksc[n] = (const char *)(skd + src);
        }
        const lig_fwd_ctx base = {.G = G, .D = D, .rows = rows, .dtype = LIG_INT8, .q_head = D * q_dim, .q_dim = q_dim,
                                  .w_head = 1, .k_dim = k_dim, .w_dtype = LIG_FLOAT32, .has_sq = has_sq,
                                  .sq_dtype = LIG_FLOAT32, .sk_dtype = LIG_FLOAT16, .sq_head = 1};
        for (int si = 0; si < n_sets; si++) {
            lig_fwd_ctx c = base;
            c.ks = sets[si];
            const int64_t nbs[3] = {1, 13, nk};
            for (int b = 0; b < 3; b++) {
                const int64_t nb = nbs[b];
                float *a = malloc(sizeof(float) * (size_t)(rows * nb)), *p = malloc(sizeof(float) * (size_t)(rows * nb));
                engine_scores(&lig_fwd_engine_i8, c, rows, q, w, has_sq ? sq : NULL, nb, key, ksc, a);
                engine_scores(&lig_fwd_engine_quant_portable, c, rows, q, w, has_sq ? sq : NULL, nb, key, ksc, p);
                for (int64_t i = 0; i < rows * nb; i++) {
                    if (!same_float(a[i], p[i]) && bad++ < 5) {
                        CHECK(0, "set %s, D %lld G %lld rows %lld nb %lld: score %lld is %a, the portable engine's %a",
                              sets[si]->name, (long long)D, (long long)G, (long long)rows, (long long)nb, (long long)i,
                              (double)a[i], (double)p[i]);
                    }
                }
                cases++;
                free(a);
                free(p);
            }
        }
        void *const bufs[] = {qd, kd, wd, sqd, skd};
        free_each(bufs, 5);
    }
    th_note("%lld blocks compared over %d sets", (long long)cases, n_sets);
    CHECK(bad == 0, "%lld INT8 scores differ from the portable engine's", (long long)bad);
}

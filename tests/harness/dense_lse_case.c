/* The problems of lig_dense_indexer_softmax_lse and their float64 reference (dense_lse_case.h). */
#include "dense_lse_case.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "framework.h"
#include "rng.h"

void lse_case_make(lse_case *c, const lse_desc *d, uint64_t seed) {
    memset(c, 0, sizeof *c);
    c->d = *d;
    th_rng r = th_rng_make(seed);
    const int64_t B = d->B;
    const cmp_lengths_spec lens = {.tnd = d->tnd, .B = B, .S1 = d->S1, .S2 = d->S2, .lengths = d->lengths,
                                   .residual = d->residual, .ratio = d->ratio, .len_dtype = d->len_dtype};
    cmp_lengths_make(&c->len, &lens, &r);
    const int64_t qs[4] = {B, d->S1, d->N1, d->D}, ks[4] = {B, d->S2, d->N2, d->D}, ws[3] = {B, d->S1, d->N1};
    const int o = d->tnd ? 1 : 0;
    tbuf_make(&c->q, d->dtype, 4 - o, qs + o, d->strides, TB_FLOAT_GAP_FILL);
    tbuf_make(&c->k, d->dtype, 4 - o, ks + o, d->strides, TB_FLOAT_GAP_FILL);
    tbuf_make(&c->w, d->w_dtype, 3 - o, ws + o, d->strides, TB_FLOAT_GAP_FILL);
    const int64_t ls[3] = {B, d->N2, d->S1};
    tbuf_make(&c->lse, LIG_FLOAT32, 3 - o, ls + o, d->strides, TB_OUTPUT_FILL);
    for (int64_t i = 0; i < tbuf_numel(&c->q); i++) tbuf_write(&c->q, i, d->scale * (2 * th_rng_unit(&r) - 1));
    for (int64_t i = 0; i < tbuf_numel(&c->k); i++) tbuf_write(&c->k, i, d->scale * (2 * th_rng_unit(&r) - 1));
    for (int64_t i = 0; i < tbuf_numel(&c->w); i++) tbuf_write(&c->w, i, 2 * th_rng_unit(&r) - 1);
    tbuf_snapshot(&c->lse);
}

lse_desc lse_matrix_desc(const lse_desc *base, int layout, int di, int ri, int64_t mask) {
    static const lig_dtype dtypes[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    static const int64_t ratios[3] = {1, 4, 128};
    lse_desc d = *base;
    d.tnd = layout == 1;
    d.dtype = dtypes[di];
    d.w_dtype = (di + ri) % 2 ? LIG_FLOAT32 : d.dtype; /* both weight dtypes for every dtype */
    d.ratio = ratios[ri];
    d.mask_mode = mask;
    d.residual = ratios[ri] > 1;
    d.lengths = (di + ri) % 2 == 0;
    d.len_dtype = ri % 2 ? LIG_INT32 : LIG_INT64;
    d.strides = (tc_strides)((di + ri + layout) % 3 == 0 ? TC_PADDED : (di + ri) % 3 == 1 ? TC_PERMUTED : TC_CONTIGUOUS);
    /* ratio 128 needs long original timelines: a few entries of many rows */
    d.S1 = ratios[ri] == 128 ? 300 : 13;
    d.S2 = ratios[ri] == 128 ? 5 : 11;
    d.N1 = di == 2 ? 16 : 4; /* wide enough for the bf16 engines, where a set has them */
    d.N2 = di == 1 ? 2 : 1;
    d.D = di == 0 ? 20 : 32;
    d.B = layout ? 3 : 2;
    return d;
}

int lse_matrix_each(const lse_desc *base, void (*fn)(const lse_desc *d, int index, void *ctx), void *ctx) {
    int cases = 0;
    for (int layout = 0; layout < 2; layout++)
        for (int di = 0; di < 3; di++)
            for (int ri = 0; ri < 3; ri++)
                for (int64_t mask = 0; mask <= 3; mask += 3) {
                    const lse_desc d = lse_matrix_desc(base, layout, di, ri, mask);
                    fn(&d, cases++, ctx);
                }
    return cases;
}

lse_desc lse_threads_desc(const lse_desc *base, int di) {
    static const lig_dtype dtypes[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    lse_desc d = *base;
    d.label = "threads";
    d.dtype = d.w_dtype = dtypes[di];
    d.B = 3; d.S1 = 24; d.S2 = 300; d.N1 = 32; d.D = 64; d.ratio = 4; d.residual = true; d.lengths = true;
    return d;
}

int lse_edges_each(const lse_desc *base, void (*fn)(const lse_desc *d, int index, void *ctx), void *ctx) {
    static const struct { const char *label; int64_t B, S1, S2, N1, N2, D; bool tnd; } shapes[] = {
        {"no keys", 2, 3, 0, 2, 1, 8, false}, {"no rows", 2, 0, 4, 2, 1, 8, false}, {"D = 0", 2, 4, 6, 2, 1, 0, false},
        {"one head", 1, 7, 40, 1, 1, 4, false}, {"64 heads", 1, 3, 70, 64, 1, 128, false},
        {"heads per key head 3", 2, 5, 7, 6, 2, 8, true}, {"D = 1", 2, 6, 5, 3, 1, 1, true},
        {"odd", 3, 17, 23, 5, 1, 13, false},
    };
    int calls = 0;
    for (int i = 0; i < (int)(sizeof shapes / sizeof shapes[0]); i++)
        for (int64_t mask = 0; mask <= 3; mask += 3)
            for (int64_t ratio = 1; ratio <= 4; ratio += 3) {
                lse_desc d = *base;
                d.label = shapes[i].label;
                d.B = shapes[i].B; d.S1 = shapes[i].S1; d.S2 = shapes[i].S2;
                d.N1 = shapes[i].N1; d.N2 = shapes[i].N2; d.D = shapes[i].D; d.tnd = shapes[i].tnd;
                d.mask_mode = mask;
                d.ratio = ratio;
                d.residual = ratio > 1;
                fn(&d, i, ctx);
                calls++;
            }
    return calls;
}

void lse_case_free(lse_case *c) {
    tbuf *all[] = {&c->q, &c->k, &c->w, &c->lse};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->base) tbuf_free(all[i]);
    cmp_lengths_free(&c->len);
}

lig_status lse_case_call(lse_case *c) {
    uint64_t ws = 0;
    lig_executor *e = NULL;
    lig_status st = lig_dense_indexer_softmax_lse_get_workspace_size(
        c->q.t, c->k.t, c->w.t, c->len.aq.t, c->len.ak.t, c->len.res.t, c->d.tnd ? "TND" : "BSND", c->d.mask_mode,
        c->d.ratio, c->lse.t, &ws, &e);
    if (st != LIG_SUCCESS) return st;
    void *buf = ws ? malloc((size_t)ws) : NULL;
    st = lig_dense_indexer_softmax_lse(buf, ws, e, NULL);
    free(buf);
    return st;
}

int64_t lse_ref_visible(const lse_case *c, int64_t b, int64_t t) {
    return cmp_lengths_visible(&c->len, b, t, c->d.mask_mode, c->d.ratio);
}

/* Element index of (b, row, head, d) in a row-major query- or key-shaped tensor. */
static int64_t at4(const lse_case *c, int64_t b, int64_t row, int64_t rows, int64_t heads, int64_t h, int64_t d) {
    return ((c->d.tnd ? row : b * rows + row) * heads + h) * c->d.D + d;
}

int64_t lse_case_index(const lse_case *c, int64_t b, int64_t t, int64_t g) {
    return c->d.tnd ? g * c->d.S1 + c->len.q0[b] + t : (b * c->d.N2 + g) * c->d.S1 + t;
}

/* The float64 lse of (b, t, g) and a bound on what fp32 scores may move it: every score's error
 * is at most (D + G + 2) eps32 sum_h |w_h| sum_d |q_hd k_d|, and the lse moves no more than the
 * largest score error; then one rounding. */
static double ref_lse(const lse_case *c, int64_t b, int64_t t, int64_t g, double *tol) {
    const lse_desc *d = &c->d;
    const int64_t n = lse_ref_visible(c, b, t), G = d->N1 / d->N2;
    const int64_t qrow = c->len.q0[b] + t;
    double m = -INFINITY, worst = 0;
    double *I = malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t j = 0; j < n; j++) {
        double score = 0, mag = 0;
        for (int64_t h = g * G; h < (g + 1) * G; h++) {
            double dot = 0, absdot = 0;
            for (int64_t x = 0; x < d->D; x++) {
                const double qv = tbuf_read(&c->q, at4(c, b, qrow, d->S1, d->N1, h, x));
                const double kv = tbuf_read(&c->k, at4(c, b, c->len.k0[b] + j, d->S2, d->N2, g, x));
                dot += qv * kv;
                absdot += fabs(qv * kv);
            }
            const double wv = tbuf_read(&c->w, (d->tnd ? qrow : b * d->S1 + qrow) * d->N1 + h);
            score += wv * (dot > 0 ? dot : 0);
            mag += fabs(wv) * absdot;
        }
        I[j] = score;
        if (score > m) m = score;
        if (mag > worst) worst = mag;
    }
    double s = 0;
    for (int64_t j = 0; j < n; j++) s += exp(I[j] - m);
    free(I);
    const double lse = n > 0 ? m + log(s) : -INFINITY;
    *tol = (double)(d->D + G + 2) * FLT_EPSILON * worst * 2 + 2 * FLT_EPSILON * fabs(lse) + 1e-30;
    return lse;
}

void lse_case_check(lse_case *c, const char *label) {
    const lse_desc *d = &c->d;
    const int64_t total = tbuf_numel(&c->lse);
    char *seen = calloc((size_t)total + 1, 1);
    int bad = 0;
    for (int64_t b = 0; b < d->B; b++)
        for (int64_t t = 0; t < c->len.lq[b]; t++)
            for (int64_t g = 0; g < d->N2; g++) {
                double tol;
                const double want = ref_lse(c, b, t, g, &tol);
                const int64_t i = lse_case_index(c, b, t, g);
                seen[i] = 1;
                const double got = tbuf_read(&c->lse, i);
                const bool ok = isinf(want) ? got == want : fabs(got - want) <= tol;
                if (!ok && bad++ < 5)
                    CHECK(false, "%s: lse[b=%lld,t=%lld,g=%lld] = %.9g, want %.9g (tolerance %.3g, %lld visible)", label,
                          (long long)b, (long long)t, (long long)g, got, want, tol, (long long)lse_ref_visible(c, b, t));
            }
    for (int64_t i = 0; i < total; i++)
        if (!seen[i] && tbuf_read(&c->lse, i) != -INFINITY && bad++ < 5)
            CHECK(false, "%s: element %lld outside the valid rows = %g, want -inf", label, (long long)i, tbuf_read(&c->lse, i));
    CHECK(bad == 0, "%s: %d elements wrong", label, bad);
    CHECK(tbuf_gaps_unchanged(&c->lse), "%s: a byte outside softmax_lse's view was written", label);
    free(seen);
}


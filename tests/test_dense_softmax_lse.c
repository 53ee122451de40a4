/* lig_dense_indexer_softmax_lse (docs/contract.md 2.7) against a float64 reference written here
 * (scores, the compressed-key count of contract 4.1 enumerated block by block, log-sum-exp), over
 * layouts, shapes, key heads, dtypes, strides, lengths, ratios 1/4/128 with residuals and both
 * mask modes; against the forward's own scores (lig_indexer with every key selected) where the
 * two coincide; bitwise across thread counts and runs; and its error cases (nothing written on
 * failure). The suite runs once per kernel set (LIG_ISA). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "float_formats.h"
#include "framework.h"
#include "lig.h"
#include "rng.h"
#include "tensor_buffers.h"

typedef struct lse_desc {
    const char *label;
    bool tnd;
    int64_t B, S1, S2, N1, N2, D; /* TND: S1 = T1, S2 = T2 */
    lig_dtype dtype, w_dtype, len_dtype;
    int64_t mask_mode, ratio;
    bool residual, lengths;       /* BSND: lengths optional; TND: always */
    tc_strides strides;
    double scale;                 /* input magnitude */
} lse_desc;

typedef struct lse_case {
    lse_desc d;
    tbuf q, k, w, lse, aq, ak, res;
    int64_t *lq, *lk, *q0, *k0, *resv; /* per batch: valid rows, entries, first row, residual */
} lse_case;

static void make_case(lse_case *c, const lse_desc *d, uint64_t seed) {
    memset(c, 0, sizeof *c);
    c->d = *d;
    th_rng r = th_rng_make(seed);
    const int64_t B = d->B;
    c->lq = calloc((size_t)B + 1, 8);
    c->lk = calloc((size_t)B + 1, 8);
    c->q0 = calloc((size_t)B + 1, 8);
    c->k0 = calloc((size_t)B + 1, 8);
    c->resv = calloc((size_t)B + 1, 8);
    /* lengths: TND splits T1 / T2 into B pieces (some empty); BSND draws them (or takes S) */
    int64_t qa = 0, ka = 0;
    for (int64_t b = 0; b < B; b++) {
        if (d->tnd) {
            const int64_t lq = b == B - 1 ? d->S1 - qa : th_rng_range(&r, 0, d->S1 - qa);
            const int64_t lk = b == B - 1 ? d->S2 - ka : th_rng_range(&r, 0, d->S2 - ka);
            c->q0[b] = qa;
            c->k0[b] = ka;
            c->lq[b] = lq;
            c->lk[b] = lk;
            qa += lq;
            ka += lk;
        } else {
            c->lq[b] = d->lengths ? th_rng_range(&r, 0, d->S1) : d->S1;
            c->lk[b] = d->lengths ? th_rng_range(&r, 0, d->S2) : d->S2;
        }
        c->resv[b] = d->residual ? th_rng_range(&r, 0, d->ratio - 1) : 0;
    }
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
    const int64_t bs[1] = {B};
    if (d->tnd || d->lengths) {
        tbuf_make(&c->aq, d->len_dtype, 1, bs, TC_CONTIGUOUS, TB_INT_GAP_FILL);
        tbuf_make(&c->ak, d->len_dtype, 1, bs, TC_CONTIGUOUS, TB_INT_GAP_FILL);
        for (int64_t b = 0; b < B; b++) {
            tbuf_write_int(&c->aq, b, d->tnd ? c->q0[b] + c->lq[b] : c->lq[b]);
            tbuf_write_int(&c->ak, b, d->tnd ? c->k0[b] + c->lk[b] : c->lk[b]);
        }
    }
    if (d->residual) {
        tbuf_make(&c->res, d->len_dtype, 1, bs, TC_CONTIGUOUS, TB_INT_GAP_FILL);
        for (int64_t b = 0; b < B; b++) tbuf_write_int(&c->res, b, c->resv[b]);
    }
    tbuf_snapshot(&c->lse);
}

static void free_case(lse_case *c) {
    tbuf *all[] = {&c->q, &c->k, &c->w, &c->lse, &c->aq, &c->ak, &c->res};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->base) tbuf_free(all[i]);
    free(c->lq); free(c->lk); free(c->q0); free(c->k0); free(c->resv);
}

static lig_status call_case(lse_case *c) {
    uint64_t ws = 0;
    lig_executor *e = NULL;
    lig_status st = lig_dense_indexer_softmax_lse_get_workspace_size(
        c->q.t, c->k.t, c->w.t, c->aq.t, c->ak.t, c->res.t, c->d.tnd ? "TND" : "BSND", c->d.mask_mode, c->d.ratio,
        c->lse.t, &ws, &e);
    if (st != LIG_SUCCESS) return st;
    void *buf = ws ? malloc((size_t)ws) : NULL;
    st = lig_dense_indexer_softmax_lse(buf, ws, e, NULL);
    free(buf);
    return st;
}

/* Entries row t of batch b sees, counted block by block from the rule's words (contract 4.1). */
static int64_t lse_ref_visible(const lse_case *c, int64_t b, int64_t t) {
    if (c->d.mask_mode == 0) return c->lk[b];
    const int64_t r = c->d.ratio, position = c->lk[b] * r + c->resv[b] - c->lq[b] + t;
    int64_t n = 0;
    for (int64_t j = 0; j < c->lk[b]; j++)
        if (j * r + r - 1 <= position) n++;
    return n;
}

/* Element index of (b, row, head, d) in a row-major query- or key-shaped tensor. */
static int64_t at4(const lse_case *c, int64_t b, int64_t row, int64_t rows, int64_t heads, int64_t h, int64_t d) {
    return ((c->d.tnd ? row : b * rows + row) * heads + h) * c->d.D + d;
}

static int64_t lse_index(const lse_case *c, int64_t b, int64_t t, int64_t g) {
    return c->d.tnd ? g * c->d.S1 + c->q0[b] + t : (b * c->d.N2 + g) * c->d.S1 + t;
}

/* The float64 lse of (b, t, g) and a bound on what fp32 scores may move it: every score's error
 * is at most (D + G + 2) eps32 sum_h |w_h| sum_d |q_hd k_d|, and the lse moves no more than the
 * largest score error; then one rounding. */
static double ref_lse(const lse_case *c, int64_t b, int64_t t, int64_t g, double *tol) {
    const lse_desc *d = &c->d;
    const int64_t n = lse_ref_visible(c, b, t), G = d->N1 / d->N2;
    const int64_t qrow = c->q0[b] + t;
    double m = -INFINITY, worst = 0;
    double *I = malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t j = 0; j < n; j++) {
        double score = 0, mag = 0;
        for (int64_t h = g * G; h < (g + 1) * G; h++) {
            double dot = 0, absdot = 0;
            for (int64_t x = 0; x < d->D; x++) {
                const double qv = tbuf_read(&c->q, at4(c, b, qrow, d->S1, d->N1, h, x));
                const double kv = tbuf_read(&c->k, at4(c, b, c->k0[b] + j, d->S2, d->N2, g, x));
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

/* Every element of the output against the reference; rows outside the valid lengths are -inf. */
static void check_case(lse_case *c, const char *label) {
    const lse_desc *d = &c->d;
    const int64_t total = tbuf_numel(&c->lse);
    char *seen = calloc((size_t)total + 1, 1);
    int bad = 0;
    for (int64_t b = 0; b < d->B; b++)
        for (int64_t t = 0; t < c->lq[b]; t++)
            for (int64_t g = 0; g < d->N2; g++) {
                double tol;
                const double want = ref_lse(c, b, t, g, &tol);
                const int64_t i = lse_index(c, b, t, g);
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

static lse_desc base(void) {
    return (lse_desc){.label = "base", .B = 2, .S1 = 5, .S2 = 9, .N1 = 4, .N2 = 1, .D = 16, .dtype = LIG_FLOAT32,
                      .w_dtype = LIG_FLOAT32, .len_dtype = LIG_INT64, .mask_mode = 3, .ratio = 1, .scale = 1};
}

static void run_and_check(const lse_desc *d, uint64_t seed) {
    lse_case c;
    make_case(&c, d, seed);
    char label[160];
    snprintf(label, sizeof label, "%s (%s, %s B=%lld S1=%lld S2=%lld N1=%lld N2=%lld D=%lld mask=%lld r=%lld%s)", d->label,
             d->tnd ? "TND" : "BSND", th_dtype_name(d->dtype), (long long)d->B, (long long)d->S1,
             (long long)d->S2, (long long)d->N1, (long long)d->N2, (long long)d->D, (long long)d->mask_mode,
             (long long)d->ratio, d->residual ? " +res" : "");
    const lig_status st = call_case(&c);
    if (CHECK(st == LIG_SUCCESS, "%s: status %d (%s)", label, (int)st, lig_get_last_error())) check_case(&c, label);
    free_case(&c);
}

LIG_TEST(dense_lse_matrix) {
    const lig_dtype dtypes[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    const int64_t ratios[3] = {1, 4, 128};
    int cases = 0;
    for (int layout = 0; layout < 2; layout++)
        for (int di = 0; di < 3; di++)
            for (int ri = 0; ri < 3; ri++)
                for (int64_t mask = 0; mask <= 3; mask += 3) {
                    lse_desc d = base();
                    d.tnd = layout == 1;
                    d.dtype = dtypes[di];
                    d.w_dtype = (di + ri) % 2 ? LIG_FLOAT32 : d.dtype; /* both weight dtypes for every dtype */
                    d.ratio = ratios[ri];
                    d.mask_mode = mask;
                    d.residual = ratios[ri] > 1 && (ri + (int)mask) % 2 == 1 ? true : ratios[ri] > 1;
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
                    run_and_check(&d, 100 + (uint64_t)cases);
                    cases++;
                }
    th_note("%d cases", cases);
}

/* Shapes at the edges: no key, no row, D = 0 (every score 0: lse = log(n)), one head, many heads. */
LIG_TEST(dense_lse_edges) {
    const struct { const char *label; int64_t B, S1, S2, N1, N2, D; bool tnd; } shapes[] = {
        {"no keys", 2, 3, 0, 2, 1, 8, false}, {"no rows", 2, 0, 4, 2, 1, 8, false}, {"D = 0", 2, 4, 6, 2, 1, 0, false},
        {"one head", 1, 7, 40, 1, 1, 4, false}, {"64 heads", 1, 3, 70, 64, 1, 128, false},
        {"heads per key head 3", 2, 5, 7, 6, 2, 8, true}, {"D = 1", 2, 6, 5, 3, 1, 1, true},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int64_t mask = 0; mask <= 3; mask += 3)
            for (int64_t ratio = 1; ratio <= 4; ratio += 3) {
                lse_desc d = base();
                d.label = shapes[i].label;
                d.B = shapes[i].B; d.S1 = shapes[i].S1; d.S2 = shapes[i].S2;
                d.N1 = shapes[i].N1; d.N2 = shapes[i].N2; d.D = shapes[i].D; d.tnd = shapes[i].tnd;
                d.mask_mode = mask;
                d.ratio = ratio;
                d.residual = ratio > 1;
                run_and_check(&d, 7 + i);
            }
    /* large scores: the running max must keep exp from overflowing */
    lse_desc d = base();
    d.label = "large scores";
    d.scale = 30;
    d.S2 = 300;
    run_and_check(&d, 99);
}

/* Every thread count and run gives the same bits. */
LIG_TEST(dense_lse_threads_bitwise) {
    const lig_dtype dtypes[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    for (int di = 0; di < 3; di++) {
        lse_desc d = base();
        d.label = "threads";
        d.dtype = d.w_dtype = dtypes[di];
        d.B = 3; d.S1 = 24; d.S2 = 300; d.N1 = 32; d.D = 64; d.ratio = 4; d.residual = true; d.lengths = true;
        float *first = NULL;
        int64_t n = 0;
        const int threads[4] = {1, 2, 2, 1};
        for (int run = 0; run < 4; run++) {
            lig_set_num_threads(threads[run]);
            lse_case c;
            make_case(&c, &d, 5);
            const lig_status st = call_case(&c);
            if (CHECK(st == LIG_SUCCESS, "threads %d: %s", threads[run], lig_get_last_error())) {
                n = tbuf_numel(&c.lse);
                if (!first) {
                    first = malloc(sizeof(float) * (size_t)n);
                    for (int64_t i = 0; i < n; i++) first[i] = (float)tbuf_read(&c.lse, i);
                    if (run == 0) check_case(&c, "threads 1");
                } else
                    for (int64_t i = 0; i < n; i++) {
                        const float v = (float)tbuf_read(&c.lse, i);
                        if (memcmp(&v, &first[i], sizeof v) != 0) {
                            CHECK(false, "%s: run %d (%d threads) element %lld: %.9g, first run %.9g",
                                  th_dtype_name(d.dtype), run, threads[run], (long long)i, v, first[i]);
                            break;
                        }
                    }
            }
            free_case(&c);
        }
        free(first);
    }
    lig_set_num_threads(0);
}

/* Where the rule coincides with the forward's (ratio 1, no residual, right-down causal, no band),
 * the lse is the log-sum-exp of the forward's own scores (lig_indexer selecting every key) to
 * within the last rounding: the scores are the forward's, bit for bit. */
LIG_TEST(dense_lse_matches_forward_scores) {
    const lig_dtype dtypes[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    for (int di = 0; di < 3; di++) {
        lse_desc d = base();
        d.dtype = d.w_dtype = dtypes[di];
        d.B = 2; d.S1 = 9; d.S2 = 200; d.N1 = 16; d.D = 32; d.lengths = true;
        lse_case c;
        make_case(&c, &d, 31);
        if (!CHECK(call_case(&c) == LIG_SUCCESS, "lse: %s", lig_get_last_error())) { free_case(&c); continue; }
        const int64_t K = d.S2, vs[4] = {d.B, d.S1, 1, K};
        tbuf idx, val;
        tbuf_make(&idx, LIG_INT64, 4, vs, TC_CONTIGUOUS, TB_OUTPUT_FILL);
        tbuf_make(&val, LIG_FLOAT32, 4, vs, TC_CONTIGUOUS, TB_OUTPUT_FILL);
        uint64_t ws = 0;
        lig_executor *e = NULL;
        lig_status st = lig_indexer_get_workspace_size(c.q.t, c.k.t, c.w.t, c.aq.t, c.ak.t, "BSND", K, 3, INT64_MAX,
                                                       INT64_MAX, idx.t, val.t, &ws, &e);
        void *buf = st == LIG_SUCCESS && ws ? malloc((size_t)ws) : NULL;
        if (st == LIG_SUCCESS) st = lig_indexer(buf, ws, e, NULL);
        free(buf);
        if (CHECK(st == LIG_SUCCESS, "forward: %s", lig_get_last_error())) {
            int bad = 0, rows = 0;
            for (int64_t b = 0; b < d.B; b++)
                for (int64_t t = 0; t < c.lq[b]; t++) {
                    double m = -INFINITY, s = 0;
                    for (int64_t j = 0; j < K; j++) {
                        const double v = tbuf_read(&val, (b * d.S1 + t) * K + j);
                        if (v > m) m = v;
                    }
                    for (int64_t j = 0; j < K; j++) {
                        const double v = tbuf_read(&val, (b * d.S1 + t) * K + j);
                        if (v != -INFINITY) s += exp(v - m);
                    }
                    const double want = s > 0 ? m + log(s) : -INFINITY;
                    const float got = (float)tbuf_read(&c.lse, lse_index(&c, b, t, 0));
                    /* the correctly rounded fp32 of want, or a neighbour when want sits on a tie */
                    const bool ok = isinf(want) ? got == want : fabs((double)got - want) <= 0.5000001 * (nextafterf(fabsf(got), INFINITY) - fabsf(got));
                    if (!ok && bad++ < 3)
                        CHECK(false, "%s: row (%lld,%lld): lse %.9g, from the forward's scores %.12g",
                              th_dtype_name(d.dtype), (long long)b, (long long)t, got, want);
                    rows++;
                }
            CHECK(bad == 0, "%s: %d of %d rows differ from the forward's scores", th_dtype_name(d.dtype), bad, rows);
        }
        tbuf_free(&idx);
        tbuf_free(&val);
        free_case(&c);
    }
}

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
#include "dense_lse_case.h"
#include "tensor_buffers.h"
#include "thread_runs.h"

static lse_desc base(void) {
    return (lse_desc){.label = "base", .B = 2, .S1 = 5, .S2 = 9, .N1 = 4, .N2 = 1, .D = 16, .dtype = LIG_FLOAT32,
                      .w_dtype = LIG_FLOAT32, .len_dtype = LIG_INT64, .mask_mode = 3, .ratio = 1, .scale = 1};
}

static void run_and_check(const lse_desc *d, uint64_t seed) {
    lse_case c;
    lse_case_make(&c, d, seed);
    char label[160];
    snprintf(label, sizeof label, "%s (%s, %s B=%lld S1=%lld S2=%lld N1=%lld N2=%lld D=%lld mask=%lld r=%lld%s)", d->label,
             d->tnd ? "TND" : "BSND", th_dtype_name(d->dtype), (long long)d->B, (long long)d->S1,
             (long long)d->S2, (long long)d->N1, (long long)d->N2, (long long)d->D, (long long)d->mask_mode,
             (long long)d->ratio, d->residual ? " +res" : "");
    const lig_status st = lse_case_call(&c);
    if (CHECK(st == LIG_SUCCESS, "%s: status %d (%s)", label, (int)st, lig_get_last_error())) lse_case_check(&c, label);
    lse_case_free(&c);
}

static void matrix_case(const lse_desc *d, int index, void *ctx) {
    (void)ctx;
    run_and_check(d, 100 + (uint64_t)index);
}

LIG_TEST(dense_lse_matrix) {
    const lse_desc b = base();
    th_note("%d cases", lse_matrix_each(&b, matrix_case, NULL));
}

static void edge_case(const lse_desc *d, int index, void *ctx) {
    (void)ctx;
    run_and_check(d, 7 + (uint64_t)index);
}

/* Shapes at the edges (D = 0: every score 0, lse = log(n)), then large scores. */
LIG_TEST(dense_lse_edges) {
    const lse_desc b = base();
    lse_edges_each(&b, edge_case, NULL);
    /* large scores: the running max must keep exp from overflowing */
    lse_desc d = base();
    d.label = "large scores";
    d.scale = 30;
    d.S2 = 300;
    run_and_check(&d, 99);
}

/* Every thread count and run gives the same bits. */
typedef struct lse_runs {
    lse_desc d;
    lse_case c;
} lse_runs;

static const tbuf *lse_run(void *ctx, bool first) {
    lse_runs *r = ctx;
    lse_case_make(&r->c, &r->d, 5);
    if (!CHECK(lse_case_call(&r->c) == LIG_SUCCESS, "threads: %s", lig_get_last_error())) return NULL;
    if (first) lse_case_check(&r->c, "threads 1");
    return &r->c.lse;
}

static void lse_run_done(void *ctx) { lse_case_free(&((lse_runs *)ctx)->c); }

LIG_TEST(dense_lse_threads_bitwise) {
    const lig_dtype dtypes[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    const int threads[4] = {1, 2, 2, 1};
    for (int di = 0; di < 3; di++) {
        lse_runs r = {.d = base()};
        r.d.label = "threads";
        r.d.dtype = r.d.w_dtype = dtypes[di];
        r.d.B = 3; r.d.S1 = 24; r.d.S2 = 300; r.d.N1 = 32; r.d.D = 64; r.d.ratio = 4; r.d.residual = true;
        r.d.lengths = true;
        th_check_thread_runs(th_dtype_name(r.d.dtype), threads, 4, lse_run, lse_run_done, &r);
    }
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
        lse_case_make(&c, &d, 31);
        if (!CHECK(lse_case_call(&c) == LIG_SUCCESS, "lse: %s", lig_get_last_error())) { lse_case_free(&c); continue; }
        const int64_t K = d.S2, vs[4] = {d.B, d.S1, 1, K};
        tbuf idx, val;
        tbuf_make(&idx, LIG_INT64, 4, vs, TC_CONTIGUOUS, TB_OUTPUT_FILL);
        tbuf_make(&val, LIG_FLOAT32, 4, vs, TC_CONTIGUOUS, TB_OUTPUT_FILL);
        uint64_t ws = 0;
        lig_executor *e = NULL;
        lig_status st = lig_indexer_get_workspace_size(c.q.t, c.k.t, c.w.t, c.len.aq.t, c.len.ak.t, "BSND", K, 3, INT64_MAX,
                                                       INT64_MAX, idx.t, val.t, &ws, &e);
        void *buf = st == LIG_SUCCESS && ws ? malloc((size_t)ws) : NULL;
        if (st == LIG_SUCCESS) st = lig_indexer(buf, ws, e, NULL);
        free(buf);
        if (CHECK(st == LIG_SUCCESS, "forward: %s", lig_get_last_error())) {
            int bad = 0, rows = 0;
            for (int64_t b = 0; b < d.B; b++)
                for (int64_t t = 0; t < c.len.lq[b]; t++) {
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
                    const float got = (float)tbuf_read(&c.lse, lse_case_index(&c, b, t, 0));
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
        lse_case_free(&c);
    }
}

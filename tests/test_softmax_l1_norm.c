/* lig_sparse_flash_mla_softmax_l1_norm (docs/contract.md 2.10) against a float64 reference written
 * here (the main attention's scores, the compressed-key count of contract 4.1 enumerated block by
 * block, the head mean of exp(scale * score - lse)), over layouts, dtypes, strides, lengths, dense
 * with ratios 1/4/128 and residuals and both mask modes, sparse slots with -1, masked entries and
 * duplicates, the short forms, odd shapes; bitwise across thread counts and runs; dense and sparse
 * agree on a key. The suite runs once per kernel set (LIG_ISA). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "float_formats.h"
#include "framework.h"
#include "l1_norm_case.h"
#include "lig.h"
#include "tensor_buffers.h"
#include "thread_runs.h"

static l1n_desc base(void) {
    return (l1n_desc){.label = "base", .B = 2, .S1 = 5, .S2 = 9, .N1 = 4, .D = 16, .dtype = LIG_FLOAT32,
                      .idx_dtype = LIG_INT32, .len_dtype = LIG_INT64, .mask_mode = 3, .ratio = 1, .magnitude = 1,
                      .scale = 0.25};
}

static void run_and_check(const l1n_desc *d, uint64_t seed) {
    l1n_case c;
    l1n_case_make(&c, d, seed);
    char label[200];
    snprintf(label, sizeof label, "%s (%s, %s B=%lld S1=%lld S2=%lld N1=%lld D=%lld K=%lld mask=%lld r=%lld%s%s)",
             d->label, d->tnd ? "TND" : "BSND", th_dtype_name(d->dtype), (long long)d->B, (long long)d->S1,
             (long long)d->S2, (long long)d->N1, (long long)d->D, (long long)d->K, (long long)d->mask_mode,
             (long long)d->ratio, d->residual ? " +res" : "", d->short_form ? " short" : "");
    const lig_status st = l1n_case_call(&c);
    if (CHECK(st == LIG_SUCCESS, "%s: status %d (%s)", label, (int)st, lig_get_last_error())) l1n_case_check(&c, label);
    l1n_case_free(&c);
}

LIG_TEST(l1_norm_matrix) {
    const lig_dtype dtypes[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    const int64_t ratios[3] = {1, 4, 128};
    int cases = 0;
    for (int layout = 0; layout < 2; layout++)
        for (int di = 0; di < 3; di++)
            for (int ri = 0; ri < 3; ri++)
                for (int64_t mask = 0; mask <= 3; mask += 3)
                    for (int sparse = 0; sparse < 2; sparse++) {
                        l1n_desc d = base();
                        d.tnd = layout == 1;
                        d.dtype = dtypes[di];
                        d.ratio = ratios[ri];
                        d.mask_mode = mask;
                        d.residual = ratios[ri] > 1;
                        d.lengths = (di + ri) % 2 == 0;
                        d.len_dtype = ri % 2 ? LIG_INT32 : LIG_INT64;
                        d.idx_dtype = (di + layout) % 2 ? LIG_INT64 : LIG_INT32;
                        d.strides = (tc_strides)((di + ri + layout) % 3 == 0 ? TC_PADDED
                                                 : (di + ri) % 3 == 1   ? TC_PERMUTED
                                                                        : TC_CONTIGUOUS);
                        d.short_form = (di + ri + sparse) % 2 == 1;
                        d.extra_cols = sparse ? 0 : ri;
                        /* ratio 128 needs long original timelines: a few entries of many rows */
                        d.S1 = ratios[ri] == 128 ? 300 : 13;
                        d.S2 = ratios[ri] == 128 ? 5 : 11;
                        d.K = sparse ? 7 : 0;
                        d.N1 = di == 2 ? 16 : 5; /* wide enough for the bf16 products, where a set has them */
                        d.D = di == 0 ? 20 : 32;
                        d.B = layout ? 3 : 2;
                        run_and_check(&d, 300 + (uint64_t)cases);
                        cases++;
                    }
    th_note("%d cases", cases);
}

/* Shapes at the edges: no key, no row, D = 0 (every score 0), one head, many heads, a wide D,
 * blocks longer than the teacher's, K larger than the keys, no heads (every value 0). */
LIG_TEST(l1_norm_edges) {
    const struct { const char *label; int64_t B, S1, S2, N1, D, K; bool tnd; } shapes[] = {
        {"no keys", 2, 3, 0, 2, 8, 0, false},       {"no keys, sparse", 2, 3, 0, 2, 8, 3, false},
        {"no rows", 2, 0, 4, 2, 8, 0, false},       {"D = 0", 2, 4, 6, 3, 0, 0, false},
        {"D = 0, sparse", 2, 4, 6, 3, 0, 5, true},  {"one head", 1, 7, 40, 1, 4, 0, false},
        {"64 heads, D 128", 1, 3, 70, 64, 128, 0, false}, {"odd heads and D", 2, 5, 7, 7, 13, 9, true},
        {"many keys", 1, 4, 300, 3, 5, 0, true},    {"many slots", 1, 4, 90, 3, 5, 200, false},
        {"no heads", 2, 3, 5, 0, 4, 0, false},
        {"no heads, sparse", 2, 3, 5, 0, 4, 3, true},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int64_t mask = 0; mask <= 3; mask += 3)
            for (int64_t ratio = 1; ratio <= 4; ratio += 3) {
                l1n_desc d = base();
                d.label = shapes[i].label;
                d.B = shapes[i].B; d.S1 = shapes[i].S1; d.S2 = shapes[i].S2;
                d.N1 = shapes[i].N1; d.D = shapes[i].D; d.tnd = shapes[i].tnd;
                d.K = shapes[i].K;
                d.mask_mode = mask;
                d.ratio = ratio;
                d.residual = ratio > 1;
                d.lengths = i % 2 == 1;
                run_and_check(&d, 7 + i);
            }
    /* large scores: the lse keeps exp in range, the values stay probabilities */
    l1n_desc d = base();
    d.label = "large scores";
    d.magnitude = 6;
    d.S2 = 300;
    run_and_check(&d, 99);
    d.K = 50;
    run_and_check(&d, 98);
}

/* Every thread count and run gives the same bits, dense and sparse. */
typedef struct l1n_runs {
    l1n_desc d;
    l1n_case c;
} l1n_runs;

static const tbuf *l1n_run(void *ctx, bool first) {
    l1n_runs *r = ctx;
    l1n_case_make(&r->c, &r->d, 5);
    if (!CHECK(l1n_case_call(&r->c) == LIG_SUCCESS, "threads: %s", lig_get_last_error())) return NULL;
    if (first) l1n_case_check(&r->c, "threads, first run");
    return &r->c.out;
}

static void l1n_run_done(void *ctx) { l1n_case_free(&((l1n_runs *)ctx)->c); }

LIG_TEST(l1_norm_threads_bitwise) {
    const lig_dtype dtypes[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    const int threads[4] = {1, 2, 2, 1};
    for (int di = 0; di < 3; di++)
        for (int sparse = 0; sparse < 2; sparse++) {
            l1n_runs r = {.d = base()};
            r.d.label = "threads";
            r.d.dtype = dtypes[di];
            r.d.B = 3; r.d.S1 = 24; r.d.S2 = 300; r.d.N1 = 32; r.d.D = 64; r.d.ratio = 4; r.d.residual = true;
            r.d.lengths = true;
            r.d.K = sparse ? 100 : 0;
            char label[64];
            snprintf(label, sizeof label, "%s %s", th_dtype_name(r.d.dtype), sparse ? "sparse" : "dense");
            th_check_thread_runs(label, threads, 4, l1n_run, l1n_run_done, &r);
        }
}

/* Sparse slots holding entry e give dense column e's value (the same key through the same
 * engine, each key's value independent of its block's other keys). */
LIG_TEST(l1_norm_sparse_matches_dense) {
    const lig_dtype dtypes[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    for (int di = 0; di < 3; di++) {
        l1n_desc d = base();
        d.dtype = dtypes[di];
        d.S1 = 9; d.S2 = 70; d.N1 = 16; d.D = 32; d.ratio = 4; d.residual = true;
        l1n_case dense, sparse;
        l1n_case_make(&dense, &d, 41);
        d.K = 40;
        l1n_case_make(&sparse, &d, 41); /* the same draws up to the slots: same q, k, lse */
        const lig_status a = l1n_case_call(&dense), b = l1n_case_call(&sparse);
        if (CHECK(a == LIG_SUCCESS && b == LIG_SUCCESS, "%s: %s", th_dtype_name(d.dtype), lig_get_last_error())) {
            int bad = 0;
            for (int64_t row = 0; row < d.B * d.S1; row++)
                for (int64_t j = 0; j < d.K; j++) {
                    const int64_t e = tbuf_read_int(&sparse.idx, row * d.K + j);
                    const int64_t bb = row / d.S1, t = row % d.S1;
                    if (e < 0 || e >= l1n_ref_visible(&sparse, bb, t)) continue;
                    const float x = (float)tbuf_read(&sparse.out, row * d.K + j);
                    const float y = (float)tbuf_read(&dense.out, row * dense.W + e);
                    if (memcmp(&x, &y, sizeof x) != 0 && bad++ < 3)
                        CHECK(false, "%s: row %lld slot %lld (entry %lld): sparse %.9g, dense %.9g", th_dtype_name(d.dtype),
                              (long long)row, (long long)j, (long long)e, x, y);
                }
            CHECK(bad == 0, "%s: %d slots differ from the dense column", th_dtype_name(d.dtype), bad);
        }
        l1n_case_free(&dense);
        l1n_case_free(&sparse);
    }
}

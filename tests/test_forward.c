/*
 * The forward (lig_indexer: scores + top-k selection, contract 2.1) against the float64 reference
 * in reference/indexer_fwd_ref.c.
 *
 * Grid data (multiples of 1/8 or 1/4) make fp32 scores exact, so the index lists must equal the
 * reference's exactly -- ties included: tie-heavy cases use non-negative keys with "dead" heads
 * (q <= 0, so the head's ReLU is 0 everywhere), w = 0 heads and duplicated key rows, so many
 * scores are exactly equal (often exactly 0) and the lower key index must win. sparse_values
 * must equal the reference score rounded once to their dtype, -inf in padded slots; rows
 * outside the valid lengths must be -1 / -inf. Every input carries poison where the operator
 * must not look (NaN queries and weights of invalid rows, NaN keys that do not exist, NaN in the
 * gaps of strided views) and every output starts as a sentinel.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backward_checks.h"
#include "case_generators.h"
#include "float_formats.h"
#include "framework.h"
#include "lig.h"
#include "forward_kl_checks.h"
#include "forward_kl_runner.h"
#include "reference/indexer_fwd_ref.h"
#include "backward_runner.h"
#include "suite.h"


/* sparse_values choice cycled by the tests: none, the query dtype, FLOAT32. */
static int values_choice(int v, lig_dtype dtype, lig_dtype *val_dtype)
{
    switch (v % 3) {
    case 0: *val_dtype = dtype; return 0;
    case 1: *val_dtype = dtype; return 1;
    default: *val_dtype = LIG_FLOAT32; return 1;
    }
}

/* Case v of a test seeded at `seed`: its generator (seed + v), the forward's default generator
 * options in o and tc at tc_init's defaults but for its input and index dtypes. */
static th_rng start_case(uint64_t seed, int v, lig_dtype dtype, lig_dtype idx_dtype, fwd_gen_opts *o, tcase *tc)
{
    fwd_gen_opts_default(o);
    tc_init(tc);
    tc->dtype = dtype;
    tc->idx_dtype = idx_dtype;
    return th_rng_make(seed + (uint64_t)v);
}

/* ---- the reference itself ---- */

/*
 * One row, N1 = 2, N2 = 1, D = 2, keys k0 = (1,0), k1 = (0,1), k2 = (1,1), k3 = (1,0) (a copy of
 * k0), k4 = (-1,-1); q_h0 = (1,2), q_h1 = (-1,1), w = (0.5, 2).
 *   q_h0 . k = (1, 2, 3, 1, -3),  q_h1 . k = (-1, 1, 0, -1, 0)
 *   I = 0.5 * ReLU(h0) + 2 * ReLU(h1) = (0.5, 3, 1.5, 0.5, 0)
 * K = 4, no band: keys (1, 2, 0, 3) -- k0 and k3 tie at 0.5, the lower index first; K = 6 adds
 * key 4 (score 0) and one -1. Mode 3, pre_tokens 1 (diag = 4): keys 3..4 only. Mode 0 with
 * pre 0, next 2: keys 0..2.
 */
LIG_TEST(fwd_ref_hand_example)
{
    const double q[4] = {1, 2, -1, 1}, k[10] = {1, 0, 0, 1, 1, 1, 1, 0, -1, -1}, w[2] = {0.5, 2};
    ref_problem p = {.layout = REF_BSND, .B = 1, .S1 = 1, .S2 = 5, .N1 = 2, .N2 = 1, .D = 2, .sparse_mode = 0,
                     .pre_tokens = INT64_MAX, .next_tokens = INT64_MAX};
    int64_t idx[6];
    double val[6];
    struct {
        int64_t K, mode, pre, next;
        int64_t idx[6];
        double val[6];
    } cases[] = {
        {4, 0, INT64_MAX, INT64_MAX, {1, 2, 0, 3}, {3, 1.5, 0.5, 0.5}},
        {6, 0, INT64_MAX, INT64_MAX, {1, 2, 0, 3, 4, -1}, {3, 1.5, 0.5, 0.5, 0, -INFINITY}},
        {4, 3, 1, INT64_MAX, {3, 4, -1, -1}, {0.5, 0, -INFINITY, -INFINITY}},
        {4, 0, 0, 2, {1, 2, 0, -1}, {3, 1.5, 0.5, -INFINITY}},
        {1, 3, INT64_MAX, 0, {1}, {3}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        p.K = cases[c].K;
        p.sparse_mode = cases[c].mode;
        p.pre_tokens = cases[c].pre;
        p.next_tokens = cases[c].next;
        ref_forward(&p, q, k, w, idx, val, NULL);
        for (int64_t j = 0; j < p.K; j++) {
            CHECK(idx[j] == cases[c].idx[j] && val[j] == cases[c].val[j],
                  "case %zu slot %" PRId64 ": got key %" PRId64 " score %g, expected key %" PRId64 " score %g", c, j,
                  idx[j], val[j], cases[c].idx[j], cases[c].val[j]);
        }
    }
    CHECK(ref_fwd_better(1.0, 5, 0.5, 1) && !ref_fwd_better(0.5, 1, 1.0, 5), "higher score first");
    CHECK(ref_fwd_better(0.5, 1, 0.5, 2) && !ref_fwd_better(0.5, 2, 0.5, 1), "ties to the lower index");
    CHECK(ref_fwd_better(-1e300, 9, NAN, 1) && ref_fwd_better(NAN, 1, NAN, 2) && ref_fwd_better(-INFINITY, 1, NAN, 2),
          "NaN ranks as -inf");
}

/* On random problems the reference's selection is consistent with the definition: its values
 * are the scores that ref_forward_slots (indexer_ref.c) computes for the selected keys, the
 * list is in (score desc, key asc) order, and no key left out ranks before the last one kept. */
LIG_TEST(fwd_ref_self_consistency)
{
    int64_t compared = 0, boundary = 0;
    for (int it = 0; it < 60; it++) {
        th_rng r = th_rng_make(4242 + (uint64_t)it);
        tcase tc;
        tc_init(&tc);
        tc.dtype = LIG_FLOAT32;
        tc.p.B = th_rng_range(&r, 1, 3);
        tc.p.N2 = th_rng_range(&r, 1, 2);
        tc.p.N1 = tc.p.N2 * th_rng_range(&r, 1, 3);
        tc.p.D = th_rng_range(&r, 1, 5);
        tc.p.K = th_rng_range(&r, 1, 8);
        tc.p.sparse_mode = it % 2 ? 0 : 3;
        tc.p.pre_tokens = th_rng_chance(&r, 0.5) ? INT64_MAX : th_rng_range(&r, 0, 4);
        tc.p.next_tokens = th_rng_chance(&r, 0.5) ? INT64_MAX : th_rng_range(&r, 0, 4);
        if (it % 3 == 2) {
            gen_tnd(&r, &tc, 6, 9, 1, 1);
        } else {
            tc.p.S1 = th_rng_range(&r, 1, 6);
            tc.p.S2 = th_rng_range(&r, 1, 9);
            tc.has_seq_q = tc.has_seq_k = it % 3 == 1;
            gen_bsnd(&r, &tc);
        }
        fwd_gen_opts o;
        fwd_gen_opts_default(&o);
        o.tie_heavy = it % 2;
        fwd_gen_data(&r, &tc, &o);
        const ref_problem *p = &tc.p;
        const int64_t slots = tc_numel_slots(&tc);
        int64_t *idx = th_xmalloc((size_t)slots * sizeof(int64_t));
        double *val = th_xmalloc((size_t)slots * sizeof(double));
        double *again = th_xmalloc((size_t)slots * sizeof(double));
        ref_fwd_stats st;
        memset(&st, 0, sizeof st);
        ref_forward(p, tc.q, tc.k, tc.w, idx, val, &st);
        ref_forward_slots(p, tc.q, tc.k, tc.w, idx, again);
        boundary += st.boundary_ties;
        for (int64_t row = 0; row < ref_rows_q(p); row++) {
            ref_row info;
            ref_row_info(p, row, &info);
            for (int64_t g = 0; g < p->N2; g++) {
                const int64_t base = (row * p->N2 + g) * p->K;
                int64_t n = 0;
                for (int64_t j = 0; j < p->K; j++) {
                    if (idx[base + j] < 0) {
                        CHECK(val[base + j] == -INFINITY, "case %d: padded slot with value %g", it, val[base + j]);
                        continue;
                    }
                    CHECK(n == j, "case %d: a key after padding", it);
                    n++;
                    CHECK(val[base + j] == again[base + j], "case %d: value %g, ref_forward_slots says %g", it,
                          val[base + j], again[base + j]);
                    CHECK(j == 0 || ref_fwd_better(val[base + j - 1], idx[base + j - 1], val[base + j], idx[base + j]),
                          "case %d: slots %" PRId64 " and %" PRId64 " out of order", it, j - 1, j);
                    compared++;
                }
                if (!info.valid) {
                    CHECK(n == 0, "case %d: invalid row selected keys", it);
                    continue;
                }
                int64_t visible = 0;
                for (int64_t s = 0; s < info.lk; s++) {
                    if (!ref_visible(p->sparse_mode, p->pre_tokens, p->next_tokens, info.t, s, info.lq, info.lk)) {
                        continue;
                    }
                    visible++;
                    int kept = 0;
                    for (int64_t j = 0; j < n; j++) {
                        kept |= idx[base + j] == s;
                    }
                    if (!kept && n > 0) {
                        const double sc = ref_fwd_score(p, tc.q, tc.k, tc.w, row, &info, g, s, NULL);
                        CHECK(!ref_fwd_better(sc, s, val[base + n - 1], idx[base + n - 1]),
                              "case %d: key %" PRId64 " (score %g) left out but ranks before the last kept", it, s, sc);
                    }
                }
                CHECK(n == (visible < p->K ? visible : p->K), "case %d: %" PRId64 " kept of %" PRId64 " visible", it,
                      n, visible);
            }
        }
        void *const results[] = {idx, val, again};
        th_free_all(results, sizeof results / sizeof results[0]);
        tc_free(&tc);
    }
    th_note("%" PRId64 " selected slots checked, %" PRId64 " units with a tie at the k-th score", compared, boundary);
    CHECK(compared > 300 && boundary > 10, "the self-check exercised too little");
}

/* ---- the operator against the reference ---- */

static void matrix_data(th_rng *r, suite_case *sc, int v)
{
    fwd_gen_opts o;
    fwd_gen_opts_default(&o);
    o.tie_heavy = (v / 2) % 2;
    o.grid_den = (v / 7) % 2 ? 4 : 8;
    o.grid_range = o.grid_den == 4 ? 4 : 8;
    fwd_gen_data(r, sc->tc, &o);
    sc->with_values = values_choice(v, sc->tc->dtype, &sc->val_dtype);
}

static void run_matrix(ref_layout layout)
{
    static const int64_t Ks[] = {1, 3, 7, 16, 17, 5, 2, 40};
    const suite_spec s = {.label = "forward matrix", .seed = 31000, .Ks = Ks, .nK = 8, .variants = 3,
                          .data = matrix_data};
    suite_matrix(&suite_forward, &s, layout);
    const fwd_check_stats st = fwd_check_stats_get();
    CHECK(st.exact_cases == st.cases, "every matrix case must be on the exact grid (%" PRId64 " of %" PRId64 ")",
          st.exact_cases, st.cases);
    CHECK(st.boundary_ties > 20 && st.ordered_ties > 100 && st.padded > 100 && st.invalid_slots > 100,
          "the matrix must exercise ties at the k-th score, ordered ties, padding and invalid rows");
}

LIG_TEST(fwd_matrix_bsnd)
{
    run_matrix(REF_BSND);
}

LIG_TEST(fwd_matrix_tnd)
{
    run_matrix(REF_TND);
}

/* Rows built for ties: all heads dead or zero-weighted (every score exactly 0: the first K
 * visible keys by index), duplicated key rows (equal scores at different indices), small grid
 * ranges; K below, at and above the number of visible keys. */
LIG_TEST(fwd_ties)
{
    fwd_check_stats_reset();
    static const int64_t Ks[] = {1, 2, 4, 7, 12, 30};
    for (int v = 0; v < 36; v++) {
        fwd_gen_opts o;
        tcase tc;
        th_rng r = start_case(33000u, v, suite_float_dtypes[v % 3], suite_index_dtypes[(v / 3) % 2], &o, &tc);
        o.tie_heavy = 1;
        o.p_dead_head = v % 3 == 0 ? 1.0 : 0.7; /* every head dead: all scores 0 */
        o.p_zero_w = v % 4 == 1 ? 0.6 : 0.2;
        o.p_dup_key = 0.4;
        tc.p.sparse_mode = suite_modes[v % 2];
        tc.p.N2 = 1 + (v / 2) % 2;
        tc.p.N1 = tc.p.N2 * (1 + v % 4);
        tc.p.D = 1 + v % 6;
        tc.p.K = Ks[v % 6];
        tc.p.B = 2;
        if (v % 4 == 3) {
            tc.p.pre_tokens = 5;
            tc.p.next_tokens = 3;
        }
        gen_layout(&r, &tc, (v / 6) % 2, 14, 20, 2, 1, v % 3 != 2);
        fwd_gen_data(&r, &tc, &o);
        lig_dtype vd;
        const int with_values = values_choice(v + 1, tc.dtype, &vd);
        fwd_check_case(&tc, with_values, vd, "ties");
        tc_free(&tc);
    }
    fwd_check_stats_note("ties");
    const fwd_check_stats s = fwd_check_stats_get();
    CHECK(s.boundary_ties > 100 && s.ordered_ties > 500 && s.zero_selected > 500,
          "too few ties exercised: %" PRId64 " at the k-th score, %" PRId64 " ordered, %" PRId64 " zero scores",
          s.boundary_ties, s.ordered_ties, s.zero_selected);
}

/* Sentinels in the output gaps must survive (suite_strides). */
static void strides_data(th_rng *r, suite_case *sc, int v)
{
    fwd_gen_opts o;
    fwd_gen_opts_default(&o);
    o.poison = sc->tc->in_strides != TC_BROADCAST; /* broadcast would copy poison into valid rows */
    o.tie_heavy = v % 2;
    fwd_gen_data(r, sc->tc, &o);
    sc->with_values = 1;
    sc->val_dtype = v % 2 ? LIG_FLOAT32 : sc->tc->dtype;
}

LIG_TEST(fwd_strides)
{
    const suite_spec s = {.label = "forward strides", .seed = 35000, .s2 = 7, .data = strides_data};
    suite_strides(&suite_forward, &s);
}

static void bands_data(th_rng *r, suite_case *sc, int v)
{
    fwd_gen_opts o;
    fwd_gen_opts_default(&o);
    o.tie_heavy = v % 2;
    fwd_gen_data(r, sc->tc, &o);
    sc->with_values = 1;
    sc->val_dtype = sc->tc->dtype;
}

LIG_TEST(fwd_band_limits)
{
    static const int64_t Ks[] = {1, 2, 3, 4, 5, 6, 7, 8};
    const suite_spec s = {.label = "forward bands", .seed = 37000, .Ks = Ks, .nK = 8, .data = bands_data};
    suite_bands(&suite_forward, &s);
}

/* Continuous data rounded to the dtype: the selection must be the top-k up to the fp32 error
 * bounds of the scores near the k-th one, in non-increasing order, with values within theirs. */
static void continuous_shape(tcase *tc, int v)
{
    const int rep = v % 3;
    tc->p.N1 = tc->p.N2 * (1 + v % 4);
    tc->p.K = 9 + 12 * rep;
    tc->idx_dtype = suite_index_dtypes[rep % 2];
    tc->out_strides = rep == 2 ? TC_PADDED : TC_CONTIGUOUS;
}

static void continuous_data(th_rng *r, suite_case *sc, int v)
{
    fwd_gen_opts o;
    fwd_gen_opts_default(&o);
    o.grid = 0;
    o.p_dup_key = 0.0;
    o.p_zero_w = 0.0;
    fwd_gen_data(r, sc->tc, &o);
    sc->with_values = values_choice(v + 1, sc->tc->dtype, &sc->val_dtype);
}

LIG_TEST(fwd_continuous_data)
{
    const suite_spec s = {.label = "forward continuous", .seed = 39000, .s1 = 30, .s2 = 60,
                          .shape = continuous_shape, .data = continuous_data};
    suite_continuous(&suite_forward, &s);
}

/* K around the key block (48), K far beyond it, K = 1, and K larger than every key length (up to
 * K = 100000 over 50 keys: sparse_count has no upper bound). */
LIG_TEST(fwd_topk_counts)
{
    fwd_check_stats_reset();
    static const int64_t ks[] = {1, 47, 48, 49, 300, 5000, 7000, 100000};
    for (int i = 0; i < 8; i++) {
        fwd_gen_opts o;
        tcase tc;
        th_rng r = start_case(41000u, i, suite_float_dtypes[i % 3], suite_index_dtypes[i % 2], &o, &tc);
        o.tie_heavy = i % 2;
        tc_set_dims(&tc, 1, 2, 1, 8, ks[i]);
        tc.p.S1 = 6;
        tc.p.S2 = i == 7 ? 50 : 6000; /* K = 100000 with 50 keys: output mostly -1, small workspace */
        tc.p.sparse_mode = i % 3 == 2 ? 3 : 0;
        tc.short_form = 1;
        tc.has_seq_k = 1;
        gen_bsnd(&r, &tc);
        tc.seq_k[0] = i == 6 ? 5999 : tc.p.S2;
        fwd_gen_data(&r, &tc, &o);
        char label[32];
        snprintf(label, sizeof label, "K=%" PRId64, ks[i]);
        fwd_check_case(&tc, 1, LIG_FLOAT32, label);
        tc_free(&tc);
    }
    fwd_check_stats_note("top-k counts");
}

/* D = 0, N1 = 0 (with N2 = 1 and 2) and S2 = 0: every visible score is exactly 0, so the first
 * visible keys are selected with value 0 (none when S2 = 0), and the workspace is 0. B = 0 and
 * S1 = 0: nothing to write, workspace 0. */
LIG_TEST(fwd_trivial_cases)
{
    fwd_check_stats_reset();
    int v = 0;
    for (int which = 0; which < 6; which++) {
        for (int layout = 0; layout < 2; layout++) {
            for (int mode = 0; mode < 2; mode++, v++) {
                fwd_gen_opts o;
                tcase tc;
                th_rng r = start_case(43000u, v, suite_float_dtypes[v % 3], suite_index_dtypes[v % 2], &o, &tc);
                tc.p.sparse_mode = suite_modes[mode];
                if (v % 4 == 3) {
                    tc.p.pre_tokens = 2;
                    tc.p.next_tokens = 1;
                }
                tc.p.B = which == 4 ? 0 : 2;
                tc.p.N2 = which == 2 ? 2 : 1;
                tc.p.N1 = (which == 1 || which == 2) ? 0 : 2;
                tc.p.D = which == 0 ? 0 : 3;
                tc.p.K = v % 2 ? 3 : 9;
                int64_t s1 = which == 5 ? 0 : 5, s2 = which == 3 ? 0 : 7;
                if (layout) {
                    gen_tnd(&r, &tc, s1, s2, which == 5 ? 0 : 1, 0);
                    if (which == 3) {
                        CHECK(tc.p.S2 == 0, "T2 must be 0");
                    }
                } else {
                    tc.p.S1 = s1;
                    tc.p.S2 = s2;
                    tc.has_seq_q = tc.has_seq_k = v % 3 == 0;
                    gen_bsnd(&r, &tc);
                }
                fwd_gen_data(&r, &tc, &o);
                char desc[512], label[700];
                tc_describe(&tc, desc, sizeof desc);
                snprintf(label, sizeof label, "trivial case %d [%s]", which, desc);
                op_result res;
                fwd_run(&tc, 1, v % 2 ? LIG_FLOAT32 : tc.dtype, &res);
                if (CHECK(res.st1 == LIG_SUCCESS && res.st2 == LIG_SUCCESS, "%s: failed: %s", label, res.message)) {
                    CHECK(res.workspace_size == 0, "%s: workspace %" PRIu64 ", expected 0", label, res.workspace_size);
                    fwd_check_outputs(&tc, v % 2 ? LIG_FLOAT32 : tc.dtype, res.idx, res.val, label);
                    CHECK(res.gaps_ok, "%s: wrote outside the views", label);
                    /* the rule spelled out: first visible keys, in order, value 0 */
                    const int64_t rows = ref_rows_q(&tc.p);
                    for (int64_t row = 0; row < rows; row++) {
                        ref_row info;
                        ref_row_info(&tc.p, row, &info);
                        if (!info.valid) {
                            continue;
                        }
                        int64_t lo, hi;
                        ref_visible_range(&tc.p, &info, &lo, &hi);
                        for (int64_t g = 0; g < tc.p.N2; g++) {
                            for (int64_t j = 0; j < tc.p.K; j++) {
                                const int64_t at = (row * tc.p.N2 + g) * tc.p.K + j;
                                const int64_t want = lo + j <= hi ? lo + j : -1;
                                CHECK(res.idx[at] == want && res.val[at] == (want < 0 ? -INFINITY : 0.0),
                                      "%s: row %" PRId64 " slot %" PRId64 ": %" PRId64 " / %g, expected %" PRId64,
                                      label, row, j, res.idx[at], res.val[at], want);
                            }
                        }
                    }
                }
                inst_result_free(&res);
                tc_free(&tc);
            }
        }
    }
    fwd_check_stats_note("trivial");
}

/* Rows outside the valid lengths: BSND batches with Lq = 0, Lq < S1, Lk = 0, Lq > Lk under the
 * causal rule (the first rows see nothing); TND with empty batches and rows past the last end.
 * Their outputs (and padded slots) are -1 / -inf over sentinel-filled memory. */
LIG_TEST(fwd_invalid_rows)
{
    fwd_check_stats_reset();
    for (int v = 0; v < 8; v++) {
        fwd_gen_opts o;
        tcase tc;
        th_rng r = start_case(45000u, v, suite_float_dtypes[v % 3], suite_index_dtypes[v % 2], &o, &tc);
        tc.p.sparse_mode = v % 4 < 2 ? 3 : 0;
        tc.p.N2 = 1 + v % 2;
        tc.p.N1 = 2 * tc.p.N2;
        tc.p.D = 5;
        tc.p.K = 4;
        tc.short_form = tc.p.N2 == 1;
        if (v % 2 == 0) {
            tc.p.B = 4;
            tc.p.S1 = 6;
            tc.p.S2 = 5;
            tc.has_seq_q = tc.has_seq_k = 1;
            tc.seq_dtype = v % 4 ? LIG_INT32 : LIG_INT64;
            gen_bsnd(&r, &tc);
            const int64_t lq[4] = {0, 3, 6, 6}, lk[4] = {5, 0, 2, 5};
            for (int b = 0; b < 4; b++) {
                tc.seq_q[b] = lq[b];
                tc.seq_k[b] = lk[b];
            }
        } else {
            tc.p.layout = REF_TND;
            tc.p.B = 4;
            tc.p.S1 = 10;
            tc.p.S2 = 9;
            tc.has_seq_q = tc.has_seq_k = 1;
            tc_alloc(&tc);
            const int64_t eq[4] = {0, 3, 3, 7}, ek[4] = {2, 2, 6, 8};
            for (int b = 0; b < 4; b++) {
                tc.seq_q[b] = eq[b];
                tc.seq_k[b] = ek[b];
            }
        }
        fwd_gen_data(&r, &tc, &o);
        fwd_check_case(&tc, 1, v % 3 ? tc.dtype : LIG_FLOAT32, "invalid rows");
        tc_free(&tc);
    }
    fwd_check_stats_note("invalid rows");
    CHECK(fwd_check_stats_get().invalid_slots >= 100, "too few invalid-row slots checked");
}

/* End to end: the forward's indices, with dy on the grid (NaN in padded slots), fed to
 * lig_indexer_grad give the reference backward (check_case of the backward suite). */
LIG_TEST(fwd_feeds_backward)
{
    fwd_check_stats_reset();
    check_stats_reset();
    for (int v = 0; v < 12; v++) {
        fwd_gen_opts o;
        tcase tc;
        th_rng r = start_case(47000u, v, suite_float_dtypes[v % 3], suite_index_dtypes[(v / 3) % 2], &o, &tc);
        o.tie_heavy = v % 3 == 1;
        tc.dw_dtype = v % 2 ? LIG_FLOAT32 : tc.dtype;
        tc.deterministic = v % 4 != 3;
        tc.p.sparse_mode = v % 2 ? 3 : 0;
        tc.p.pre_tokens = v % 5 == 0 ? 3 : INT64_MAX;
        tc.p.N2 = 1 + v % 2;
        tc.p.N1 = tc.p.N2 * 3;
        tc.p.D = 11;
        tc.p.K = 6;
        tc.p.B = 2;
        tc.short_form = tc.p.N2 == 1 && v % 4 == 0;
        gen_layout(&r, &tc, v % 3 == 2, 12, 16, 2, 1, v % 3 == 1);
        fwd_gen_data(&r, &tc, &o);
        op_result res;
        fwd_run(&tc, 0, tc.dtype, &res);
        if (CHECK(res.st1 == LIG_SUCCESS && res.st2 == LIG_SUCCESS, "case %d: forward failed: %s", v, res.message)) {
            char label[64];
            snprintf(label, sizeof label, "forward -> backward case %d (forward)", v);
            fwd_check_outputs(&tc, tc.dtype, res.idx, NULL, label);
            const int64_t slots = tc_numel_slots(&tc);
            gen_opts go;
            gen_opts_default(&go);
            for (int64_t i = 0; i < slots; i++) {
                tc.idx[i] = res.idx[i];
                tc.dy[i] = res.idx[i] < 0 ? NAN : gen_value(&r, &tc, &go);
            }
            snprintf(label, sizeof label, "forward -> backward case %d (backward)", v);
            check_case(&tc, label);
        }
        inst_result_free(&res);
        tc_free(&tc);
    }
    const check_stats s = check_stats_get();
    th_note("backward on forward indices: %" PRId64 " results, %" PRId64 " counted slots, %" PRId64
            " non-zero gradient elements", s.cases, s.counted_slots, s.nonzero);
    CHECK(s.counted_slots > 500 && s.nonzero > 500, "the end-to-end check exercised too little");
}

/* Output bytes identical for 1, 2 and 3 threads (and repeated runs), on continuous data where a
 * different summation order would show. */
LIG_TEST(fwd_determinism_threads)
{
    static const int threads[] = {1, 2, 3};
    for (int pi = 0; pi < 4; pi++) {
        fwd_gen_opts o;
        tcase tc;
        th_rng r = start_case(49000u, pi, suite_float_dtypes[pi % 3], suite_index_dtypes[pi % 2], &o, &tc);
        o.grid = 0;
        tc.grid = 0;
        tc.p.sparse_mode = 3;
        tc_set_dims(&tc, 2, 4 * (1 + pi % 2), 1 + pi % 2, 40, 24);
        gen_layout(&r, &tc, pi >= 2, 150, 200, 3, 0, pi == 1);
        fwd_gen_data(&r, &tc, &o);
        suite_case sc = {.tc = &tc, .with_values = 1, .val_dtype = pi % 2 ? LIG_FLOAT32 : tc.dtype};
        char label[64];
        snprintf(label, sizeof label, "forward determinism problem %d", pi);
        suite_bitwise_threads(&suite_forward, &sc, threads, 3, 2, label);
        tc_free(&tc);
    }
}

/* Phase 1 only, on broadcast (stride-0) inputs so that long sequences cost no memory: the
 * workspace of a BSND problem [B,S1,N1,D] / [B,S2,N2,D], K = sparse_count, optional key lengths. */
static uint64_t fwd_workspace(int64_t B, int64_t S1, int64_t S2, int64_t N1, int64_t N2, int64_t D, int64_t K,
                              const int64_t *key_lengths)
{
    float one = 0.5f;
    const int64_t qs[4] = {B, S1, N1, D}, ks[4] = {B, S2, N2, D}, ws[3] = {B, S1, N1}, is[4] = {B, S1, N2, K};
    const int64_t z4[4] = {0, 0, 0, 0}, z3[3] = {0, 0, 0};
    lig_tensor *q = lig_create_tensor(&one, LIG_FLOAT32, 4, qs, z4);
    lig_tensor *k = lig_create_tensor(&one, LIG_FLOAT32, 4, ks, z4);
    lig_tensor *w = lig_create_tensor(&one, LIG_FLOAT32, 3, ws, z3);
    int32_t *out = th_xmalloc((size_t)(B * S1 * N2 * K) * sizeof(int32_t));
    lig_tensor *idx = lig_create_tensor(out, LIG_INT32, 4, is, NULL);
    lig_tensor *sk = NULL;
    if (key_lengths != NULL) {
        const int64_t bs[1] = {B};
        sk = lig_create_tensor((void *)key_lengths, LIG_INT64, 1, bs, NULL);
    }
    uint64_t size = UINT64_MAX;
    lig_executor *e = NULL;
    lig_status st = lig_indexer_get_workspace_size(q, k, w, NULL, sk, "BSND", K, 3, INT64_MAX, INT64_MAX, idx, NULL,
                                                   &size, &e);
    CHECK(st == LIG_SUCCESS, "phase 1 failed for S1=%" PRId64 " S2=%" PRId64 " K=%" PRId64 ": %s", S1, S2, K,
          lig_get_last_error());
    lig_destroy_executor(e);
    lig_destroy_tensor(q);
    lig_destroy_tensor(k);
    lig_destroy_tensor(w);
    lig_destroy_tensor(idx);
    lig_destroy_tensor(sk);
    free(out);
    return size;
}

LIG_TEST(fwd_workspace_bounded)
{
    lig_set_num_threads(2);
    const uint64_t a = fwd_workspace(1, 4096, 4096, 8, 1, 64, 64, NULL);
    const uint64_t b = fwd_workspace(1, 16384, 16384, 8, 1, 64, 64, NULL);
    const uint64_t c = fwd_workspace(1, 64, 16384, 8, 1, 64, 64, NULL);
    const uint64_t d = fwd_workspace(1, 16384, 64, 8, 1, 64, 64, NULL);
    const uint64_t e = fwd_workspace(4, 4096, 4096, 8, 1, 64, 64, NULL);
    th_note("K=64: workspace %" PRIu64 " (S=4096), %" PRIu64 " (S=16384), %" PRIu64 " (S1=64, S2=16384), %" PRIu64
            " (S1=16384, S2=64), %" PRIu64 " (B=4)", a, b, c, d, e);
    CHECK(a == b && b == c && c == d && d == e, "the workspace must not grow with S1, S2 or B once min(K, Lk) = K");
    CHECK(b < (uint64_t)16384 * 16384, "the workspace holds something of size S1 x S2 (%" PRIu64 " bytes)", b);
    /* Saturation at the longest key length: K beyond it changes nothing. */
    const uint64_t k32 = fwd_workspace(1, 4096, 32, 8, 1, 64, 32, NULL);
    const uint64_t k64 = fwd_workspace(1, 4096, 32, 8, 1, 64, 64, NULL);
    const uint64_t k5000 = fwd_workspace(1, 4096, 32, 8, 1, 64, 5000, NULL);
    CHECK(k32 == k64 && k64 == k5000, "S2 = 32: workspace %" PRIu64 " (K=32), %" PRIu64 " (K=64), %" PRIu64
          " (K=5000): must saturate at min(K, Lk)", k32, k64, k5000);
    const int64_t lens[2] = {32, 20};
    const uint64_t with_lengths = fwd_workspace(2, 64, 16384, 8, 1, 64, 64, lens);
    CHECK(with_lengths == k32, "key lengths {32, 20} in S2 = 16384: workspace %" PRIu64 ", expected %" PRIu64
          " as for S2 = 32", with_lengths, k32);
    const uint64_t small = fwd_workspace(1, 4096, 16, 8, 1, 64, 64, NULL);
    CHECK(small <= k32, "a shorter key length must not need more workspace (%" PRIu64 " > %" PRIu64 ")", small, k32);
    lig_set_num_threads(0);
}

/* Exact comparison of chosen rows only (the long-sequence tests). */
static int check_rows(const tcase *tc, const int64_t *lib_idx, const double *lib_val, int64_t first, int64_t last,
                      int64_t step, const char *label)
{
    const ref_problem *p = &tc->p;
    int64_t *ri = th_xmalloc((size_t)p->K * sizeof(int64_t));
    double *rv = th_xmalloc((size_t)p->K * sizeof(double));
    ref_fwd_stats st;
    memset(&st, 0, sizeof st);
    int64_t bad = 0, rows = 0;
    for (int64_t row = first; row <= last; row += step, rows++) {
        for (int64_t g = 0; g < p->N2; g++) {
            ref_forward_unit(p, tc->q, tc->k, tc->w, row, g, ri, rv, &st);
            const int64_t base = (row * p->N2 + g) * p->K;
            for (int64_t j = 0; j < p->K; j++) {
                const double wv = ri[j] < 0 ? -INFINITY : th_round_f32(rv[j]);
                if (lib_idx[base + j] != ri[j] || lib_val[base + j] != wv) {
                    if (bad++ < 3) {
                        CHECK(0, "%s: row %" PRId64 " slot %" PRId64 ": %" PRId64 " / %.9g, expected %" PRId64
                              " / %.9g", label, row, j, lib_idx[base + j], lib_val[base + j], ri[j], wv);
                    }
                }
            }
        }
    }
    th_note("%s: %" PRId64 " rows compared, %" PRId64 " selected, %" PRId64 " ties at the k-th score", label, rows,
            st.selected, st.boundary_ties);
    CHECK(st.max_scale < 32768.0, "%s: data off the exact grid", label);
    free(ri);
    free(rv);
    return bad == 0;
}

/* S1 = S2 = 131072 (16384 with LIG_TEST_QUICK=1), N1 = 2, D = 4, K = 8, causal: (a) every row
 * valid with a 256-key band (pre_tokens = 255), rows sampled; (b) 48 valid query rows aligned
 * to the end of the keys, each scoring ~131K keys, every row compared; rows past the query
 * length must be -1 / -inf. */
LIG_TEST(fwd_long_sequence_128k)
{
    const int64_t S = suite_long_rows();
    for (int part = 0; part < 2; part++) {
        fwd_gen_opts o;
        tcase tc;
        th_rng r = start_case(51000u, part, part ? LIG_FLOAT32 : LIG_BFLOAT16, part ? LIG_INT64 : LIG_INT32, &o, &tc);
        o.grid_range = 3;
        o.p_dup_key = 0.02;
        tc_set_dims(&tc, 1, 2, 1, 4, 8);
        tc.p.S1 = tc.p.S2 = S;
        tc.p.sparse_mode = 3;
        tc.p.pre_tokens = part ? INT64_MAX : 255;
        tc.short_form = 1;
        tc.has_seq_q = part == 1;
        gen_bsnd(&r, &tc);
        if (part == 1) {
            tc.seq_q[0] = 48;
        }
        fwd_gen_data(&r, &tc, &o);
        char label[96];
        snprintf(label, sizeof label, "S1=S2=%" PRId64 " causal, %s", S,
                 part ? "48 query rows over all keys" : "band 256");
        const double t0 = th_now();
        op_result res;
        fwd_run(&tc, 1, LIG_FLOAT32, &res);
        const double t1 = th_now();
        if (CHECK(res.st1 == LIG_SUCCESS && res.st2 == LIG_SUCCESS, "%s: failed: %s", label, res.message)) {
            CHECK(res.gaps_ok, "%s: wrote outside the views", label);
            if (part == 0) {
                check_rows(&tc, res.idx, res.val, 0, 299, 1, label);
                check_rows(&tc, res.idx, res.val, 300, S - 1, 97, label);
                check_rows(&tc, res.idx, res.val, S - 5, S - 1, 1, label);
            } else {
                check_rows(&tc, res.idx, res.val, 0, 47, 1, label);
                int64_t bad = 0;
                for (int64_t i = 48 * tc.p.K; i < S * tc.p.K; i++) {
                    bad += res.idx[i] != -1 || res.val[i] != -INFINITY;
                }
                CHECK(bad == 0, "%s: %" PRId64 " slots of rows past the query length are not -1 / -inf", label, bad);
            }
        }
        th_note("%s: library %.2f s, checks %.2f s", label, t1 - t0, th_now() - t1);
        inst_result_free(&res);
        tc_free(&tc);
    }
}

/* Non-finite inputs in valid rows, under the README's rules: ReLU is a select (x > 0 ? x : 0), so
 * a NaN product (NaN input, or Inf * 0) adds exactly 0; +Inf products give +-Inf scores, w = 0
 * times +Inf gives NaN, and a NaN score ranks as -inf (ties with -inf go to the lower index).
 * Everything else on the grid: the comparison stays exact. */
LIG_TEST(fwd_nonfinite_inputs)
{
    fwd_check_stats_reset();
    static const double specials[3] = {NAN, INFINITY, -INFINITY};
    int64_t nan_scores = 0, inf_scores = 0;
    for (int v = 0; v < 18; v++) {
        fwd_gen_opts o;
        tcase tc;
        th_rng r = start_case(53000u, v, suite_float_dtypes[v % 3], suite_index_dtypes[(v / 3) % 2], &o, &tc);
        o.tie_heavy = v % 2;
        tc.p.sparse_mode = suite_modes[v % 2];
        tc.p.N2 = 1 + v % 2;
        tc.p.N1 = tc.p.N2 * (1 + v % 3);
        tc.p.D = 1 + v % 5;
        tc.p.K = 3 + v % 7;
        tc.p.B = 2;
        gen_layout(&r, &tc, v % 3 == 2, 8, 12, 1, 1, v % 3 == 1);
        fwd_gen_data(&r, &tc, &o);
        const int64_t nq = tc_numel_q(&tc), nk = tc_numel_k(&tc), nw = tc_numel_w(&tc);
        for (int64_t i = 0; i < nk; i++) {
            if (!isnan(tc.k[i]) && th_rng_chance(&r, 0.06)) {
                tc.k[i] = specials[th_rng_range(&r, 0, 2)];
            }
        }
        for (int64_t i = 0; i < nq; i++) {
            if (!isnan(tc.q[i]) && th_rng_chance(&r, 0.03)) {
                tc.q[i] = specials[th_rng_range(&r, 0, 2)];
            }
        }
        for (int64_t i = 0; i < nw; i++) {
            if (!isnan(tc.w[i]) && th_rng_chance(&r, 0.08)) {
                tc.w[i] = th_rng_chance(&r, 0.5) ? 0.0 : specials[th_rng_range(&r, 0, 2)];
            }
        }
        const int64_t slots = tc_numel_slots(&tc);
        int64_t *ri = th_xmalloc((size_t)slots * sizeof(int64_t));
        double *rv = th_xmalloc((size_t)slots * sizeof(double));
        ref_forward(&tc.p, tc.q, tc.k, tc.w, ri, rv, NULL);
        for (int64_t i = 0; i < slots; i++) {
            nan_scores += ri[i] >= 0 && isnan(rv[i]);
            inf_scores += ri[i] >= 0 && isinf(rv[i]);
        }
        free(ri);
        free(rv);
        lig_dtype vd;
        const int with_values = values_choice(v + 1, tc.dtype, &vd);
        fwd_check_case(&tc, with_values, vd, "non-finite inputs");
        tc_free(&tc);
    }
    fwd_check_stats_note("non-finite");
    th_note("%" PRId64 " selected NaN scores, %" PRId64 " selected infinite scores", nan_scores, inf_scores);
    CHECK(nan_scores > 5 && inf_scores > 20, "too few non-finite scores exercised");
    CHECK(fwd_check_stats_get().exact_cases == fwd_check_stats_get().cases, "every case must compare exactly");
}

/* The thread count may change between phase 1 (which sizes per-thread scratch) and phase 2: the
 * result must not change, and phase 2 must stay inside its workspace (ASan watches). */
LIG_TEST(fwd_threads_change_between_phases)
{
    static const int pairs[4][2] = {{1, 1}, {1, 3}, {3, 1}, {2, 5}};
    th_rng r = th_rng_make(55000);
    fwd_gen_opts o;
    fwd_gen_opts_default(&o);
    tcase tc;
    tc_init(&tc);
    tc.dtype = LIG_BFLOAT16;
    tc.p.sparse_mode = 3;
    tc_set_dims(&tc, 2, 6, 2, 24, 20);
    tc.p.S1 = 80;
    tc.p.S2 = 120;
    tc.has_seq_k = 1;
    gen_bsnd(&r, &tc);
    fwd_gen_data(&r, &tc, &o);
    suite_case sc = {.tc = &tc, .with_values = 1, .val_dtype = LIG_FLOAT32};
    suite_threads_change(&suite_forward, &sc, pairs, 4, 1, "forward");
    tc_free(&tc);
}

/* Forward data (tie-heavy or not) for a generated large case, run with sparse_values of
 * val_dtype through suite_large. */
static void fwd_large_case(th_rng *r, tcase *tc, int tie_heavy, lig_dtype val_dtype, const char *label)
{
    fwd_gen_opts o;
    fwd_gen_opts_default(&o);
    o.tie_heavy = tie_heavy;
    fwd_gen_data(r, tc, &o);
    suite_case sc = {.tc = tc, .with_values = 1, .val_dtype = val_dtype};
    suite_large(&suite_forward, &sc, label);
}

/* B = 1024 (BSND with lengths, TND with empty batches). */
LIG_TEST(fwd_large_batch_1024)
{
    for (int layout = 0; layout < 2; layout++) {
        th_rng r = th_rng_make(57000u + (uint64_t)layout);
        tcase tc;
        gen_batch_1024(&r, &tc, layout);
        tc.short_form = layout;
        fwd_large_case(&r, &tc, layout, LIG_FLOAT16, layout ? "TND B=1024" : "BSND B=1024");
        tc_free(&tc);
    }
}

/* DeepSeek-V3.2's indexer heads (N1 = 64, N2 = 1, D = 128, bf16, causal): the blocked SIMD
 * score path with full-width heads, exact on the grid; K = 32 in BSND and TND, K = 2048 over a
 * 2100-key sequence. */
LIG_TEST(fwd_deepseek_shape)
{
    for (int c = 0; c < 3; c++) {
        th_rng r = th_rng_make(59000u + (uint64_t)c);
        tcase tc;
        gen_deepseek_heads(&tc);
        tc.p.K = c == 2 ? 2048 : 32;
        tc.p.sparse_mode = c == 2 ? 0 : 3;
        if (c == 0) {
            tc.p.B = 1;
            tc.p.S1 = tc.p.S2 = 128;
            gen_bsnd(&r, &tc);
        } else if (c == 1) {
            tc.p.B = 2;
            gen_tnd(&r, &tc, 64, 96, 3, 0);
        } else {
            tc.p.B = 1;
            tc.p.S1 = 3;
            tc.p.S2 = 2100;
            gen_bsnd(&r, &tc);
        }
        fwd_large_case(&r, &tc, c == 1, c == 1 ? LIG_FLOAT32 : LIG_BFLOAT16, "N1=64 D=128");
        CHECK(fwd_check_stats_get().exact_cases == 1, "the DeepSeek-shaped cases must compare exactly");
        tc_free(&tc);
    }
}

/* As fwd_nonfinite_inputs, with head groups of G = 8, 9, 16 and 17 (the vectorized head sum's
 * full-width and remainder paths) and non-finite weights on heads whose product is <= 0: such a
 * head is gated off and adds exactly 0 (README: "ReLU is s > 0 ? s : 0 ... like the backward's
 * gate", a select, not a multiplication by 0 that would turn an infinite weight into NaN). The
 * result must not depend on the kernel set (LIG_ISA). */
LIG_TEST(fwd_nonfinite_weights_wide_groups)
{
    fwd_check_stats_reset();
    static const int64_t Gs[4] = {8, 9, 16, 17};
    static const double specials[3] = {NAN, INFINITY, -INFINITY};
    int64_t gated_nonfinite = 0;
    for (int v = 0; v < 12; v++) {
        fwd_gen_opts o;
        tcase tc;
        th_rng r = start_case(61000u, v, suite_float_dtypes[v % 3], LIG_INT32, &o, &tc);
        o.tie_heavy = 1; /* keys >= 0 and dead heads: many heads gated off everywhere */
        o.p_dead_head = 0.5;
        tc.p.sparse_mode = suite_modes[v % 2];
        tc.p.N2 = 1 + (v / 4) % 2;
        tc.p.N1 = tc.p.N2 * Gs[v % 4];
        tc.p.D = 3;
        tc.p.K = 4;
        tc.p.B = 2;
        tc.p.S1 = 6;
        tc.p.S2 = 9;
        gen_bsnd(&r, &tc);
        fwd_gen_data(&r, &tc, &o);
        const int64_t G = tc.p.N1 / tc.p.N2;
        /* a non-finite weight on heads that are dead (q <= 0 against keys >= 0: gated off for every key) */
        for (int64_t row = 0; row < ref_rows_q(&tc.p); row++) {
            for (int64_t h = 0; h < tc.p.N1; h++) {
                int dead = 1;
                for (int64_t d = 0; d < tc.p.D; d++) {
                    dead &= tc.q[(row * tc.p.N1 + h) * tc.p.D + d] <= 0.0;
                }
                if (dead && th_rng_chance(&r, 0.5)) {
                    tc.w[row * tc.p.N1 + h] = specials[th_rng_range(&r, 0, 2)];
                    gated_nonfinite++;
                }
            }
        }
        char label[64];
        snprintf(label, sizeof label, "non-finite weights on gated heads, G=%" PRId64, G);
        fwd_check_case(&tc, 1, LIG_FLOAT32, label);
        tc_free(&tc);
    }
    fwd_check_stats_note("wide groups");
    th_note("%" PRId64 " non-finite weights on gated-off heads", gated_nonfinite);
    CHECK(gated_nonfinite > 50, "too few gated non-finite weights");
}

/*
 * Self-checks of the float64 reference (tests/reference): the visibility and counting rules on
 * hand-made cases, a hand-computed backward, and the backward against central finite
 * differences of L = sum over counted slots of dy * I.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_generators.h"
#include "framework.h"
#include "reference/indexer_ref.h"
#include "rng.h"
#include "problem_case.h"

LIG_TEST(ref_visibility_rules)
{
    const int64_t M = INT64_MAX;
    /* mode, pre, next, t, s, Lq, Lk, expected */
    static const int64_t cases[][8] = {
        {0, INT64_MAX, INT64_MAX, 0, 100, 1, 101, 1}, /* no band: everything */
        {0, INT64_MAX, INT64_MAX, 100, 0, 101, 101, 1},
        {0, 0, 0, 5, 5, 10, 10, 1},                   /* band of width 1 */
        {0, 0, 0, 5, 4, 10, 10, 0},
        {0, 0, 0, 5, 6, 10, 10, 0},
        {0, 2, 1, 5, 3, 10, 10, 1},                   /* t - pre <= s */
        {0, 2, 1, 5, 2, 10, 10, 0},
        {0, 2, 1, 5, 6, 10, 10, 1},                   /* s <= t + next */
        {0, 2, 1, 5, 7, 10, 10, 0},
        {0, 0, INT64_MAX, 3, 1000000, 4, 2000000, 1}, /* next = max must not overflow t + next */
        {0, INT64_MAX, 0, 1000000, 0, 2000000, 4, 1}, /* pre = max must not overflow t - pre */
        {3, INT64_MAX, 0, 0, 0, 1, 1, 1},             /* causal, square */
        {3, INT64_MAX, 0, 2, 2, 4, 4, 1},
        {3, INT64_MAX, 0, 2, 3, 4, 4, 0},
        {3, INT64_MAX, 0, 0, 4, 2, 6, 1},             /* Lk > Lq: row 0 sees keys 0..4 */
        {3, INT64_MAX, 0, 0, 5, 2, 6, 0},
        {3, INT64_MAX, 0, 1, 5, 2, 6, 1},
        {3, INT64_MAX, 0, 0, 0, 4, 2, 0},             /* Lq > Lk: the first rows see nothing */
        {3, INT64_MAX, 0, 2, 0, 4, 2, 1},
        {3, 1, 0, 3, 3, 4, 4, 1},                     /* causal with pre band: diag-1..diag */
        {3, 1, 0, 3, 2, 4, 4, 1},
        {3, 1, 0, 3, 1, 4, 4, 0},
        {3, 0, 123, 3, 3, 4, 4, 1},                   /* next_tokens does not apply to mode 3 */
        {3, 0, 123, 2, 3, 4, 4, 0},
        {3, M, M, 1, 2, 4, 4, 0},
        {1, M, M, 0, 0, 1, 1, 0},                     /* other modes: nothing */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int64_t *c = cases[i];
        int got = ref_visible(c[0], c[1], c[2], c[3], c[4], c[5], c[6]);
        CHECK(got == (int)c[7], "case %zu: mode %" PRId64 " t=%" PRId64 " s=%" PRId64 ": got %d", i, c[0], c[3],
              c[4], got);
    }
}

LIG_TEST(ref_visible_range_matches_pointwise)
{
    th_rng r = th_rng_make(11);
    static const int64_t bands[] = {0, 1, 2, 3, 7, INT64_MAX - 1, INT64_MAX};
    int bad = 0;
    for (int it = 0; it < 3000; it++) {
        ref_problem p;
        memset(&p, 0, sizeof p);
        p.layout = REF_BSND;
        p.sparse_mode = th_rng_chance(&r, 0.5) ? 0 : 3;
        p.pre_tokens = bands[th_rng_range(&r, 0, 6)];
        p.next_tokens = bands[th_rng_range(&r, 0, 6)];
        ref_row row;
        memset(&row, 0, sizeof row);
        row.valid = 1;
        row.lq = th_rng_range(&r, 1, 9);
        row.lk = th_rng_range(&r, 0, 9);
        row.t = th_rng_range(&r, 0, row.lq - 1);
        int64_t lo, hi;
        ref_visible_range(&p, &row, &lo, &hi);
        for (int64_t s = 0; s < row.lk; s++) {
            int in_range = s >= lo && s <= hi;
            if (in_range != ref_visible(p.sparse_mode, p.pre_tokens, p.next_tokens, row.t, s, row.lq, row.lk)) {
                bad++;
            }
        }
        if (lo <= hi && (lo < 0 || hi >= row.lk)) {
            bad++;
        }
    }
    CHECK(bad == 0, "%d disagreements between the visible range and pointwise visibility", bad);
}

LIG_TEST(ref_row_info_tnd)
{
    /* Query ends [2,2,5] in T1 = 7: batch 0 rows 0-1, batch 1 empty, batch 2 rows 2-4, rows 5-6
     * past the end. Key ends [3,4,4]: batch 0 keys 0-2, batch 1 key 3, batch 2 none. */
    static const int64_t aq[] = {2, 2, 5}, ak[] = {3, 4, 4};
    ref_problem p = {.layout = REF_TND, .B = 3, .S1 = 7, .S2 = 6, .seq_q = aq, .seq_k = ak};
    CHECK(ref_seq_ok(&p, NULL, 0), "well-formed ends rejected");
    /* row: valid, b, t, lq, lk, key_base */
    static const int64_t want[7][6] = {
        {1, 0, 0, 2, 3, 0}, {1, 0, 1, 2, 3, 0}, {1, 2, 0, 3, 0, 4}, {1, 2, 1, 3, 0, 4},
        {1, 2, 2, 3, 0, 4}, {0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0},
    };
    for (int64_t i = 0; i < 7; i++) {
        ref_row row;
        ref_row_info(&p, i, &row);
        CHECK(row.valid == want[i][0], "row %" PRId64 " valid %d", i, row.valid);
        if (row.valid && want[i][0]) {
            CHECK(row.b == want[i][1] && row.t == want[i][2] && row.lq == want[i][3] && row.lk == want[i][4] &&
                      row.key_base == want[i][5],
                  "row %" PRId64 ": b=%" PRId64 " t=%" PRId64 " lq=%" PRId64 " lk=%" PRId64 " base=%" PRId64, i,
                  row.b, row.t, row.lq, row.lk, row.key_base);
        }
    }
    /* Batch 2 has no keys: any index >= 0 is out of range there, -1 is padding. */
    ref_row row;
    ref_row_info(&p, 3, &row);
    CHECK(ref_classify(&p, &row, 0) == REF_SLOT_BAD_INDEX, "index 0 with no keys must be an error");
    CHECK(ref_classify(&p, &row, -1) == REF_SLOT_PADDING, "-1 is padding");
    ref_row_info(&p, 6, &row);
    CHECK(ref_classify(&p, &row, -77) == REF_SLOT_ROW_INVALID, "rows past the end are not read");
}

LIG_TEST(ref_seq_ok_rules)
{
    ref_problem p = {.layout = REF_TND, .B = 2, .S1 = 5, .S2 = 5};
    int64_t q[2] = {2, 5}, k[2] = {0, 5};
    p.seq_q = q;
    p.seq_k = k;
    CHECK(ref_seq_ok(&p, NULL, 0), "valid TND ends");
    q[1] = 1;
    CHECK(!ref_seq_ok(&p, NULL, 0), "decreasing ends");
    q[1] = 6;
    CHECK(!ref_seq_ok(&p, NULL, 0), "end above T1");
    q[0] = -1;
    q[1] = 2;
    CHECK(!ref_seq_ok(&p, NULL, 0), "negative first end");
    q[0] = 2;
    p.seq_k = NULL;
    CHECK(!ref_seq_ok(&p, NULL, 0), "TND needs both arrays");
    p.layout = REF_BSND;
    CHECK(ref_seq_ok(&p, NULL, 0), "BSND arrays are optional");
    q[0] = 5;
    q[1] = 0;
    CHECK(ref_seq_ok(&p, NULL, 0), "BSND lengths need not be monotonic");
    q[1] = 6;
    CHECK(!ref_seq_ok(&p, NULL, 0), "BSND length above S1");
}

/*
 * One row, N1 = 2, N2 = 1, D = 2, keys k0 = (1,0), k1 = (0,1), k2 = (1,1), q_h0 = (1,2),
 * q_h1 = (-1,1), w = (0.5, 2), idx = (2, 0, -1, 2), dy = (1, 3, NaN, 2).
 * S_h0 = (3, 1, -, 3), S_h1 = (0, -1, -, 0): head 1 never passes the strict ReLU.
 *   dW = (3*1 + 1*3 + 3*2, 0) = (12, 0)
 *   A_h0 = (0.5, 1.5, -, 1): dQ_h0 = 0.5*k2 + 1.5*k0 + 1*k2 = (3, 1.5), dQ_h1 = 0
 *   dK0 = 1.5*q_h0 = (1.5, 3), dK1 = 0, dK2 = (0.5 + 1)*q_h0 = (1.5, 3)
 *   I at slots = (1.5, 0.5, -, 1.5): L = 1.5 + 1.5 + 3 = 6.
 * With mode 3 and pre_tokens = 1, key 0 is masked: dW_h0 = 9, dQ_h0 = (1.5, 1.5), dK0 = 0.
 */
LIG_TEST(ref_hand_example)
{
    const double q[4] = {1, 2, -1, 1}, k[6] = {1, 0, 0, 1, 1, 1}, w[2] = {0.5, 2};
    const int64_t idx[4] = {2, 0, -1, 2};
    const double dy[4] = {1, 3, NAN, 2};
    ref_problem p = {.layout = REF_BSND, .B = 1, .S1 = 1, .S2 = 3, .N1 = 2, .N2 = 1, .D = 2, .K = 4,
                     .sparse_mode = 0, .pre_tokens = INT64_MAX, .next_tokens = INT64_MAX};
    double dq[4], dk[6], dw[2], dq_abs[4], dk_abs[6], dw_abs[2];
    int64_t dq_terms[4], dk_terms[6], dw_terms[2];
    ref_grads g = {dq, dk, dw, dq_abs, dk_abs, dw_abs};
    const ref_grad_terms terms = {dq_terms, dk_terms, dw_terms};
    ref_backward_counted(&p, q, k, w, idx, dy, &g, &terms);
    const double want_dq[4] = {3, 1.5, 0, 0}, want_dk[6] = {1.5, 3, 0, 0, 1.5, 3}, want_dw[2] = {12, 0};
    CHECK(memcmp(dq, want_dq, sizeof dq) == 0, "dQ = (%g,%g,%g,%g)", dq[0], dq[1], dq[2], dq[3]);
    CHECK(memcmp(dk, want_dk, sizeof dk) == 0, "dK = (%g,%g,%g,%g,%g,%g)", dk[0], dk[1], dk[2], dk[3], dk[4],
          dk[5]);
    CHECK(memcmp(dw, want_dw, sizeof dw) == 0, "dW = (%g,%g)", dw[0], dw[1]);
    /* Nothing cancels here, so every abs sum is the |value|; k0's second component makes one
     * term of dQ_h0[1] an exact 0 that still counts as a term. dW_h0 sums |q_d k_d| * |dy|:
     * (1 + 2) * 1 + 1 * 3 + (1 + 2) * 2. */
    const double want_dq_abs[4] = {3, 1.5, 0, 0}, want_dk_abs[6] = {1.5, 3, 0, 0, 1.5, 3}, want_dw_abs[2] = {12, 0};
    const int64_t want_dq_terms[4] = {3, 3, 0, 0}, want_dk_terms[6] = {1, 1, 0, 0, 2, 2}, want_dw_terms[2] = {3, 0};
    CHECK(memcmp(dq_abs, want_dq_abs, sizeof dq_abs) == 0 && memcmp(dk_abs, want_dk_abs, sizeof dk_abs) == 0 &&
              memcmp(dw_abs, want_dw_abs, sizeof dw_abs) == 0,
          "abs sums: dQ_h0 (%g,%g), dK2 (%g,%g), dW (%g,%g)", dq_abs[0], dq_abs[1], dk_abs[4], dk_abs[5], dw_abs[0],
          dw_abs[1]);
    CHECK(memcmp(dq_terms, want_dq_terms, sizeof dq_terms) == 0 &&
              memcmp(dk_terms, want_dk_terms, sizeof dk_terms) == 0 &&
              memcmp(dw_terms, want_dw_terms, sizeof dw_terms) == 0,
          "term counts: dQ_h0 (%" PRId64 ",%" PRId64 "), dK (%" PRId64 ",%" PRId64 ",%" PRId64 "), dW (%" PRId64
          ",%" PRId64 ")",
          dq_terms[0], dq_terms[1], dk_terms[0], dk_terms[2], dk_terms[4], dw_terms[0], dw_terms[1]);
    CHECK(ref_loss(&p, q, k, w, idx, dy) == 6.0, "L = %g", ref_loss(&p, q, k, w, idx, dy));

    p.sparse_mode = 3;
    p.pre_tokens = 1;
    ref_backward(&p, q, k, w, idx, dy, &g);
    CHECK(dw[0] == 9.0 && dw[1] == 0.0, "masked: dW = (%g,%g)", dw[0], dw[1]);
    CHECK(dq[0] == 1.5 && dq[1] == 1.5, "masked: dQ_h0 = (%g,%g)", dq[0], dq[1]);
    CHECK(dk[0] == 0.0 && dk[1] == 0.0 && dk[4] == 1.5 && dk[5] == 3.0, "masked: dK");
}

/* Central differences of L in every input element. L is linear in each single element while no
 * ReLU switches (|S| >= 0.05 is enforced and the step is 1e-4), so the agreement must be tight. */
static int fd_check(tcase *tc, const char *what)
{
    const double h = 1e-4;
    const int64_t nq = tc_numel_q(tc), nk = tc_numel_k(tc), nw = tc_numel_w(tc);
    ref_grads g;
    g.dq = th_xmalloc((size_t)nq * sizeof(double));
    g.dk = th_xmalloc((size_t)nk * sizeof(double));
    g.dw = th_xmalloc((size_t)nw * sizeof(double));
    g.dq_abs = g.dk_abs = g.dw_abs = NULL;
    ref_backward(&tc->p, tc->q, tc->k, tc->w, tc->idx, tc->dy, &g);
    double *arrays[3] = {tc->q, tc->k, tc->w};
    double *grads[3] = {g.dq, g.dk, g.dw};
    const int64_t sizes[3] = {nq, nk, nw};
    const char *names[3] = {"dQ", "dK", "dW"};
    int bad = 0;
    for (int a = 0; a < 3; a++) {
        for (int64_t i = 0; i < sizes[a]; i++) {
            double x = arrays[a][i];
            if (isnan(x)) {
                CHECK(grads[a][i] == 0.0, "%s: %s[%" PRId64 "] of a poisoned element is %g", what, names[a], i,
                      grads[a][i]);
                continue;
            }
            arrays[a][i] = x + h;
            double lp = ref_loss(&tc->p, tc->q, tc->k, tc->w, tc->idx, tc->dy);
            arrays[a][i] = x - h;
            double lm = ref_loss(&tc->p, tc->q, tc->k, tc->w, tc->idx, tc->dy);
            arrays[a][i] = x;
            double fd = (lp - lm) / (2 * h);
            if (!(fabs(fd - grads[a][i]) <= 1e-7 * (1.0 + fabs(grads[a][i])))) {
                if (bad++ < 3) {
                    CHECK(0, "%s: %s[%" PRId64 "] analytic %.12g, finite difference %.12g", what, names[a], i,
                          grads[a][i], fd);
                }
            }
        }
    }
    free(g.dq);
    free(g.dk);
    free(g.dw);
    return bad == 0;
}

LIG_TEST(ref_backward_matches_finite_differences)
{
    th_rng r = th_rng_make(2024);
    gen_opts o;
    gen_opts_default(&o);
    o.grid = 0;
    o.min_abs_s = 0.05;
    int checked = 0, nonzero = 0;
    for (int it = 0; it < 40; it++) {
        tcase tc;
        tc_init(&tc);
        tc.dtype = LIG_FLOAT32;
        tc.grid = 0;
        tc.p.B = th_rng_range(&r, 1, 3);
        tc.p.N2 = th_rng_range(&r, 1, 2);
        tc.p.N1 = tc.p.N2 * th_rng_range(&r, 1, 3);
        tc.p.D = th_rng_range(&r, 1, 4);
        tc.p.K = th_rng_range(&r, 1, 5);
        tc.p.sparse_mode = th_rng_chance(&r, 0.5) ? 0 : 3;
        tc.p.pre_tokens = th_rng_chance(&r, 0.5) ? INT64_MAX : th_rng_range(&r, 0, 3);
        tc.p.next_tokens = th_rng_chance(&r, 0.5) ? INT64_MAX : th_rng_range(&r, 0, 3);
        if (it % 3 == 2) {
            gen_tnd(&r, &tc, 4, 5, th_rng_range(&r, 0, 2), th_rng_range(&r, 0, 2));
        } else {
            tc.p.S1 = th_rng_range(&r, 1, 4);
            tc.p.S2 = th_rng_range(&r, 1, 5);
            tc.has_seq_q = tc.has_seq_k = it % 3 == 1;
            gen_bsnd(&r, &tc);
        }
        gen_data(&r, &tc, &o);
        char what[64];
        snprintf(what, sizeof what, "case %d", it);
        checked += fd_check(&tc, what);
        ref_grads g;
        int64_t nw = tc_numel_w(&tc);
        g.dw = th_xmalloc((size_t)nw * sizeof(double));
        g.dq = th_xmalloc((size_t)tc_numel_q(&tc) * sizeof(double));
        g.dk = th_xmalloc((size_t)tc_numel_k(&tc) * sizeof(double));
        g.dq_abs = g.dk_abs = g.dw_abs = NULL;
        ref_backward(&tc.p, tc.q, tc.k, tc.w, tc.idx, tc.dy, &g);
        for (int64_t i = 0; i < nw; i++) {
            nonzero += g.dw[i] != 0.0;
        }
        free(g.dq);
        free(g.dk);
        free(g.dw);
        tc_free(&tc);
    }
    CHECK(checked == 40, "%d of 40 cases agree with finite differences", checked);
    CHECK(nonzero > 50, "the cases must exercise real gradients (only %d non-zero dW)", nonzero);
}

/* The generator must produce what the tests claim: every slot kind, no out-of-range index in a
 * valid row, and only padding/garbage where rows are invalid. */
LIG_TEST(ref_generator_mix)
{
    th_rng r = th_rng_make(5);
    gen_opts o;
    gen_opts_default(&o);
    int64_t kinds[5] = {0, 0, 0, 0, 0};
    int64_t dups = 0;
    for (int it = 0; it < 30; it++) {
        tcase tc;
        tc_init(&tc);
        tc_set_dims(&tc, 2, 2, 1, 3, 6);
        tc.p.S1 = 6;
        tc.p.S2 = 9;
        tc.p.sparse_mode = it % 2 ? 0 : 3;
        tc.p.pre_tokens = it % 4 < 2 ? INT64_MAX : 2;
        tc.p.next_tokens = it % 4 < 2 ? INT64_MAX : 1;
        tc.has_seq_q = tc.has_seq_k = 1;
        gen_bsnd(&r, &tc);
        gen_data(&r, &tc, &o);
        CHECK(ref_find_bad_index(&tc.p, tc.idx) == -1, "generator produced an out-of-range index");
        for (int64_t rr = 0; rr < ref_rows_q(&tc.p); rr++) {
            ref_row row;
            ref_row_info(&tc.p, rr, &row);
            for (int64_t j = 0; j < tc.p.K; j++) {
                int64_t slot = rr * tc.p.K + j;
                ref_slot kind = ref_classify(&tc.p, &row, tc.idx[slot]);
                kinds[kind]++;
                if (kind == REF_SLOT_COUNTED) {
                    CHECK(!isnan(tc.dy[slot]) && !isinf(tc.dy[slot]), "counted slot with poisoned dy");
                    for (int64_t j2 = 0; j2 < j; j2++) {
                        dups += tc.idx[rr * tc.p.K + j2] == tc.idx[slot];
                    }
                }
            }
        }
        tc_free(&tc);
    }
    CHECK(kinds[REF_SLOT_COUNTED] > 100 && kinds[REF_SLOT_PADDING] > 30 && kinds[REF_SLOT_MASKED] > 30 &&
              kinds[REF_SLOT_ROW_INVALID] > 30 && kinds[REF_SLOT_BAD_INDEX] == 0,
          "slot mix: counted %" PRId64 " pad %" PRId64 " masked %" PRId64 " invalid-row %" PRId64 " bad %" PRId64,
          kinds[0], kinds[1], kinds[2], kinds[4], kinds[3]);
    CHECK(dups > 30, "too few duplicate counted indices (%" PRId64 ")", dups);
}

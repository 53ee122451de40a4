/*
 * The fused KL training step (lig_kl_loss_and_dy) against the float64 reference ref_kl:
 *   loss = sum over rows of sum_{counted j, p_j > 0} p_j (log p_j - log softmax(I)_j)
 *   dy   = softmax(I) * sum(p) - p on counted slots, 0 elsewhere
 * with the softmax over the counted slots of each row only. A slot counts when its index is
 * >= 0 (with sparse_indices) or its value is not -inf (without). Uncounted slots carry NaN,
 * +-Inf, huge and negative garbage in values and targets, which must not matter.
 *
 * The chained check runs forward -> KL step -> backward and compares the gradients of q, k, w
 * with central finite differences of the float64 loss through the reference forward, with the
 * selection held fixed.
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


/* ---- the reference itself ---- */

/* v = (0, log 3): softmax (1/4, 3/4).
 *   p = (1/2, 1/2): loss = 1/2 log 2 + 1/2 log(2/3), dy = (-1/4, 1/4)
 *   p = (1, 0):     loss = log 4, dy = (-3/4, 3/4)
 *   p = (2, 0) (mass 2): loss = 2 (log 2 + log 4), dy = (1/2 - 2, 3/2)
 *   slot 1 not counted, p = (0.3, NaN): softmax over slot 0 alone = 1: loss 0.3 log 0.3, dy = (0, 0) */
LIG_TEST(kl_ref_hand_example)
{
    const double v[2] = {0.0, log(3.0)};
    const unsigned char both[2] = {1, 1}, first[2] = {1, 0};
    double dy[2], loss;
    const double p1[2] = {0.5, 0.5}, p2[2] = {1.0, 0.0}, p3[2] = {2.0, 0.0}, p4[2] = {0.3, NAN};
    loss = ref_kl(1, 2, v, both, p1, dy, NULL);
    CHECK(fabs(loss - (0.5 * log(2.0) + 0.5 * log(2.0 / 3.0))) < 1e-15 && fabs(dy[0] + 0.25) < 1e-15 &&
              fabs(dy[1] - 0.25) < 1e-15,
          "p = (1/2, 1/2): loss %.17g dy (%g, %g)", loss, dy[0], dy[1]);
    loss = ref_kl(1, 2, v, both, p2, dy, NULL);
    CHECK(fabs(loss - log(4.0)) < 1e-15 && fabs(dy[0] + 0.75) < 1e-15 && fabs(dy[1] - 0.75) < 1e-15,
          "p = (1, 0): loss %.17g dy (%g, %g)", loss, dy[0], dy[1]);
    loss = ref_kl(1, 2, v, both, p3, dy, NULL);
    CHECK(fabs(loss - 2.0 * (log(2.0) + log(4.0))) < 1e-14 && fabs(dy[0] + 1.5) < 1e-15 && fabs(dy[1] - 1.5) < 1e-15,
          "p = (2, 0): loss %.17g dy (%g, %g)", loss, dy[0], dy[1]);
    loss = ref_kl(1, 2, v, first, p4, dy, NULL);
    CHECK(fabs(loss - 0.3 * log(0.3)) < 1e-15 && dy[0] == 0.0 && dy[1] == 0.0, "one counted slot: loss %.17g dy (%g, %g)",
          loss, dy[0], dy[1]);
    const unsigned char none[2] = {0, 0};
    loss = ref_kl(1, 2, v, none, p4, dy, NULL);
    CHECK(loss == 0.0 && dy[0] == 0.0 && dy[1] == 0.0, "no counted slot: loss %g dy (%g, %g)", loss, dy[0], dy[1]);
}

/* dy is the gradient of the loss in the values: central differences over random rows (counted
 * and uncounted slots, zero targets, unnormalised targets, logits of several sizes). */
LIG_TEST(kl_ref_finite_differences)
{
    th_rng r = th_rng_make(777);
    int64_t compared = 0, bad = 0;
    for (int it = 0; it < 60; it++) {
        klcase kc;
        kl_init(&kc);
        kc.has_indices = it % 2;
        kc.shape[0] = th_rng_range(&r, 1, 4);
        kc.shape[1] = th_rng_range(&r, 1, 9);
        kl_alloc(&kc);
        kl_gen_opts o;
        kl_gen_opts_default(&o);
        o.normalize = it % 3 != 0;
        o.logit_scale = it % 4 == 0 ? 30.0 : 3.0;
        kl_gen_data(&r, &kc, &o);
        const int64_t rows = kl_rows(&kc), K = kl_K(&kc), n = rows * K;
        unsigned char *c = th_xmalloc((size_t)n);
        double *dy = th_xmalloc((size_t)n * sizeof(double));
        for (int64_t i = 0; i < n; i++) {
            c[i] = (unsigned char)kl_counted(&kc, i);
        }
        ref_kl(rows, K, kc.values, c, kc.target, dy, NULL);
        for (int64_t i = 0; i < n; i++) {
            if (!c[i]) {
                CHECK(dy[i] == 0.0, "case %d: uncounted slot %" PRId64 " has dy %g", it, i, dy[i]);
                continue;
            }
            const double h = 1e-5, x = kc.values[i];
            kc.values[i] = x + h;
            const double lp = ref_kl(rows, K, kc.values, c, kc.target, NULL, NULL);
            kc.values[i] = x - h;
            const double lm = ref_kl(rows, K, kc.values, c, kc.target, NULL, NULL);
            kc.values[i] = x;
            const double fd = (lp - lm) / (2 * h);
            compared++;
            if (!(fabs(fd - dy[i]) <= 1e-6 * (1.0 + fabs(dy[i])))) {
                if (bad++ < 3) {
                    CHECK(0, "case %d slot %" PRId64 ": dy %.12g, finite difference %.12g", it, i, dy[i], fd);
                }
            }
        }
        free(c);
        free(dy);
        kl_free(&kc);
    }
    th_note("%" PRId64 " counted slots compared with finite differences", compared);
    CHECK(bad == 0 && compared > 500, "%" PRId64 " disagreements in %" PRId64 " slots", bad, compared);
}

/* ---- the operator against the reference ---- */

static void shape_for(th_rng *r, klcase *kc, int rank)
{
    static const int64_t Ks[] = {1, 2, 5, 16, 33, 64, 3, 7};
    kc->ndim = rank;
    for (int i = 0; i + 1 < rank; i++) {
        kc->shape[i] = th_rng_range(r, 1, 5);
    }
    kc->shape[rank - 1] = Ks[th_rng_range(r, 0, 7)];
}

/* Ranks 1..4, with and without sparse_indices, every (values, target, dy) dtype triple, index
 * dtypes, loss shapes [], [1], [1,1], strided views. */
LIG_TEST(kl_matrix)
{
    static const tc_strides ins[] = {TC_CONTIGUOUS, TC_PADDED, TC_EXPLICIT, TC_PERMUTED};
    static const tc_strides outs[] = {TC_CONTIGUOUS, TC_PERMUTED, TC_PADDED, TC_EXPLICIT};
    int v = 0, ok = 0;
    for (int vi = 0; vi < 3; vi++) {
        for (int ti = 0; ti < 3; ti++) {
            for (int di = 0; di < 3; di++) {
                for (int with_idx = 0; with_idx < 2; with_idx++) {
                    for (int rank = 1; rank <= 4; rank++, v++) {
                        th_rng r = th_rng_make(61000u + (uint64_t)v);
                        klcase kc;
                        kl_init(&kc);
                        kc.v_dtype = suite_float_dtypes[vi];
                        kc.t_dtype = suite_float_dtypes[ti];
                        kc.dy_dtype = suite_float_dtypes[di];
                        kc.has_indices = with_idx;
                        kc.idx_dtype = v % 3 ? LIG_INT32 : LIG_INT64;
                        kc.loss_ndim = v % 3;
                        kc.in_strides = ins[v % 4];
                        kc.out_strides = outs[(v / 4) % 4];
                        shape_for(&r, &kc, rank);
                        kl_alloc(&kc);
                        kl_gen_opts o;
                        kl_gen_opts_default(&o);
                        o.normalize = v % 5 != 0;
                        kl_gen_data(&r, &kc, &o);
                        ok += kl_check_case(&kc, "KL matrix");
                        kl_free(&kc);
                    }
                }
            }
        }
    }
    th_note("%d of %d cases matched", ok, v);
}

/* Every input stride pattern against every output pattern; innermost stride 2 and broadcast
 * inputs may be refused (a clean PARAM_INVALID from phase 1), never answered wrongly. */
LIG_TEST(kl_strides)
{
    static const tc_strides outs[] = {TC_CONTIGUOUS, TC_EXPLICIT, TC_PADDED, TC_PERMUTED};
    int refused = 0, v = 0;
    for (int in = 0; in < TC_STRIDE_KINDS; in++) {
        for (int out = 0; out < 4; out++, v++) {
            th_rng r = th_rng_make(63000u + (uint64_t)v);
            klcase kc;
            kl_init(&kc);
            kc.v_dtype = suite_float_dtypes[v % 3];
            kc.t_dtype = suite_float_dtypes[(v + 1) % 3];
            kc.dy_dtype = suite_float_dtypes[(v + 2) % 3];
            kc.has_indices = v % 2;
            kc.in_strides = (tc_strides)in;
            kc.out_strides = outs[out];
            kc.loss_ndim = v % 3;
            shape_for(&r, &kc, 2 + v % 3);
            kl_alloc(&kc);
            kl_gen_opts o;
            kl_gen_opts_default(&o);
            kl_gen_data(&r, &kc, &o);
            int was_refused = 0;
            const int may_refuse = in == TC_INNER_STRIDED || in == TC_BROADCAST;
            suite_case sc = {.kc = &kc};
            suite_check(&suite_kl, &sc, "KL strides", may_refuse ? &was_refused : NULL);
            refused += was_refused;
            kl_free(&kc);
        }
    }
    th_note("%d of 8 innermost-stride-2 / broadcast cases refused", refused);
}

/* Hand-made rows: no counted slot (loss 0, dy 0), all targets 0 (loss 0, dy 0), one counted
 * slot (softmax 1: dy 0, loss p log p), unnormalised mass, zeros among the targets, and NaN /
 * +-Inf / negative values and targets in the slots that do not count. */
LIG_TEST(kl_special_rows)
{
    for (int with_idx = 0; with_idx < 2; with_idx++) {
        klcase kc;
        kl_init(&kc);
        kc.has_indices = with_idx;
        kc.shape[0] = 6;
        kc.shape[1] = 4;
        kl_alloc(&kc);
        const double P = -INFINITY; /* padding value without indices */
        const double rows_v[6][4] = {{P, P, P, P}, {1, 2, 3, 4}, {P, 0.5, P, P}, {1, -1, 2, 0}, {3, P, 3, P},
                                     {-2, 7, P, 1}};
        const double rows_t[6][4] = {{NAN, -1, INFINITY, 2}, {0, 0, 0, 0}, {-5, 0.25, NAN, -INFINITY},
                                     {0.5, 1.5, 2.0, 0}, {0.2, NAN, 0, -3}, {0.1, 0.2, NAN, 0.7}};
        for (int r = 0; r < 6; r++) {
            for (int j = 0; j < 4; j++) {
                const int64_t i = r * 4 + j;
                kc.values[i] = rows_v[r][j];
                kc.target[i] = rows_t[r][j];
                kc.idx[i] = rows_v[r][j] == P ? (j % 2 ? -1 : -9) : 10 + j;
                if (with_idx && rows_v[r][j] == P) {
                    kc.values[i] = j % 2 ? NAN : INFINITY; /* with indices the value of a pad is garbage */
                }
            }
        }
        op_result res;
        kl_run(&kc, &res);
        if (CHECK(res.st1 == LIG_SUCCESS && res.st2 == LIG_SUCCESS, "special rows (indices %d): %s", with_idx,
                  res.message)) {
            kl_check_outputs(&kc, res.loss, res.dy, with_idx ? "special rows with indices" : "special rows");
            for (int j = 0; j < 4; j++) {
                CHECK(res.dy[0 * 4 + j] == 0.0 && res.dy[1 * 4 + j] == 0.0 && res.dy[2 * 4 + j] == 0.0,
                      "rows without counted slots / without mass / with one slot must get dy = 0");
            }
            CHECK(isfinite(res.loss), "loss %g is not finite", res.loss);
        }
        inst_result_free(&res);
        /* Only rows 0-2: loss exactly 0.25*log(0.25) (rounded to float). */
        kc.shape[0] = 3;
        kl_run(&kc, &res);
        if (CHECK(res.st1 == LIG_SUCCESS && res.st2 == LIG_SUCCESS, "rows 0-2: %s", res.message)) {
            CHECK(res.loss == th_round_f32(0.25 * log(0.25)), "rows 0-2: loss %.9g, expected %.9g", res.loss,
                  th_round_f32(0.25 * log(0.25)));
        }
        inst_result_free(&res);
        kl_free(&kc);
    }
}

/* Large logits: values up to +-1e4 (fp32; bf16 and fp16 within range), softmax must stay
 * finite and exact-ish: one dominant slot per row, others underflow to 0. */
LIG_TEST(kl_large_logits)
{
    static const double scales[] = {1e4, 3000.0, 60000.0};
    for (int v = 0; v < 9; v++) {
        th_rng r = th_rng_make(65000u + (uint64_t)v);
        klcase kc;
        kl_init(&kc);
        kc.v_dtype = suite_float_dtypes[v % 3];
        kc.t_dtype = suite_float_dtypes[(v / 3) % 3];
        kc.dy_dtype = LIG_FLOAT32;
        kc.has_indices = v % 2;
        kl_set_shape(&kc, 3, (const int64_t[]){4, 8, 19});
        kl_alloc(&kc);
        kl_gen_opts o;
        kl_gen_opts_default(&o);
        o.logit_scale = kc.v_dtype == LIG_FLOAT16 ? scales[2] : scales[v % 2];
        kl_gen_data(&r, &kc, &o);
        if (v % 3 == 0) { /* near-equal huge logits: the softmax spreads over several slots */
            for (int64_t i = 0; i < kl_rows(&kc) * kl_K(&kc); i++) {
                if (kl_counted(&kc, i)) {
                    kc.values[i] = th_round_dtype(kc.v_dtype, 1e4 - (double)(i % 3));
                }
            }
        }
        op_result res;
        kl_run(&kc, &res);
        if (CHECK(res.st1 == LIG_SUCCESS && res.st2 == LIG_SUCCESS, "large logits %d: %s", v, res.message)) {
            CHECK(isfinite(res.loss), "large logits %d: loss %g", v, res.loss);
            kl_check_outputs(&kc, res.loss, res.dy, "large logits");
        }
        inst_result_free(&res);
        kl_free(&kc);
    }
}

/* Zero extents: no rows (loss 0, workspace 0), K = 0 (loss 0). */
LIG_TEST(kl_empty)
{
    static const int64_t shapes[3][3] = {{0, 5, 0}, {3, 0, 0}, {2, 0, 4}};
    static const int ranks[3] = {2, 2, 3};
    for (int i = 0; i < 3; i++) {
        klcase kc;
        kl_init(&kc);
        kc.ndim = ranks[i];
        memcpy(kc.shape, shapes[i], sizeof shapes[i]);
        kc.has_indices = i % 2;
        kl_alloc(&kc);
        op_result res;
        kl_run(&kc, &res);
        if (CHECK(res.st1 == LIG_SUCCESS && res.st2 == LIG_SUCCESS, "empty %d: %s", i, res.message)) {
            CHECK(res.loss == 0.0, "empty %d: loss %g", i, res.loss);
            CHECK(kl_rows(&kc) > 0 || res.workspace_size == 0, "empty %d: workspace %" PRIu64, i, res.workspace_size);
            CHECK(res.gaps_ok, "empty %d: wrote outside the views", i);
        }
        inst_result_free(&res);
        kl_free(&kc);
    }
}

/* The loss and dy bytes are identical for 1, 2, 3 and 5 threads (per-row terms in double, summed
 * in row order). */
LIG_TEST(kl_determinism_threads)
{
    static const int threads[] = {1, 2, 3, 5};
    for (int pi = 0; pi < 3; pi++) {
        th_rng r = th_rng_make(67000u + (uint64_t)pi);
        klcase kc;
        kl_init(&kc);
        kc.v_dtype = suite_float_dtypes[pi];
        kc.t_dtype = LIG_FLOAT32;
        kc.dy_dtype = suite_float_dtypes[(pi + 1) % 3];
        kc.has_indices = pi != 1;
        kl_set_shape(&kc, 3, (const int64_t[]){8, 250, 37});
        kl_alloc(&kc);
        kl_gen_opts o;
        kl_gen_opts_default(&o);
        o.normalize = pi != 2;
        kl_gen_data(&r, &kc, &o);
        suite_case sc = {.kc = &kc};
        char label[64];
        snprintf(label, sizeof label, "KL determinism problem %d", pi);
        suite_bitwise_threads(&suite_kl, &sc, threads, 4, 1, label);
        kl_free(&kc);
    }
}

/* ---- forward -> KL step -> backward, against the float64 chain rule ---- */

/* Queries and keys dominated by their first component (|a|, |b| in [0.5, 1], the others within
 * +-0.1): every |q.k| >= 0.23, far from the ReLU's kink. */
static void chain_data(th_rng *r, tcase *tc)
{
    const int64_t nq = tc_numel_q(tc), nk = tc_numel_k(tc), nw = tc_numel_w(tc), D = tc->p.D;
    for (int64_t i = 0; i < nq; i++) {
        const double u = th_rng_unit(r);
        tc->q[i] = th_round_f32(i % D == 0 ? (u < 0.5 ? -1 : 1) * (0.5 + u) : 0.2 * u - 0.1);
    }
    for (int64_t i = 0; i < nk; i++) {
        const double u = th_rng_unit(r);
        tc->k[i] = th_round_f32(i % D == 0 ? (u < 0.5 ? -1 : 1) * (0.5 + u) : 0.2 * u - 0.1);
    }
    for (int64_t i = 0; i < nw; i++) {
        tc->w[i] = th_round_f32(2.0 * th_rng_unit(r) - 1.0);
    }
}

/* The float64 loss of (q, k, w) with the selection idx held fixed. */
static double chain_loss(const tcase *tc, const int64_t *idx, const double *target, double *scores,
                         const unsigned char *counted)
{
    const int64_t slots = tc_numel_slots(tc);
    ref_forward_slots(&tc->p, tc->q, tc->k, tc->w, idx, scores);
    return ref_kl(slots / tc->p.K, tc->p.K, scores, counted, target, NULL, NULL);
}

static void compare_grad(const char *label, const char *name, const double *lib, const double *ref_analytic,
                         const double *fd, int64_t n)
{
    double max_fd = 0.0;
    for (int64_t i = 0; i < n; i++) {
        max_fd = fmax(max_fd, fabs(fd[i]));
    }
    int64_t bad_ref = 0, bad_lib = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!(fabs(ref_analytic[i] - fd[i]) <= 1e-6 * max_fd + 1e-9)) {
            if (bad_ref++ < 2) {
                CHECK(0, "%s: %s[%" PRId64 "]: reference chain rule %.12g, finite difference %.12g", label, name, i,
                      ref_analytic[i], fd[i]);
            }
        }
        if (!(fabs(lib[i] - fd[i]) <= check_tolerance(LIG_FLOAT32) * max_fd)) {
            if (bad_lib++ < 2) {
                CHECK(0, "%s: %s[%" PRId64 "]: library %.9g, finite difference %.9g (tol %.3g)", label, name, i,
                      lib[i], fd[i], check_tolerance(LIG_FLOAT32) * max_fd);
            }
        }
    }
    CHECK(max_fd > 0.0, "%s: %s is all zero: nothing was exercised", label, name);
}

LIG_TEST(kl_chain_forward_kl_backward)
{
    for (int v = 0; v < 6; v++) {
        th_rng r = th_rng_make(69000u + (uint64_t)v);
        tcase tc;
        tc_init(&tc);
        tc.dtype = LIG_FLOAT32;
        tc.dw_dtype = LIG_FLOAT32;
        tc.idx_dtype = v % 2 ? LIG_INT64 : LIG_INT32;
        tc.grid = 0;
        tc.p.sparse_mode = v % 2 ? 3 : 0;
        tc.p.pre_tokens = v == 4 ? 2 : INT64_MAX;
        tc.p.N2 = 1 + v % 2;
        tc.p.N1 = tc.p.N2 * (1 + v % 3);
        tc.p.D = 3;
        tc.p.K = 3 + v % 2;
        tc.p.B = 2;
        tc.short_form = tc.p.N2 == 1 && v % 4 == 0;
        if (v >= 4) {
            gen_tnd(&r, &tc, 5, 7, 1, 1);
        } else {
            tc.p.S1 = 4;
            tc.p.S2 = 6;
            tc.has_seq_q = tc.has_seq_k = v % 2;
            gen_bsnd(&r, &tc);
        }
        chain_data(&r, &tc);
        char label[64];
        snprintf(label, sizeof label, "chain case %d", v);
        const int64_t slots = tc_numel_slots(&tc), K = tc.p.K, rows = slots / K;

        /* 1. forward */
        op_result fw;
        fwd_run(&tc, 1, LIG_FLOAT32, &fw);
        if (!CHECK(fw.st1 == LIG_SUCCESS && fw.st2 == LIG_SUCCESS, "%s: forward failed: %s", label, fw.message)) {
            inst_result_free(&fw);
            tc_free(&tc);
            continue;
        }
        fwd_check_outputs(&tc, LIG_FLOAT32, fw.idx, fw.val, label);

        /* 2. KL step on the forward's output, target normalised over the selected slots */
        klcase kc;
        kl_init(&kc);
        kl_set_shape(&kc, 2, (const int64_t[]){rows, K});
        kc.has_indices = 1;
        kc.idx_dtype = tc.idx_dtype;
        kl_alloc(&kc);
        unsigned char *counted = th_xmalloc((size_t)slots);
        for (int64_t row = 0; row < rows; row++) {
            double mass = 0.0;
            for (int64_t j = 0; j < K; j++) {
                const int64_t i = row * K + j;
                kc.idx[i] = fw.idx[i];
                kc.values[i] = fw.val[i];
                counted[i] = fw.idx[i] >= 0;
                kc.target[i] = counted[i] ? 0.05 + th_rng_unit(&r) : NAN;
                mass += counted[i] ? kc.target[i] : 0.0;
            }
            for (int64_t j = 0; j < K; j++) {
                if (counted[row * K + j]) {
                    kc.target[row * K + j] = th_round_f32(kc.target[row * K + j] / mass);
                }
            }
        }
        op_result kl;
        kl_run(&kc, &kl);
        if (CHECK(kl.st1 == LIG_SUCCESS && kl.st2 == LIG_SUCCESS, "%s: KL step failed: %s", label, kl.message)) {
            kl_check_outputs(&kc, kl.loss, kl.dy, label);

            /* 3. backward with the forward's indices and the KL step's dy */
            for (int64_t i = 0; i < slots; i++) {
                tc.idx[i] = fw.idx[i];
                tc.dy[i] = kl.dy[i];
            }
            run_result bw;
            run_case(&tc, &bw);
            if (CHECK(bw.st1 == LIG_SUCCESS && bw.st2 == LIG_SUCCESS, "%s: backward failed: %s", label, bw.message)) {
                /* 4. float64: analytic chain (ref_backward of ref_kl's dy) and finite differences */
                double *scores = th_xmalloc((size_t)slots * sizeof(double));
                double *dy_ref = th_xmalloc((size_t)slots * sizeof(double));
                ref_forward_slots(&tc.p, tc.q, tc.k, tc.w, tc.idx, scores);
                const double loss = ref_kl(rows, K, scores, counted, kc.target, dy_ref, NULL);
                CHECK(fabs(kl.loss - loss) <= 1e-5 * (1.0 + fabs(loss)), "%s: KL loss %.9g, float64 chain %.12g",
                      label, kl.loss, loss);
                const int64_t nq = tc_numel_q(&tc), nk = tc_numel_k(&tc), nw = tc_numel_w(&tc);
                ref_grads g;
                g.dq = th_xmalloc((size_t)nq * sizeof(double));
                g.dk = th_xmalloc((size_t)nk * sizeof(double));
                g.dw = th_xmalloc((size_t)nw * sizeof(double));
                g.dq_abs = g.dk_abs = g.dw_abs = NULL;
                ref_backward(&tc.p, tc.q, tc.k, tc.w, tc.idx, dy_ref, &g);
                double *arrays[3] = {tc.q, tc.k, tc.w};
                const double *analytic[3] = {g.dq, g.dk, g.dw};
                const double *lib[3] = {bw.dq, bw.dk, bw.dw};
                const int64_t sizes[3] = {nq, nk, nw};
                const char *names[3] = {"d_query", "d_key", "d_weights"};
                for (int a = 0; a < 3; a++) {
                    double *fd = th_xmalloc((size_t)sizes[a] * sizeof(double));
                    for (int64_t i = 0; i < sizes[a]; i++) {
                        const double h = 1e-5, x = arrays[a][i];
                        arrays[a][i] = x + h;
                        const double lp = chain_loss(&tc, tc.idx, kc.target, scores, counted);
                        arrays[a][i] = x - h;
                        const double lm = chain_loss(&tc, tc.idx, kc.target, scores, counted);
                        arrays[a][i] = x;
                        fd[i] = (lp - lm) / (2 * h);
                    }
                    compare_grad(label, names[a], lib[a], analytic[a], fd, sizes[a]);
                    free(fd);
                }
                free(g.dq);
                free(g.dk);
                free(g.dw);
                free(scores);
                free(dy_ref);
            }
            inst_result_free(&bw);
        }
        inst_result_free(&kl);
        free(counted);
        kl_free(&kc);
        inst_result_free(&fw);
        tc_free(&tc);
    }
}

/* The thread count may change between phase 1 and phase 2 of the KL step: the same bytes as
 * without the change. */
LIG_TEST(kl_threads_change_between_phases)
{
    static const int pairs[4][2] = {{1, 1}, {1, 4}, {4, 1}, {2, 3}};
    th_rng r = th_rng_make(71000);
    klcase kc;
    kl_init(&kc);
    kl_set_shape(&kc, 2, (const int64_t[]){700, 19});
    kc.has_indices = 1;
    kl_alloc(&kc);
    kl_gen_opts o;
    kl_gen_opts_default(&o);
    kl_gen_data(&r, &kc, &o);
    suite_case sc = {.kc = &kc};
    suite_threads_change(&suite_kl, &sc, pairs, 4, 1, "KL step");
    kl_free(&kc);
}

/* Phase 2 of the forward and of the KL step with workspaces at odd addresses (exactly the size
 * phase 1 asked for, inside a larger block): the library aligns inside them and stays within
 * them (ASan watches the block's end). */
LIG_TEST(fwd_kl_workspace_alignment)
{
    static const size_t shifts[] = {1, 3, 17, 63};
    th_rng r = th_rng_make(75000);
    tcase tc;
    fwd_gen_opts fo;
    fwd_gen_opts_default(&fo);
    tc_init(&tc);
    tc.dtype = LIG_FLOAT16;
    tc_set_dims(&tc, 2, 4, 2, 20, 9);
    tc.p.S1 = 30;
    tc.p.S2 = 50;
    gen_bsnd(&r, &tc);
    fwd_gen_data(&r, &tc, &fo);
    klcase kc;
    kl_init(&kc);
    kc.shape[0] = 40;
    kc.shape[1] = 11;
    kc.has_indices = 1;
    kl_alloc(&kc);
    kl_gen_opts ko;
    kl_gen_opts_default(&ko);
    kl_gen_data(&r, &kc, &ko);
    for (int op = 0; op < 2; op++) {
        for (size_t i = 0; i < sizeof shifts / sizeof shifts[0]; i++) {
            op_inst oi;
            if (op == 0) {
                fwd_setup(&tc, 1, LIG_FLOAT32, &oi);
            } else {
                kl_setup(&kc, &oi);
            }
            lig_status st = inst_phase1(&oi);
            if (!CHECK(st == LIG_SUCCESS, "phase 1: %s", oi.message)) {
                inst_teardown(&oi);
                continue;
            }
            const uint64_t size = oi.workspace_size;
            unsigned char *block = th_xmalloc((size_t)size + shifts[i]);
            memset(block, 0xAB, (size_t)size + shifts[i]);
            st = op == 0 ? lig_indexer(block + shifts[i], size, oi.executor, NULL)
                         : lig_kl_loss_and_dy(block + shifts[i], size, oi.executor, NULL);
            oi.executor = NULL;
            free(block);
            char label[64];
            snprintf(label, sizeof label, "%s, workspace at +%zu", op == 0 ? "forward" : "KL step", shifts[i]);
            if (CHECK(st == LIG_SUCCESS, "%s: %s", label, lig_get_last_error())) {
                if (op == 0) {
                    fwd_check_inst(&oi, &tc, 1, LIG_FLOAT32, label);
                } else {
                    kl_check_inst(&oi, &kc, label);
                }
            }
            inst_teardown(&oi);
        }
    }
    tc_free(&tc);
    kl_free(&kc);
}

/* The names before 0.2 stand for the renamed operators (lig.h), each for its own. */
LIG_TEST(kl_renamed_operators_old_names)
{
    CHECK(&lig_indexer_kl_grad_get_workspace_size == &lig_kl_loss_and_dy_get_workspace_size &&
              &lig_indexer_kl_grad == &lig_kl_loss_and_dy,
          "lig_indexer_kl_grad does not stand for lig_kl_loss_and_dy");
    CHECK(&lig_sparse_indexer_kl_loss_get_workspace_size == &lig_sparse_indexer_grad_kl_loss_get_workspace_size &&
              &lig_sparse_indexer_kl_loss == &lig_sparse_indexer_grad_kl_loss,
          "lig_sparse_indexer_kl_loss does not stand for lig_sparse_indexer_grad_kl_loss");
}

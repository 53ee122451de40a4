/*
 * Subnormal inputs (the contract's numerics, and the bf16 units' documented behaviour): the bf16
 * engines' multiply units (vdpbf16ps, AMX) treat subnormal bf16 inputs as zero and flush
 * subnormal fp32 results, whatever MXCSR says; the fp32 engines keep them. Either way a term
 * that involves a subnormal is below 2^-126 in magnitude, so the outputs may differ from the
 * float64 reference by at most (number of such terms) x 2^-126 x (largest other factor) in
 * absolute value, on top of the usual rounding. This test feeds bf16 data where a tenth of q,
 * k, w and dy are subnormal, runs the backward and the forward on the kernel set in effect
 * (the suite runs once per set) and checks every output against the reference within that
 * bound. Slots whose score would be decided by subnormal terms alone (a normal part of exactly
 * 0) are made padding, since there the gate itself may flip, which is the documented
 * consequence rather than an error.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework.h"
#include "lig.h"
#include "forward_kl_runner.h"
#include "reference/indexer_fwd_ref.h"
#include "reference/indexer_ref.h"
#include "rng.h"
#include "backward_runner.h"
#include "problem_case.h"

/* A subnormal bf16 value: +-m * 2^-133, m in 1..127 (exact in bf16 and fp32). */
static double subnormal(th_rng *r) {
    const double m = (double)th_rng_range(r, 1, 127);
    return (th_rng_range(r, 0, 1) ? -m : m) * ldexp(1.0, -133);
}

static double normal(th_rng *r) { return (double)th_rng_range(r, -16, 16) / 8.0; }

/* Terms involving subnormals are below this; generous for G x K x rows terms of size <= 4. */
#define SUBNORMAL_FLOOR 1e-32

static void make_case(tcase *tc, th_rng *r) {
    tc_init(tc);
    tc->dtype = LIG_BFLOAT16;
    tc->dw_dtype = LIG_FLOAT32;
    tc->grid = 0;
    tc->p.sparse_mode = 3;
    /* G not a multiple of the tile: padded heads too */
    tc_set_dims(tc, 1, 40, 1, 72, 48);
    tc->p.S1 = 80;
    tc->p.S2 = 80;
    tc->has_seq_q = tc->has_seq_k = 0;
    tc_alloc(tc);
    double *qn = th_xmalloc(sizeof(double) * (size_t)tc_numel_q(tc)), *kn = th_xmalloc(sizeof(double) * (size_t)tc_numel_k(tc));
    for (int64_t i = 0; i < tc_numel_q(tc); i++) {
        qn[i] = normal(r);
        tc->q[i] = th_rng_range(r, 0, 9) == 0 ? subnormal(r) : qn[i];
        if (tc->q[i] != qn[i]) qn[i] = 0.0;
    }
    for (int64_t i = 0; i < tc_numel_k(tc); i++) {
        kn[i] = normal(r);
        tc->k[i] = th_rng_range(r, 0, 9) == 0 ? subnormal(r) : kn[i];
        if (tc->k[i] != kn[i]) kn[i] = 0.0;
    }
    for (int64_t i = 0; i < tc_numel_w(tc); i++) tc->w[i] = th_rng_range(r, 0, 9) == 0 ? subnormal(r) : normal(r);
    const int64_t N1 = tc->p.N1, D = tc->p.D, K = tc->p.K;
    for (int64_t t = 0; t < tc->p.S1; t++)
        for (int64_t j = 0; j < K; j++) {
            int64_t s = th_rng_range(r, -1, t); /* causal, full lengths: keys 0..t are visible */
            for (int64_t h = 0; s >= 0 && h < N1; h++) {
                double sn = 0.0; /* the score of the normal parts alone */
                for (int64_t d = 0; d < D; d++) sn += qn[(t * N1 + h) * D + d] * kn[s * D + d];
                if (sn == 0.0) s = -1;
            }
            tc->idx[t * K + j] = s;
            tc->dy[t * K + j] = th_rng_range(r, 0, 9) == 0 ? subnormal(r) : normal(r);
        }
    free(qn);
    free(kn);
}

static int close_enough(double lib, double ref, double rel) {
    return isfinite(lib) && fabs(lib - ref) <= rel * fabs(ref) + SUBNORMAL_FLOOR;
}

LIG_TEST(subnormal_inputs) {
    th_rng r = th_rng_make(0x7375626eu);
    tcase tc;
    make_case(&tc, &r);
    const ref_problem *p = &tc.p;
    const int64_t nq = tc_numel_q(&tc), nk = tc_numel_k(&tc), nw = tc_numel_w(&tc);
    ref_grads g = {th_xcalloc((size_t)nq, sizeof(double)), th_xcalloc((size_t)nk, sizeof(double)),
                   th_xcalloc((size_t)nw, sizeof(double)), NULL, NULL, NULL};
    ref_backward(p, tc.q, tc.k, tc.w, tc.idx, tc.dy, &g);
    for (int det = 0; det < 2; det++) {
        tc.deterministic = det;
        run_result res;
        run_case(&tc, &res);
        if (CHECK(res.st1 == LIG_SUCCESS && res.st2 == LIG_SUCCESS, "backward failed: %s", res.message)) {
            /* d_query and d_key are bf16: one rounding (2^-8 relative) on top of fp32 sums */
            const struct { const char *name; const double *lib, *ref; int64_t n; double rel; } outs[] = {
                {"d_query", res.dq, g.dq, nq, 0x1p-8}, {"d_key", res.dk, g.dk, nk, 0x1p-8}, {"d_weights", res.dw, g.dw, nw, 1e-5}};
            for (int o = 0; o < 3; o++) {
                int64_t bad = 0, first = -1;
                for (int64_t i = 0; i < outs[o].n; i++)
                    if (!close_enough(outs[o].lib[i], outs[o].ref[i], outs[o].rel) && bad++ == 0) first = i;
                CHECK(bad == 0, "%s (deterministic=%d): %lld elements beyond the subnormal bound, first [%lld]: lib %.9g ref %.9g",
                      outs[o].name, det, (long long)bad, (long long)first, first >= 0 ? outs[o].lib[first] : 0.0,
                      first >= 0 ? outs[o].ref[first] : 0.0);
            }
        }
        inst_result_free(&res);
    }
    free(g.dq);
    free(g.dk);
    free(g.dw);

    /* the forward: each selected key's value within the bound of its reference score, and no
     * unselected visible key better than the worst selected one by more than the bound */
    op_result fr;
    fwd_run(&tc, 1, LIG_FLOAT32, &fr);
    if (CHECK(fr.st1 == LIG_SUCCESS && fr.st2 == LIG_SUCCESS, "forward failed: %s", fr.message)) {
        const int64_t K = p->K;
        double *all = th_xmalloc(sizeof(double) * (size_t)p->S2);
        int64_t *ridx = th_xmalloc(sizeof(int64_t) * (size_t)p->S2);
        int64_t bad = 0;
        for (int64_t t = 0; t < p->S1; t++) {
            /* reference scores of every visible key: the forward with K = all keys */
            ref_problem wide = *p;
            wide.K = p->S2;
            ref_forward_unit(&wide, tc.q, tc.k, tc.w, t, 0, ridx, all, NULL);
            double score_of[512];
            for (int64_t i = 0; i < p->S2 && ridx[i] >= 0; i++) score_of[ridx[i]] = all[i];
            const int64_t visible = t + 1, taken = visible < K ? visible : K;
            const double kth = all[taken - 1];
            for (int64_t j = 0; j < K; j++) {
                const int64_t s = fr.idx[t * K + j];
                if (j >= taken) {
                    bad += s != -1;
                    continue;
                }
                bad += s < 0 || s > t || !close_enough(fr.val[t * K + j], score_of[s], 1e-6) ||
                       score_of[s] < kth - 1e-6 * fabs(kth) - SUBNORMAL_FLOOR;
            }
        }
        CHECK(bad == 0, "forward: %lld selected slots are not a top-k within the subnormal bound", (long long)bad);
        free(all);
        free(ridx);
    }
    inst_result_free(&fr);
    tc_free(&tc);
}

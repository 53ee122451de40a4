#include "backward_checks.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "float_formats.h"
#include "framework.h"
#include "lig.h"
#include "error_bounds.h"
#include "suite.h"

/* Grid data: q, k, w, dy are multiples of 1/8, so every product term of dQ, dK and dW (and of the
 * scores S inside dW) is a multiple of 2^-9; partial sums are exact in fp32 while their magnitude,
 * bounded by the element's abs sum, stays below 2^24 * 2^-9. */
#define EXACT_ABS_BOUND 32768.0

static check_stats g_stats;

void check_stats_reset(void)
{
    memset(&g_stats, 0, sizeof g_stats);
}

check_stats check_stats_get(void)
{
    return g_stats;
}

static int64_t counted_slots(const tcase *tc)
{
    const ref_problem *p = &tc->p;
    const int64_t rows = ref_rows_q(p), per_row = p->N2 * p->K;
    int64_t n = 0;
    for (int64_t r = 0; r < rows; r++) {
        ref_row row;
        ref_row_info(p, r, &row);
        for (int64_t i = 0; row.valid && i < per_row; i++) {
            n += ref_classify(p, &row, tc->idx[r * per_row + i]) == REF_SLOT_COUNTED;
        }
    }
    return n;
}

double check_tolerance(lig_dtype out_dtype)
{
    switch (out_dtype) {
    case LIG_BFLOAT16: return 1e-2;
    case LIG_FLOAT16: return 2e-3;
    default: return 1e-4;
    }
}

void check_output(lig_dtype dtype, int grid, int64_t n, const double *lib, const double *ref, const double *abs_sum,
                  const int64_t *terms, int64_t extra_steps, check_outcome *out)
{
    double max_abs = 0.0;
    for (int64_t i = 0; i < n; i++) {
        max_abs = fmax(max_abs, abs_sum[i]);
    }
    out->exact = grid && max_abs < EXACT_ABS_BOUND;
    out->bad = 0;
    out->first = -1;
    out->why = "";
    out->first_bound = 0.0;
    out->worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double diff = fabs(lib[i] - ref[i]);
        const double bound = tol_element(dtype, ref[i], (double)(terms[i] + extra_steps), abs_sum[i]);
        const char *w = NULL;
        if (abs_sum[i] == 0.0 && lib[i] != 0.0) {
            w = "nothing was counted here, expected exactly 0";
        } else if (out->exact && lib[i] != th_round_dtype(dtype, ref[i])) {
            w = "exact data: expected the reference rounded once to the output dtype";
        } else if (!(diff <= bound)) {
            w = "outside the element's bound";
        }
        if (w != NULL) {
            if (out->first < 0) {
                out->first = i;
                out->why = w;
                out->first_bound = bound;
            }
            out->bad++;
        }
        if (diff > out->worst || isnan(diff)) {
            out->worst = diff;
        }
    }
}

static int compare_output(const char *label, const char *name, lig_dtype dtype, int grid, int64_t n,
                          const double *lib, const double *ref, const double *abs_sum, const int64_t *terms,
                          int64_t extra_steps)
{
    check_outcome o;
    check_output(dtype, grid, n, lib, ref, abs_sum, terms, extra_steps, &o);
    g_stats.exact_outputs += o.exact;
    for (int64_t i = 0; i < n; i++) {
        g_stats.nonzero += ref[i] != 0.0;
    }
    if (o.bad == 0) {
        return 1;
    }
    const int64_t f = o.first;
    CHECK(0, "%s: %s: %" PRId64 " of %" PRId64 " elements wrong; first at flat %" PRId64
             ": lib %.9g ref %.9g (%s; bound %.3g from %" PRId64 " steps over abs sum %.3g); max|diff| %.3g",
          label, name, o.bad, n, f, lib[f], ref[f], o.why, o.first_bound, terms[f] + extra_steps, abs_sum[f], o.worst);
    return 0;
}

/* Steps per elementary product before the final rounding (error_bounds.h): dQ and dK multiply w by dy,
 * then by k or q (2), and add up to terms - 1 times; dW forms S in D steps (a product and D - 1
 * additions), multiplies by dy (1) and adds up to terms - 1 times. */
#define DQ_DK_EXTRA_STEPS 1

int check_result(const tcase *tc, const run_result *res, const char *label)
{
    const int64_t nq = tc_numel_q(tc), nk = tc_numel_k(tc), nw = tc_numel_w(tc);
    ref_grads g;
    g.dq = th_xmalloc((size_t)nq * sizeof(double));
    g.dk = th_xmalloc((size_t)nk * sizeof(double));
    g.dw = th_xmalloc((size_t)nw * sizeof(double));
    g.dq_abs = th_xmalloc((size_t)nq * sizeof(double));
    g.dk_abs = th_xmalloc((size_t)nk * sizeof(double));
    g.dw_abs = th_xmalloc((size_t)nw * sizeof(double));
    ref_grad_terms t;
    t.dq = th_xmalloc((size_t)nq * sizeof(int64_t));
    t.dk = th_xmalloc((size_t)nk * sizeof(int64_t));
    t.dw = th_xmalloc((size_t)nw * sizeof(int64_t));
    ref_backward_counted(&tc->p, tc->q, tc->k, tc->w, tc->idx, tc->dy, &g, &t);
    g_stats.cases++;
    g_stats.counted_slots += counted_slots(tc);
    int ok = 1;
    ok &= compare_output(label, "d_query", tc->dtype, tc->grid, nq, res->dq, g.dq, g.dq_abs, t.dq,
                         DQ_DK_EXTRA_STEPS);
    ok &= compare_output(label, "d_key", tc->dtype, tc->grid, nk, res->dk, g.dk, g.dk_abs, t.dk,
                         DQ_DK_EXTRA_STEPS);
    ok &= compare_output(label, "d_weights", tc->dw_dtype, tc->grid, nw, res->dw, g.dw, g.dw_abs, t.dw,
                         tc->p.D);
    ok &= CHECK(res->gaps_ok, "%s: an input changed or an output element outside the strided view was written",
                label);
    free(g.dq);
    free(g.dk);
    free(g.dw);
    free(g.dq_abs);
    free(g.dk_abs);
    free(g.dw_abs);
    free(t.dq);
    free(t.dk);
    free(t.dw);
    return ok;
}

int check_inst(const run_inst *ri, const tcase *tc, const char *label)
{
    run_result res;
    memset(&res, 0, sizeof res);
    res.gaps_ok = 1; /* the caller checks the gaps of an instance it ran itself */
    res.dq = th_xmalloc((size_t)tc_numel_q(tc) * sizeof(double));
    res.dk = th_xmalloc((size_t)tc_numel_k(tc) * sizeof(double));
    res.dw = th_xmalloc((size_t)tc_numel_w(tc) * sizeof(double));
    run_read_outputs(ri, res.dq, res.dk, res.dw);
    const int ok = check_result(tc, &res, label);
    inst_result_free(&res);
    return ok;
}

int check_case(tcase *tc, const char *label)
{
    suite_case sc = {.tc = tc};
    return suite_check(&suite_backward, &sc, label, NULL);
}

void check_stats_note(const char *what, int64_t min_work)
{
    const check_stats s = g_stats;
    th_note("%s: %" PRId64 " results, %" PRId64 " counted slots, %" PRId64 " non-zero reference elements, %" PRId64
            " outputs compared bit-exactly",
            what, s.cases, s.counted_slots, s.nonzero, s.exact_outputs);
    CHECK(s.cases == 0 || (s.counted_slots > 0 && s.counted_slots >= min_work && s.nonzero > 0),
          "%s exercised too little: %" PRId64 " counted slots (at least %" PRId64 " wanted), %" PRId64
          " non-zero elements", what, s.counted_slots, min_work, s.nonzero);
}

/*
 * The gradient checker itself (backward_checks.h): its per-element bound must accept what fp32 arithmetic
 * can produce and reject errors the former whole-output tolerance (1e-4 * max|ref| for fp32)
 * let through. check_output is called directly on synthetic arrays, then on a real library
 * result perturbed on purpose.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backward_checks.h"
#include "case_generators.h"
#include "float_formats.h"
#include "framework.h"
#include "lig.h"
#include "reference/indexer_ref.h"
#include "backward_runner.h"
#include "error_bounds.h"

#define SYN_N 64
#define SYN_TERMS 16
#define PERTURBATION 1e-3

/* Magnitudes from 2 down to 2^-11, alternating signs; each element sums SYN_TERMS terms whose
 * |values| add up to 3 |ref| (some cancellation). */
static void synthetic(double *ref, double *abs_sum, int64_t *terms)
{
    for (int i = 0; i < SYN_N; i++) {
        ref[i] = th_round_f32((i % 2 ? -1.0 : 1.0) * ldexp(1.0 + i / 64.0, -(i % 12)));
        abs_sum[i] = 3.0 * fabs(ref[i]);
        terms[i] = SYN_TERMS;
    }
}

static double max_abs(const double *a, int64_t n)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) {
        m = fmax(m, fabs(a[i]));
    }
    return m;
}

static void synthetic_fp32(void)
{
    double ref[SYN_N], abs_sum[SYN_N], lib[SYN_N];
    int64_t terms[SYN_N];
    synthetic(ref, abs_sum, terms);
    /* What fp32 accumulation may legitimately produce: half the accumulation bound away. */
    for (int i = 0; i < SYN_N; i++) {
        lib[i] = th_round_f32(ref[i] + (i % 3 - 1) * 0.5 * tol_accumulated(SYN_TERMS + 1, abs_sum[i]));
    }
    check_outcome o;
    check_output(LIG_FLOAT32, 0, SYN_N, lib, ref, abs_sum, terms, 1, &o);
    CHECK(o.bad == 0, "fp32 results within the accumulation bound rejected: %" PRId64 " bad, first %" PRId64 " (%s)",
          o.bad, o.first, o.why);

    /* An element 2^-10 below the largest, off by 1e-3 relative: the old bound let it pass. */
    const int small = 10, large = 0;
    const double old_bound = check_tolerance(LIG_FLOAT32) * max_abs(ref, SYN_N);
    memcpy(lib, ref, sizeof lib);
    lib[small] = th_round_f32(ref[small] * (1.0 + PERTURBATION));
    CHECK(fabs(lib[small] - ref[small]) <= old_bound, "premise: the old whole-output bound accepts the perturbation");
    check_output(LIG_FLOAT32, 0, SYN_N, lib, ref, abs_sum, terms, 1, &o);
    CHECK(o.bad == 1 && o.first == small, "a 1e-3 relative error in element %d was not caught (%" PRId64 " bad)", small,
          o.bad);

    /* The same error on the largest element (which the old bound caught too). */
    memcpy(lib, ref, sizeof lib);
    lib[large] = th_round_f32(ref[large] * (1.0 - PERTURBATION));
    check_output(LIG_FLOAT32, 0, SYN_N, lib, ref, abs_sum, terms, 1, &o);
    CHECK(o.bad == 1 && o.first == large, "a 1e-3 relative error in the largest element was not caught");

    /* Fewer steps, smaller bound: 0.75 of the 17-step bound fails a 4-step check. */
    memcpy(lib, ref, sizeof lib);
    lib[3] = ref[3] + 0.75 * tol_accumulated(SYN_TERMS + 1, abs_sum[3]);
    check_output(LIG_FLOAT32, 0, SYN_N, lib, ref, abs_sum, terms, 1, &o);
    CHECK(o.bad == 0, "0.75 of an element's bound rejected");
    for (int i = 0; i < SYN_N; i++) {
        terms[i] = 3;
    }
    check_output(LIG_FLOAT32, 0, SYN_N, lib, ref, abs_sum, terms, 1, &o);
    CHECK(o.bad == 1 && o.first == 3, "the bound does not shrink with the number of steps");
}

static void synthetic_rules(void)
{
    double ref[SYN_N], abs_sum[SYN_N], lib[SYN_N];
    int64_t terms[SYN_N];
    synthetic(ref, abs_sum, terms);
    check_outcome o;

    /* bf16: one ulp away from the exact 1.5 is beyond its rounding (0.75 ulp there). */
    for (int i = 0; i < SYN_N; i++) {
        ref[i] = lib[i] = 1.5;
        abs_sum[i] = 1.5;
    }
    check_output(LIG_BFLOAT16, 0, SYN_N, lib, ref, abs_sum, terms, 1, &o);
    CHECK(o.bad == 0, "bf16: exact values rejected");
    lib[7] = 1.5 + ldexp(1.0, -7);
    check_output(LIG_BFLOAT16, 0, SYN_N, lib, ref, abs_sum, terms, 1, &o);
    CHECK(o.bad == 1 && o.first == 7, "bf16: one ulp off was not caught");

    /* Grid data with exact sums: one fp32 ulp off fails. */
    lib[7] = 1.5;
    lib[9] = 1.5 + ldexp(1.0, -23);
    check_output(LIG_FLOAT32, 1, SYN_N, lib, ref, abs_sum, terms, 1, &o);
    CHECK(o.exact && o.bad == 1 && o.first == 9, "grid data: one ulp off was not caught (exact %d)", o.exact);

    /* Nothing counted: anything but 0 fails, however small. */
    lib[9] = 1.5;
    ref[11] = abs_sum[11] = 0.0;
    lib[11] = 1e-30;
    check_output(LIG_FLOAT32, 0, SYN_N, lib, ref, abs_sum, terms, 1, &o);
    CHECK(o.bad == 1 && o.first == 11, "a non-zero where nothing was counted was not caught");
}

/* A real fp32 result on continuous data, each element perturbed by 1e-3 relative: count how many
 * perturbations the per-element bound catches against the old whole-output bound. */
static void real_result(void)
{
    th_rng r = th_rng_make(81000);
    gen_opts o;
    gen_opts_default(&o);
    o.grid = 0;
    o.min_abs_s = 1e-3;
    tcase tc;
    tc_init(&tc);
    tc.grid = 0;
    tc.dtype = tc.dw_dtype = LIG_FLOAT32;
    tc_set_dims(&tc, 2, 6, 2, 40, 12);
    gen_layout(&r, &tc, 0, 16, 24, 0, 0, 1);
    gen_data(&r, &tc, &o);
    run_result res;
    run_case(&tc, &res);
    if (!CHECK(res.st1 == LIG_SUCCESS && res.st2 == LIG_SUCCESS, "the library failed: %s", res.message)) {
        inst_result_free(&res);
        tc_free(&tc);
        return;
    }
    CHECK(check_result(&tc, &res, "unperturbed fp32 result"), "the unperturbed result must pass");
    const int64_t nq = tc_numel_q(&tc);
    double *ref = th_xmalloc((size_t)nq * sizeof(double)), *abs_sum = th_xmalloc((size_t)nq * sizeof(double));
    int64_t *terms = th_xmalloc((size_t)nq * sizeof(int64_t));
    ref_grads g;
    memset(&g, 0, sizeof g);
    g.dq = ref;
    g.dq_abs = abs_sum;
    g.dk = th_xmalloc((size_t)tc_numel_k(&tc) * sizeof(double));
    g.dw = th_xmalloc((size_t)tc_numel_w(&tc) * sizeof(double));
    const ref_grad_terms t = {terms, NULL, NULL};
    ref_backward_counted(&tc.p, tc.q, tc.k, tc.w, tc.idx, tc.dy, &g, &t);
    double *lib = th_xmalloc((size_t)nq * sizeof(double));
    const double old_bound = check_tolerance(LIG_FLOAT32) * max_abs(ref, nq);
    int64_t nonzero = 0, old_caught = 0;
    for (int64_t i = 0; i < nq; i++) {
        lib[i] = th_round_f32(res.dq[i] * (1.0 + PERTURBATION));
        nonzero += ref[i] != 0.0;
        old_caught += !(fabs(lib[i] - ref[i]) <= old_bound);
    }
    check_outcome out;
    check_output(LIG_FLOAT32, 0, nq, lib, ref, abs_sum, terms, 1, &out);
    th_note("d_query, %" PRId64 " non-zero elements each off by 1e-3: %" PRId64 " caught by the per-element bound, %"
            PRId64 " by the old 1e-4 * max|ref|", nonzero, out.bad, old_caught);
    CHECK(nonzero > 1000, "too few non-zero elements (%" PRId64 ")", nonzero);
    CHECK(out.bad * 100 >= nonzero * 99, "the per-element bound caught only %" PRId64 " of %" PRId64, out.bad, nonzero);
    CHECK(out.bad > old_caught, "the per-element bound is not tighter than the old one");
    free(lib);
    free(ref);
    free(abs_sum);
    free(terms);
    free(g.dk);
    free(g.dw);
    inst_result_free(&res);
    tc_free(&tc);
}

LIG_TEST(check_per_element_bound)
{
    synthetic_fp32();
    synthetic_rules();
    real_result();
}

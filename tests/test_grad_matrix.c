/*
 * LightningIndexerGrad against the float64 reference over a broad generated matrix:
 * layout x dtype x sparse_mode x index dtype x N2, with secondary choices (head groups, odd D
 * and K, sequence arrays and their dtype, short index forms, strides of inputs and outputs,
 * deterministic, d_weights dtype, head_num 0, bands) cycled through the cases. The matrix, stride
 * and band tests are suite.h's drivers, shared with the forward; this file adds the backward's
 * own options and data.
 *
 * Data sits on the 1/8 grid unless a test says otherwise, so S = q.k is exact in fp32 and the
 * ReLU decisions (including exact S == 0) agree with the reference; see backward_checks.c for the
 * comparison rules. Every case carries poison: NaN/Inf dy in skipped slots, garbage indices
 * and NaN q/w/dy in invalid rows, NaN keys that do not exist.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include "backward_checks.h"
#include "case_generators.h"
#include "framework.h"
#include "lig.h"
#include "suite.h"

/* The operator's own choices, cycled by `v`: d_weights dtype, determinism, head_num 0. */
static void matrix_data(th_rng *r, suite_case *sc, int v)
{
    tcase *tc = sc->tc;
    gen_opts o;
    gen_opts_default(&o);
    tc->dw_dtype = (v % 2) ? LIG_FLOAT32 : tc->dtype;
    tc->deterministic = (v / 2) % 2 == 0;
    tc->head_num = (v % 4 == 3) ? 0 : tc->p.N1;
    gen_data(r, tc, &o);
}

static void run_matrix(ref_layout layout)
{
    static const int64_t Ks[] = {1, 3, 7, 16, 17, 5, 2};
    const suite_spec s = {.label = "matrix", .seed = 0, .Ks = Ks, .nK = 7, .variants = 4, .data = matrix_data};
    suite_matrix(&suite_backward, &s, layout);
}

LIG_TEST(grad_matrix_bsnd)
{
    run_matrix(REF_BSND);
}

LIG_TEST(grad_matrix_tnd)
{
    run_matrix(REF_TND);
}

static void strides_data(th_rng *r, suite_case *sc, int v)
{
    gen_opts o;
    gen_opts_default(&o);
    o.poison = sc->tc->in_strides != TC_BROADCAST; /* broadcast would copy poison into valid rows */
    sc->tc->dw_dtype = v % 2 ? LIG_FLOAT32 : sc->tc->dtype;
    gen_data(r, sc->tc, &o);
}

LIG_TEST(grad_strides)
{
    const suite_spec s = {.label = "strides", .seed = 5000, .s2 = 6, .data = strides_data};
    suite_strides(&suite_backward, &s);
}

static void bands_data(th_rng *r, suite_case *sc, int v)
{
    (void)v;
    gen_opts o;
    gen_opts_default(&o);
    sc->tc->dw_dtype = sc->tc->dtype;
    gen_data(r, sc->tc, &o);
}

LIG_TEST(grad_band_limits)
{
    static const int64_t Ks[] = {6};
    const suite_spec s = {.label = "bands", .seed = 7000, .Ks = Ks, .nK = 1, .data = bands_data};
    suite_bands(&suite_backward, &s);
}

/* Continuous random data (rounded to the dtype): per-element bounds only; slots with |S| < 1e-3
 * are turned into padding so fp32 and float64 cannot disagree about the ReLU. */
static void continuous_shape(tcase *tc, int v)
{
    const int rep = v % 3;
    tc->p.N1 = 3 * tc->p.N2;
    tc->p.K = 9 + 4 * rep;
    tc->dw_dtype = rep == 1 ? LIG_FLOAT32 : tc->dtype;
    tc->deterministic = rep != 2;
}

static void continuous_data(th_rng *r, suite_case *sc, int v)
{
    (void)v;
    gen_opts o;
    gen_opts_default(&o);
    o.grid = 0;
    o.min_abs_s = 1e-3;
    gen_data(r, sc->tc, &o);
}

LIG_TEST(grad_continuous_data)
{
    const suite_spec s = {.label = "continuous", .seed = 9000, .s1 = 12, .s2 = 16, .shape = continuous_shape,
                          .data = continuous_data};
    suite_continuous(&suite_backward, &s);
}

/* n cases of a backward test: case v draws from th_rng_make(seed + v); `make` sets its options
 * and shape (gen_opts at their defaults, tc at tc_init's before it) and draws its lengths, then
 * the data is drawn and the case checked under `label`. */
typedef void (*variant_fn)(th_rng *r, int v, gen_opts *o, tcase *tc);

static void check_variants(const char *label, uint64_t seed, int n, variant_fn make)
{
    check_stats_reset();
    for (int v = 0; v < n; v++) {
        th_rng r = th_rng_make(seed + (uint64_t)v);
        gen_opts o;
        gen_opts_default(&o);
        tcase tc;
        tc_init(&tc);
        make(&r, v, &o, &tc);
        gen_data(&r, &tc, &o);
        check_case(&tc, label);
        tc_free(&tc);
    }
    check_stats_note(label, 1);
}

/* Most slots skipped (padding, masked) with NaN/Inf dy there, many invalid rows with garbage. */
static void poison_variant(th_rng *r, int v, gen_opts *o, tcase *tc)
{
    o->p_pad = 0.3;
    o->p_mask = 0.45;
    o->p_dup = 0.1;
    tc->dtype = suite_float_dtypes[v % 3];
    tc->dw_dtype = tc->dtype;
    tc->idx_dtype = suite_index_dtypes[(v / 3) % 2];
    tc->p.sparse_mode = suite_modes[v % 2];
    tc->p.pre_tokens = v % 4 < 2 ? 2 : INT64_MAX;
    tc->p.next_tokens = 1;
    tc_set_dims(tc, 3, 4, 2, 9, 8);
    gen_layout(r, tc, v % 2, 7, 9, 3, 2, 1);
}

LIG_TEST(grad_poison_is_ignored)
{
    check_variants("poison", 11000, 12, poison_variant);
}

/* Indices as the forward writes them: distinct visible keys, -1 only as a tail (rows that see
 * fewer than K keys), causal. */
static void forward_like_variant(th_rng *r, int v, gen_opts *o, tcase *tc)
{
    o->tail_pad = 1;
    o->p_pad = 0.0;
    o->p_mask = 0.0;
    o->p_dup = 0.0;
    tc->dtype = suite_float_dtypes[v % 3];
    tc->dw_dtype = LIG_FLOAT32;
    tc->p.sparse_mode = 3;
    tc_set_dims(tc, 2, 8, 1, 32, 16);
    tc->short_form = 1;
    gen_layout(r, tc, v % 2, 20, 24, 0, 0, 0);
}

LIG_TEST(grad_forward_like_indices)
{
    check_variants("forward-like", 13000, 12, forward_like_variant);
}

/* head_num 0 ("take it from query") and N1, the short and long index forms with N2 == 1. */
static void head_num_variant(th_rng *r, int v, gen_opts *o, tcase *tc)
{
    (void)o;
    tc->dtype = suite_float_dtypes[v % 3];
    tc->dw_dtype = (v / 3) % 2 ? LIG_FLOAT32 : tc->dtype;
    tc_set_dims(tc, 2, 5, 1, 12, 4);
    tc->head_num = v % 2 ? 0 : 5;
    tc->short_form = (v / 2) % 2;
    gen_layout(r, tc, (v / 4) % 2, 5, 6, 1, 1, 0);
}

LIG_TEST(grad_head_num_and_forms)
{
    check_variants("head_num/forms", 15000, 16, head_num_variant);
}

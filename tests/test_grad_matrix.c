/*
 * LightningIndexerGrad against the float64 reference over a broad generated matrix:
 * layout x dtype x sparse_mode x index dtype x N2, with secondary choices (head groups, odd D
 * and K, sequence arrays and their dtype, short index forms, strides of inputs and outputs,
 * deterministic, d_weights dtype, head_num 0, bands) cycled through the cases.
 *
 * Data sits on the 1/8 grid unless a test says otherwise, so S = q.k is exact in fp32 and the
 * ReLU decisions (including exact S == 0) agree with the reference; see check.c for the
 * comparison rules. Every case carries poison: NaN/Inf dy in skipped slots, garbage indices
 * and NaN q/w/dy in invalid rows, NaN keys that do not exist.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include "gen.h"
#include "harness.h"
#include "lig.h"
#include "tests.h"

static const lig_dtype k_dtypes[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
static const lig_dtype k_index_dtypes[2] = {LIG_INT32, LIG_INT64};
static const int64_t k_modes[2] = {0, 3};

/* Secondary choices, cycled by `v`. */
static void matrix_case(th_rng *r, tcase *tc, ref_layout layout, lig_dtype dtype, int64_t mode,
                        lig_dtype idx_dtype, int64_t n2, int v)
{
    static const int64_t Ks[] = {1, 3, 7, 16, 17, 5, 2};
    gen_opts o;
    gen_opts_default(&o);
    gen_matrix_shape(r, tc, layout, dtype, mode, idx_dtype, n2, v, Ks, 7);
    tc->dw_dtype = (v % 2) ? LIG_FLOAT32 : dtype;
    tc->deterministic = (v / 2) % 2 == 0;
    tc->head_num = (v % 4 == 3) ? 0 : tc->p.N1;
    gen_data(r, tc, &o);
}

/* Notes what a test exercised and fails it if it compared nothing but zeros. */
static void note_stats(const char *what)
{
    check_stats s = check_stats_get();
    th_note("%s: %" PRId64 " results, %" PRId64 " counted slots, %" PRId64 " non-zero reference elements, %" PRId64
            " outputs compared bit-exactly",
            what, s.cases, s.counted_slots, s.nonzero, s.exact_outputs);
    CHECK(s.cases == 0 || (s.counted_slots > 0 && s.nonzero > 0), "%s exercised no gradient at all", what);
}

static void run_matrix(ref_layout layout, int variants)
{
    int cases = 0, ok = 0, v = 0;
    check_stats_reset();
    for (int di = 0; di < 3; di++) {
        for (int mi = 0; mi < 2; mi++) {
            for (int ii = 0; ii < 2; ii++) {
                for (int64_t n2 = 1; n2 <= 3; n2++) {
                    for (int rep = 0; rep < variants; rep++, v++) {
                        th_rng r = th_rng_make(1000u * (unsigned)layout + (uint64_t)v);
                        tcase tc;
                        matrix_case(&r, &tc, layout, k_dtypes[di], k_modes[mi], k_index_dtypes[ii], n2, v);
                        char label[64];
                        snprintf(label, sizeof label, "matrix case %d", v);
                        ok += check_case(&tc, label);
                        cases++;
                        tc_free(&tc);
                    }
                }
            }
        }
    }
    th_note("%d of %d cases matched", ok, cases);
    note_stats("matrix");
}

void test_grad_matrix_bsnd(void)
{
    run_matrix(REF_BSND, 4);
}

void test_grad_matrix_tnd(void)
{
    run_matrix(REF_TND, 4);
}

/* Every input stride pattern against every output pattern. Innermost stride 2 and stride-0
 * broadcast inputs may be refused (PARAM_INVALID, nothing written) but never answered wrongly. */
void test_grad_strides(void)
{
    check_stats_reset();
    static const tc_strides outs[] = {TC_CONTIGUOUS, TC_EXPLICIT, TC_PADDED, TC_PERMUTED};
    int refused[TC_STRIDE_KINDS] = {0};
    int v = 0;
    for (int in = 0; in < TC_STRIDE_KINDS; in++) {
        for (int out = 0; out < 4; out++) {
            for (int di = 0; di < 3; di++, v++) {
                th_rng r = th_rng_make(5000u + (uint64_t)v);
                gen_opts o;
                gen_opts_default(&o);
                o.poison = in != TC_BROADCAST; /* broadcast would copy poison into valid rows */
                tcase tc;
                tc_init(&tc);
                tc.dtype = k_dtypes[di];
                tc.dw_dtype = v % 2 ? LIG_FLOAT32 : tc.dtype;
                tc.idx_dtype = k_index_dtypes[v % 2];
                tc.p.N2 = 1 + v % 2;
                tc.p.N1 = tc.p.N2 * 2;
                tc.p.D = 7 + 8 * (v % 3);
                tc.p.K = 5;
                tc.p.B = 2;
                tc.in_strides = (tc_strides)in;
                tc.out_strides = outs[out];
                tc.short_form = tc.p.N2 == 1 && v % 4 == 0;
                if (v % 3 == 2) {
                    gen_tnd(&r, &tc, 5, 6, 1, 1);
                } else {
                    tc.p.S1 = 4;
                    tc.p.S2 = 6;
                    tc.has_seq_q = tc.has_seq_k = v % 3 == 1;
                    gen_bsnd(&r, &tc);
                }
                gen_data(&r, &tc, &o);
                int was_refused = 0;
                if (in == TC_INNER_STRIDED || in == TC_BROADCAST) {
                    check_case_or_refused(&tc, "strides", &was_refused);
                } else {
                    check_case(&tc, "strides");
                }
                refused[in] += was_refused;
                tc_free(&tc);
            }
        }
    }
    th_note("innermost-stride-2 inputs refused in %d of 12 cases, broadcast inputs in %d of 12",
            refused[TC_INNER_STRIDED], refused[TC_BROADCAST]);
    note_stats("strides");
}

/* Narrow bands in both modes, including bands that reach past the sequence and the largest
 * finite values next to INT64_MAX (overflow traps). */
void test_grad_band_limits(void)
{
    check_stats_reset();
    static const int64_t bands[] = {0, 1, 2, 5, INT64_MAX - 1, INT64_MAX};
    int v = 0;
    for (int mi = 0; mi < 2; mi++) {
        for (int pi = 0; pi < 6; pi++) {
            for (int ni = 0; ni < 6; ni++, v++) {
                th_rng r = th_rng_make(7000u + (uint64_t)v);
                gen_opts o;
                gen_opts_default(&o);
                tcase tc;
                tc_init(&tc);
                tc.dtype = k_dtypes[v % 3];
                tc.dw_dtype = tc.dtype;
                tc.p.sparse_mode = k_modes[mi];
                tc.p.pre_tokens = bands[pi];
                tc.p.next_tokens = bands[ni];
                tc.p.N2 = 1;
                tc.p.N1 = 2;
                tc.p.D = 6;
                tc.p.K = 6;
                tc.p.B = 2;
                gen_layout(&r, &tc, v % 2, 9, 12, 1, 0, 1);
                gen_data(&r, &tc, &o);
                check_case(&tc, "band");
                tc_free(&tc);
            }
        }
    }
    note_stats("bands");
}

/* Continuous random data (rounded to the dtype): tolerance only; slots with |S| < 1e-3 are turned
 * into padding so fp32 and float64 cannot disagree about the ReLU. */
void test_grad_continuous_data(void)
{
    check_stats_reset();
    int v = 0;
    for (int di = 0; di < 3; di++) {
        for (int layout = 0; layout < 2; layout++) {
            for (int rep = 0; rep < 3; rep++, v++) {
                th_rng r = th_rng_make(9000u + (uint64_t)v);
                gen_opts o;
                gen_opts_default(&o);
                o.grid = 0;
                o.min_abs_s = 1e-3;
                tcase tc;
                tc_init(&tc);
                tc.grid = 0;
                tc.dtype = k_dtypes[di];
                tc.dw_dtype = rep == 1 ? LIG_FLOAT32 : tc.dtype;
                tc.deterministic = rep != 2;
                tc.p.sparse_mode = rep == 0 ? 0 : 3;
                tc.p.N2 = 1 + rep;
                tc.p.N1 = tc.p.N2 * 3;
                tc.p.D = 31 + 16 * rep;
                tc.p.K = 9 + 4 * rep;
                tc.p.B = 2;
                gen_layout(&r, &tc, layout, 12, 16, 2, 1, rep > 0);
                gen_data(&r, &tc, &o);
                check_case(&tc, "continuous");
                tc_free(&tc);
            }
        }
    }
    note_stats("continuous");
}

/* Most slots skipped (padding, masked) with NaN/Inf dy there, many invalid rows with garbage. */
void test_grad_poison_is_ignored(void)
{
    check_stats_reset();
    for (int v = 0; v < 12; v++) {
        th_rng r = th_rng_make(11000u + (uint64_t)v);
        gen_opts o;
        gen_opts_default(&o);
        o.p_pad = 0.3;
        o.p_mask = 0.45;
        o.p_dup = 0.1;
        tcase tc;
        tc_init(&tc);
        tc.dtype = k_dtypes[v % 3];
        tc.dw_dtype = tc.dtype;
        tc.idx_dtype = k_index_dtypes[(v / 3) % 2];
        tc.p.sparse_mode = k_modes[v % 2];
        tc.p.pre_tokens = v % 4 < 2 ? 2 : INT64_MAX;
        tc.p.next_tokens = 1;
        tc.p.N2 = 2;
        tc.p.N1 = 4;
        tc.p.D = 9;
        tc.p.K = 8;
        tc.p.B = 3;
        gen_layout(&r, &tc, v % 2, 7, 9, 3, 2, 1);
        gen_data(&r, &tc, &o);
        check_case(&tc, "poison");
        tc_free(&tc);
    }
    note_stats("poison");
}

/* Indices as the forward writes them: distinct visible keys, -1 only as a tail (rows that see
 * fewer than K keys), causal. */
void test_grad_forward_like_indices(void)
{
    check_stats_reset();
    for (int v = 0; v < 12; v++) {
        th_rng r = th_rng_make(13000u + (uint64_t)v);
        gen_opts o;
        gen_opts_default(&o);
        o.tail_pad = 1;
        o.p_pad = 0.0;
        o.p_mask = 0.0;
        o.p_dup = 0.0;
        tcase tc;
        tc_init(&tc);
        tc.dtype = k_dtypes[v % 3];
        tc.dw_dtype = LIG_FLOAT32;
        tc.p.sparse_mode = 3;
        tc.p.N2 = 1;
        tc.p.N1 = 8;
        tc.p.D = 32;
        tc.p.K = 16;
        tc.p.B = 2;
        tc.short_form = 1;
        if (v % 2) {
            gen_tnd(&r, &tc, 20, 24, 0, 0);
        } else {
            tc.p.S1 = 20;
            tc.p.S2 = 24;
            gen_bsnd(&r, &tc);
        }
        gen_data(&r, &tc, &o);
        check_case(&tc, "forward-like");
        tc_free(&tc);
    }
    note_stats("forward-like");
}

/* head_num 0 ("take it from query") and N1, the short and long index forms with N2 == 1. */
void test_grad_head_num_and_forms(void)
{
    check_stats_reset();
    for (int v = 0; v < 16; v++) {
        th_rng r = th_rng_make(15000u + (uint64_t)v);
        gen_opts o;
        gen_opts_default(&o);
        tcase tc;
        tc_init(&tc);
        tc.dtype = k_dtypes[v % 3];
        tc.dw_dtype = (v / 3) % 2 ? LIG_FLOAT32 : tc.dtype;
        tc.p.N2 = 1;
        tc.p.N1 = 5;
        tc.p.D = 12;
        tc.p.K = 4;
        tc.p.B = 2;
        tc.head_num = v % 2 ? 0 : 5;
        tc.short_form = (v / 2) % 2;
        if ((v / 4) % 2) {
            gen_tnd(&r, &tc, 5, 6, 1, 1);
        } else {
            tc.p.S1 = 5;
            tc.p.S2 = 6;
            gen_bsnd(&r, &tc);
        }
        gen_data(&r, &tc, &o);
        check_case(&tc, "head_num/forms");
        tc_free(&tc);
    }
    note_stats("head_num/forms");
}

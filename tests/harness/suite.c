#include "suite.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_generators.h"
#include "framework.h"

const lig_dtype suite_float_dtypes[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
const lig_dtype suite_index_dtypes[2] = {LIG_INT32, LIG_INT64};
const int64_t suite_modes[2] = {0, 3};

int suite_check(const suite_op *op, suite_case *sc, const char *label, int *refused)
{
    char desc[640], full[1024];
    op->describe(sc, desc, sizeof desc);
    snprintf(full, sizeof full, "%s [%s]", label, desc);
    inst_result res;
    op->run(sc, &res);
    int ok;
    if (inst_result_ran(&res, full, refused, &ok)) {
        ok = op->check_result(sc, &res, full);
    }
    inst_result_free(&res);
    return ok;
}

static suite_case case_of(tcase *tc)
{
    suite_case sc;
    memset(&sc, 0, sizeof sc);
    sc.tc = tc;
    return sc;
}

/* Case v of a driver (but the matrix's): its generator, seeded with seed + v, and tc at tc_init's
 * defaults. */
static th_rng start_case(const suite_spec *s, int v, tcase *tc)
{
    tc_init(tc);
    return th_rng_make(s->seed + (uint64_t)v);
}

/* Case v of a driver: the test's data for tc (its shape set, lengths drawn), then the run and check
 * under `label`; frees tc. Returns suite_check's verdict. */
static int data_and_check(const suite_op *op, const suite_spec *s, th_rng *r, tcase *tc, int v, const char *label,
                          int *refused)
{
    suite_case sc = case_of(tc);
    s->data(r, &sc, v);
    const int ok = suite_check(op, &sc, label, refused);
    tc_free(tc);
    return ok;
}

void suite_matrix(const suite_op *op, const suite_spec *s, ref_layout layout)
{
    int cases = 0, ok = 0, v = 0;
    op->stats_reset();
    for (int di = 0; di < 3; di++) {
        for (int mi = 0; mi < 2; mi++) {
            for (int ii = 0; ii < 2; ii++) {
                for (int64_t n2 = 1; n2 <= 3; n2++) {
                    for (int rep = 0; rep < s->variants; rep++, v++) {
                        th_rng r = th_rng_make(s->seed + 1000u * (unsigned)layout + (uint64_t)v);
                        tcase tc;
                        gen_matrix_shape(&r, &tc, layout, suite_float_dtypes[di], suite_modes[mi],
                                         suite_index_dtypes[ii], n2, v, s->Ks, s->nK);
                        char label[96];
                        snprintf(label, sizeof label, "%s case %d", s->label, v);
                        ok += data_and_check(op, s, &r, &tc, v, label, NULL);
                        cases++;
                    }
                }
            }
        }
    }
    th_note("%d of %d cases matched", ok, cases);
    op->stats_note(s->label, 1);
}

void suite_strides(const suite_op *op, const suite_spec *s)
{
    static const tc_strides outs[] = {TC_CONTIGUOUS, TC_EXPLICIT, TC_PADDED, TC_PERMUTED};
    int refused[TC_STRIDE_KINDS] = {0};
    int v = 0;
    op->stats_reset();
    for (int in = 0; in < TC_STRIDE_KINDS; in++) {
        for (int out = 0; out < 4; out++) {
            for (int di = 0; di < 3; di++, v++) {
                tcase tc;
                th_rng r = start_case(s, v, &tc);
                tc.dtype = suite_float_dtypes[di];
                tc.idx_dtype = suite_index_dtypes[v % 2];
                tc_set_dims(&tc, 2, 2 * (1 + v % 2), 1 + v % 2, 7 + 8 * (v % 3), 5);
                tc.in_strides = (tc_strides)in;
                tc.out_strides = outs[out];
                tc.short_form = tc.p.N2 == 1 && v % 4 == 0;
                if (v % 3 == 2) {
                    gen_tnd(&r, &tc, 5, s->s2, 1, 1);
                } else {
                    tc.p.S1 = 4;
                    tc.p.S2 = s->s2;
                    tc.has_seq_q = tc.has_seq_k = v % 3 == 1;
                    gen_bsnd(&r, &tc);
                }
                int was_refused = 0;
                const int may_refuse = in == TC_INNER_STRIDED || in == TC_BROADCAST;
                data_and_check(op, s, &r, &tc, v, s->label, may_refuse ? &was_refused : NULL);
                refused[in] += was_refused;
            }
        }
    }
    th_note("innermost-stride-2 inputs refused in %d of 12 cases, broadcast inputs in %d of 12",
            refused[TC_INNER_STRIDED], refused[TC_BROADCAST]);
    op->stats_note(s->label, 1);
}

void suite_bands(const suite_op *op, const suite_spec *s)
{
    static const int64_t bands[] = {0, 1, 2, 5, INT64_MAX - 1, INT64_MAX};
    op->stats_reset();
    /* case v: mode v / 36, pre_tokens band (v / 6) % 6, next_tokens band v % 6 */
    for (int v = 0; v < 2 * 6 * 6; v++) {
        tcase tc;
        th_rng r = start_case(s, v, &tc);
        tc.dtype = suite_float_dtypes[v % 3];
        tc.p.sparse_mode = suite_modes[v / 36];
        tc.p.pre_tokens = bands[(v / 6) % 6];
        tc.p.next_tokens = bands[v % 6];
        tc_set_dims(&tc, 2, 2, 1, 6, s->Ks[v % s->nK]);
        gen_layout(&r, &tc, v % 2, 9, 12, 1, 0, 1);
        data_and_check(op, s, &r, &tc, v, s->label, NULL);
    }
    op->stats_note(s->label, 1);
}

void suite_continuous(const suite_op *op, const suite_spec *s)
{
    int v = 0;
    op->stats_reset();
    for (int di = 0; di < 3; di++) {
        for (int layout = 0; layout < 2; layout++) {
            for (int rep = 0; rep < 3; rep++, v++) {
                tcase tc;
                th_rng r = start_case(s, v, &tc);
                tc.grid = 0;
                tc.dtype = suite_float_dtypes[di];
                tc.p.sparse_mode = rep == 0 ? 0 : 3;
                tc_set_dims(&tc, 2, 1 + rep, 1 + rep, 31 + 16 * rep, 1);
                s->shape(&tc, v);
                gen_layout(&r, &tc, layout, s->s1, s->s2, 2, 1, rep > 0);
                data_and_check(op, s, &r, &tc, v, s->label, NULL);
            }
        }
    }
    op->stats_note(s->label, 1);
}

int64_t suite_long_rows(void)
{
    return th_env_int("LIG_TEST_QUICK", 0) ? 16384 : 131072;
}

static int same_outputs(const suite_op *op, const inst_result *a, const inst_result *b, const char *label,
                        const char *what)
{
    int ok = 1;
    for (int o = 0; o < op->n_outputs; o++) {
        ok &= CHECK(a->raw_bytes[o] == b->raw_bytes[o] && memcmp(a->raw[o], b->raw[o], a->raw_bytes[o]) == 0,
                    "%s: %s bytes differ %s", label, op->output_names[o], what);
    }
    return ok;
}

void suite_bitwise_threads(const suite_op *op, suite_case *sc, const int *threads, int n_threads, int reps,
                           const char *label)
{
    inst_result first;
    int have_first = 0;
    for (int ti = 0; ti < n_threads; ti++) {
        lig_set_num_threads(threads[ti]);
        for (int rep = 0; rep < reps; rep++) {
            inst_result res;
            op->run(sc, &res);
            if (!CHECK(res.st1 == LIG_SUCCESS && res.st2 == LIG_SUCCESS, "%s, %d threads: failed: %s", label,
                       threads[ti], res.message)) {
                inst_result_free(&res);
                continue;
            }
            if (!have_first) {
                op->check_result(sc, &res, label);
                first = res;
                have_first = 1;
                continue;
            }
            char what[96];
            snprintf(what, sizeof what, "with %d threads (run %d) from the first run", threads[ti], rep);
            same_outputs(op, &res, &first, label, what);
            inst_result_free(&res);
        }
    }
    if (have_first) {
        inst_result_free(&first);
    }
    lig_set_num_threads(0);
}

void suite_threads_change(const suite_op *op, suite_case *sc, const int (*pairs)[2], int n_pairs, int bitwise,
                          const char *label)
{
    inst_result first;
    memset(&first, 0, sizeof first);
    for (int i = 0; i < n_pairs; i++) {
        char lab[160];
        snprintf(lab, sizeof lab, "%s, %d then %d threads", label, pairs[i][0], pairs[i][1]);
        inst in;
        op->setup(sc, &in);
        lig_set_num_threads(pairs[i][0]);
        lig_status st = inst_phase1(&in);
        lig_set_num_threads(pairs[i][1]);
        if (CHECK(st == LIG_SUCCESS, "%s: phase 1: %s", lab, in.message)) {
            st = inst_phase2(&in, 0);
            if (CHECK(st == LIG_SUCCESS, "%s: phase 2: %s", lab, in.message)) {
                op->check_inst(&in, sc, lab);
                CHECK(inst_gaps_ok(&in), "%s: wrote outside the views", lab);
                if (bitwise) {
                    inst_result res;
                    memset(&res, 0, sizeof res);
                    const int which[3] = {in.first_output, in.first_output + 1, in.first_output + 2};
                    inst_keep_raw(&in, &res, which, op->n_outputs);
                    if (i == 0) {
                        first = res;
                    } else {
                        same_outputs(op, &res, &first, lab, "from a run without the change");
                        inst_result_free(&res);
                    }
                }
            }
        }
        inst_teardown(&in);
    }
    inst_result_free(&first);
    lig_set_num_threads(0);
}

void suite_large(const suite_op *op, suite_case *sc, const char *label)
{
    const double t0 = th_now();
    op->stats_reset();
    suite_check(op, sc, label, NULL);
    const double t1 = th_now();
    const int64_t rows = sc->tc != NULL ? ref_rows_q(&sc->tc->p) : 0;
    op->stats_note(label, (rows + 3) / 4);
    th_note("%s: %.2f s (library, reference and checks)", label, t1 - t0);
}

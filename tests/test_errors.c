/*
 * Every error path of contract section 6. Each case starts from a valid problem, breaks one thing,
 * and checks: the status (and the phase it surfaces in), that lig_get_last_error() names the
 * parameter and says "expected" and "got", that a failed phase 1 leaves no executor, and that
 * no input or output byte changed.
 *
 * Base problems (bf16, int32 indices, int64 lengths, mode 3):
 *   BSND  query [2,3,4,8]  key [2,5,2,8]  sparse_indices/dy [2,3,2,3]  weights [2,3,4]
 *         actual_seq_lengths_query [3,2], _key [5,3]
 *   TND   query [4,4,8]    key [6,2,8]    sparse_indices/dy [4,2,3]    weights [4,4]
 *         cumulative ends query [2,3], key [4,5]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backward_checks.h"
#include "error_cases.h"
#include "case_generators.h"
#include "float_formats.h"
#include "framework.h"
#include "lig.h"
#include "backward_runner.h"


static void base_case(tcase *tc, ref_layout layout, const errtest_case *c)
{
    th_rng r = th_rng_make(99);
    gen_opts o;
    gen_opts_default(&o);
    errtest_base_dims(tc, c != NULL ? c->edit_dims : NULL);
    if (layout == REF_TND) {
        /* only for its draws: the backward's TND data have always been drawn after them */
        gen_tnd(&r, tc, 1, 1, 0, 0);
    }
    errtest_base_layout(&r, tc, layout);
    gen_data(&r, tc, &o);
    if (c != NULL && c->edit_data != NULL) {
        c->edit_data(tc);
    }
}

/* The backward's side of the error runner: the base problem as a run_inst. */
static void grad_setup(const errtest_case *c, errtest_problem *p, inst *in)
{
    base_case(&p->tc, c->layout, c);
    run_setup(&p->tc, in);
}

static void grad_teardown(const errtest_case *c, errtest_problem *p, inst *in)
{
    (void)c;
    inst_teardown(in);
    tc_free(&p->tc);
}

static const errtest_operator backward = {.setup = grad_setup, .teardown = grad_teardown};

#define NCASES(a) (sizeof(a) / sizeof((a)[0]))
#define NULLPTR LIG_ERR_PARAM_NULLPTR
#define INVALID LIG_ERR_PARAM_INVALID

LIG_TEST(errors_null_pointers)
{
    static const errtest_case cases[] = {
        {.name = "query NULL", .kind = ET_NULL_ARG, .target = RB_Q, .phase = 1, .want = NULLPTR, .names = "query"},
        {.name = "key NULL", .kind = ET_NULL_ARG, .target = RB_K, .phase = 1, .want = NULLPTR, .names = "key"},
        {.name = "dy NULL", .kind = ET_NULL_ARG, .target = RB_DY, .phase = 1, .want = NULLPTR, .names = "dy"},
        {.name = "sparse_indices NULL", .kind = ET_NULL_ARG, .target = RB_IDX, .phase = 1, .want = NULLPTR,
         .names = "sparse_indices"},
        {.name = "weights NULL", .kind = ET_NULL_ARG, .target = RB_W, .phase = 1, .want = NULLPTR, .names = "weights"},
        {.name = "d_query NULL", .kind = ET_NULL_ARG, .target = RB_DQ, .phase = 1, .want = NULLPTR, .names = "d_query"},
        {.name = "d_key NULL", .kind = ET_NULL_ARG, .target = RB_DK, .phase = 1, .want = NULLPTR, .names = "d_key"},
        {.name = "d_weights NULL", .kind = ET_NULL_ARG, .target = RB_DW, .phase = 1, .want = NULLPTR,
         .names = "d_weights"},
        {.name = "TND query NULL", .layout = REF_TND, .kind = ET_NULL_ARG, .target = RB_Q, .phase = 1,
         .want = NULLPTR, .names = "query"},
    };
    errtest_run_pointer_defects(&backward, 0);
    errtest_run(&backward, cases, NCASES(cases));
}

LIG_TEST(errors_layout)
{
    static const errtest_case cases[] = {
        {.name = "layout bsnd", .kind = ET_LAYOUT, .str = "bsnd", .phase = 1, .want = INVALID, .names = "layout"},
        {.name = "layout empty", .kind = ET_LAYOUT, .str = "", .phase = 1, .want = INVALID, .names = "layout"},
        {.name = "layout 'BSND '", .kind = ET_LAYOUT, .str = "BSND ", .phase = 1, .want = INVALID, .names = "layout"},
        {.name = "layout BNSD", .kind = ET_LAYOUT, .str = "BNSD", .phase = 1, .want = INVALID, .names = "layout"},
        {.name = "layout tnd", .layout = REF_TND, .kind = ET_LAYOUT, .str = "tnd", .phase = 1, .want = INVALID,
         .names = "layout"},
        {.name = "TND string, BSND tensors", .kind = ET_LAYOUT, .str = "TND", .phase = 1, .want = INVALID,
         .names = "query|layout"},
        {.name = "BSND string, TND tensors", .layout = REF_TND, .kind = ET_LAYOUT, .str = "BSND", .phase = 1,
         .want = INVALID, .names = "query|layout"},
    };
    errtest_run(&backward, cases, NCASES(cases));
}

LIG_TEST(errors_rank)
{
    static const errtest_replacement defects[] = {
        {"query 3-D in BSND", REF_BSND, NULL, RB_Q, -1, 3, {2, 3, 32}, "query"},
        {"key 5-D", REF_BSND, NULL, RB_K, -1, 5, {2, 5, 2, 8, 1}, "key"},
        {"weights 2-D in BSND", REF_BSND, NULL, RB_W, -1, 2, {2, 12}, "weights"},
        {"dy short form with N2 = 2", REF_BSND, NULL, RB_DY, -1, 3, {2, 3, 6}, "dy|sparse_indices"},
        {"sparse_indices 2-D", REF_BSND, NULL, RB_IDX, -1, 2, {6, 6}, "sparse_indices|dy"},
        {"d_query 5-D", REF_BSND, NULL, RB_DQ, -1, 5, {2, 3, 4, 8, 1}, "d_query"},
        {"d_key 3-D", REF_BSND, NULL, RB_DK, -1, 3, {10, 2, 8}, "d_key"},
        {"d_weights 4-D", REF_BSND, NULL, RB_DW, -1, 4, {2, 3, 4, 1}, "d_weights"},
        {"actual_seq_lengths_query 2-D", REF_BSND, NULL, RB_SQ, -1, 2, {2, 1}, "actual_seq_lengths_query"},
        {"actual_seq_lengths_key 0-D", REF_BSND, NULL, RB_SK, -1, 0, {0}, "actual_seq_lengths_key"},
        {"TND query 4-D", REF_TND, NULL, RB_Q, -1, 4, {1, 4, 4, 8}, "query"},
        {"TND key 2-D", REF_TND, NULL, RB_K, -1, 2, {6, 16}, "key"},
        {"TND weights 3-D", REF_TND, NULL, RB_W, -1, 3, {1, 4, 4}, "weights"},
    };
    errtest_run_replacements(&backward, defects, NCASES(defects));
}

LIG_TEST(errors_shape_pairs)
{
    static const errtest_replacement defects[] = {
        {"key batch != query batch", REF_BSND, NULL, RB_K, -1, 4, {3, 5, 2, 8}, "key|query"},
        {"key D != query D", REF_BSND, NULL, RB_K, -1, 4, {2, 5, 2, 7}, "key|query"},
        {"key N2 != sparse_indices N2", REF_BSND, NULL, RB_K, -1, 4, {2, 5, 4, 8}, "key|sparse_indices|dy"},
        {"weights S1 != query S1", REF_BSND, NULL, RB_W, -1, 3, {2, 4, 4}, "weights|query"},
        {"weights N1 != query N1", REF_BSND, NULL, RB_W, -1, 3, {2, 3, 5}, "weights|query"},
        {"sparse_indices S1 != query S1", REF_BSND, NULL, RB_IDX, -1, 4, {2, 4, 2, 3}, "sparse_indices|dy|query"},
        {"sparse_indices N2 != key N2", REF_BSND, NULL, RB_IDX, -1, 4, {2, 3, 1, 3}, "sparse_indices|dy|key"},
        {"sparse_indices K != dy K", REF_BSND, NULL, RB_IDX, -1, 4, {2, 3, 2, 4}, "sparse_indices|dy"},
        {"dy batch != sparse_indices batch", REF_BSND, NULL, RB_DY, -1, 4, {1, 3, 2, 3}, "dy|sparse_indices|query"},
        {"d_query shape != query", REF_BSND, NULL, RB_DQ, -1, 4, {2, 3, 4, 9}, "d_query|query"},
        {"d_key shape != key", REF_BSND, NULL, RB_DK, -1, 4, {2, 6, 2, 8}, "d_key|key"},
        {"d_weights shape != weights", REF_BSND, NULL, RB_DW, -1, 3, {2, 3, 5}, "d_weights|weights"},
        {"actual_seq_lengths_query [3] != B", REF_BSND, NULL, RB_SQ, -1, 1, {3}, "actual_seq_lengths_query|query"},
        {"actual_seq_lengths_key [1] != B", REF_BSND, NULL, RB_SK, -1, 1, {1}, "actual_seq_lengths_key|key|query"},
        {"TND key ends [3] != query ends [2]", REF_TND, NULL, RB_SK, -1, 1, {3},
         "actual_seq_lengths_key|actual_seq_lengths_query"},
        {"TND weights T1 != query T1", REF_TND, NULL, RB_W, -1, 2, {5, 4}, "weights|query"},
        {"TND sparse_indices K != dy K", REF_TND, NULL, RB_IDX, -1, 3, {4, 2, 4}, "sparse_indices|dy"},
        {"TND d_key T2 != key T2", REF_TND, NULL, RB_DK, -1, 3, {7, 2, 8}, "d_key|key"},
    };
    errtest_run_replacements(&backward, defects, NCASES(defects));
}

static void dims_f32(tcase *tc)
{
    tc->dtype = tc->dw_dtype = LIG_FLOAT32;
}

LIG_TEST(errors_dtypes)
{
    static const errtest_replacement defects[] = {
        {"key f16, query bf16", REF_BSND, NULL, RB_K, LIG_FLOAT16, -1, {0}, "key"},
        {"dy f32, query bf16", REF_BSND, NULL, RB_DY, LIG_FLOAT32, -1, {0}, "dy"},
        {"weights f32, query bf16", REF_BSND, NULL, RB_W, LIG_FLOAT32, -1, {0}, "weights"},
        {"dy bf16, query f32", REF_BSND, dims_f32, RB_DY, LIG_BFLOAT16, -1, {0}, "dy"},
        {"query int32", REF_BSND, NULL, RB_Q, LIG_INT32, -1, {0}, "query|key"},
        {"sparse_indices float32", REF_BSND, NULL, RB_IDX, LIG_FLOAT32, -1, {0}, "sparse_indices"},
        {"sparse_indices bf16", REF_BSND, NULL, RB_IDX, LIG_BFLOAT16, -1, {0}, "sparse_indices"},
        {"d_query f32, query bf16", REF_BSND, NULL, RB_DQ, LIG_FLOAT32, -1, {0}, "d_query"},
        {"d_key f16, query bf16", REF_BSND, NULL, RB_DK, LIG_FLOAT16, -1, {0}, "d_key"},
        {"d_weights int32", REF_BSND, NULL, RB_DW, LIG_INT32, -1, {0}, "d_weights"},
        {"d_weights f16, query bf16", REF_BSND, NULL, RB_DW, LIG_FLOAT16, -1, {0}, "d_weights"},
        {"d_weights f16, query f32", REF_BSND, dims_f32, RB_DW, LIG_FLOAT16, -1, {0}, "d_weights"},
        {"actual_seq_lengths_query float32", REF_BSND, NULL, RB_SQ, LIG_FLOAT32, -1, {0}, "actual_seq_lengths_query"},
        {"actual_seq_lengths_key bf16", REF_BSND, NULL, RB_SK, LIG_BFLOAT16, -1, {0}, "actual_seq_lengths_key"},
        {"TND actual_seq_lengths_key float32", REF_TND, NULL, RB_SK, LIG_FLOAT32, -1, {0}, "actual_seq_lengths_key"},
    };
    errtest_run_replacements(&backward, defects, NCASES(defects));
}

static void dims_n2_3(tcase *tc)
{
    tc->p.N2 = 3; /* N1 = 4 is not a multiple */
}

LIG_TEST(errors_heads_modes_band)
{
    static const errtest_case cases[] = {
        {.name = "N1 % N2 != 0", .edit_dims = dims_n2_3, .phase = 1, .want = INVALID,
         .names = "key|query|head_num|sparse_indices"},
        {.name = "head_num 3 != N1 4", .kind = ET_HEAD_NUM, .value = 3, .phase = 1, .want = INVALID,
         .names = "head_num"},
        {.name = "head_num 8 != N1 4", .kind = ET_HEAD_NUM, .value = 8, .phase = 1, .want = INVALID,
         .names = "head_num"},
        {.name = "head_num -1", .kind = ET_HEAD_NUM, .value = -1, .phase = 1, .want = INVALID, .names = "head_num"},
    };
    errtest_run(&backward, cases, NCASES(cases));
    errtest_run_mode_band_defects(&backward, 0);
}

LIG_TEST(errors_seq_lengths)
{
    errtest_run_seq_defects(&backward, 0);
}

LIG_TEST(errors_overlap)
{
    static const errtest_case cases[] = {
        {.name = "d_query is query", .kind = ET_ALIAS, .target = RB_DQ, .source = RB_Q, .phase = 1,
         .want = INVALID, .names = "d_query|query"},
        {.name = "d_key overlaps key (shifted)", .kind = ET_ALIAS, .target = RB_DK, .source = RB_K, .shift = 3,
         .phase = 1, .want = INVALID, .names = "d_key|key"},
        {.name = "d_weights inside dy", .kind = ET_ALIAS, .target = RB_DW, .source = RB_DY, .shift = 0, .phase = 1,
         .want = INVALID, .names = "d_weights|dy"},
        {.name = "d_weights overlaps weights", .kind = ET_ALIAS, .target = RB_DW, .source = RB_W, .shift = 1,
         .phase = 1, .want = INVALID, .names = "d_weights|weights"},
        {.name = "d_weights over actual_seq_lengths_query", .kind = ET_ALIAS, .target = RB_DW, .source = RB_SQ,
         .shift = 0, .phase = 1, .want = INVALID, .names = "d_weights|actual_seq_lengths_query"},
        {.name = "TND d_query is query", .layout = REF_TND, .kind = ET_ALIAS, .target = RB_DQ, .source = RB_Q,
         .phase = 1, .want = INVALID, .names = "d_query|query"},
    };
    errtest_run(&backward, cases, NCASES(cases));
}

LIG_TEST(errors_workspace)
{
    errtest_run_workspace_defects(&backward, 0);
}

/* Flat slot of (row, g, j) in the base problems (N2 = 2, K = 3). */
static int64_t slot(int64_t row, int64_t g, int64_t j)
{
    return (row * 2 + g) * 3 + j;
}

/* BSND rows: b*3 + t; batch 1 has 2 valid rows and 3 keys. */
static void idx_eq_lk(tcase *tc) { tc->idx[slot(3, 0, 0)] = 3; }
static void idx_minus2(tcase *tc) { tc->idx[slot(0, 1, 1)] = -2; }
static void idx_int32_min(tcase *tc) { tc->idx[slot(4, 1, 2)] = INT32_MIN; }
static void idx_eq_s2_no_key_lengths(tcase *tc)
{
    tc->has_seq_k = 0;
    tc_sync_seq(tc);
    tc->idx[slot(0, 0, 2)] = 5; /* S2 */
}
static void idx_int64_huge(tcase *tc)
{
    tc->idx_dtype = LIG_INT64;
    tc->idx[slot(1, 0, 0)] = (int64_t)1 << 40;
}
static void idx_int64_wraps_to_valid(tcase *tc)
{
    /* 2^32 + 1 would be a valid index 1 if truncated to 32 bits. */
    tc->idx_dtype = LIG_INT64;
    tc->idx[slot(1, 0, 0)] = ((int64_t)1 << 32) + 1;
}
/* TND rows 0-1 are batch 0 (4 keys), row 2 is batch 1 (1 key), row 3 is past the end. */
static void tnd_idx_beyond_batch(tcase *tc) { tc->idx[slot(0, 1, 0)] = 4; }
static void tnd_idx_beyond_second_batch(tcase *tc) { tc->idx[slot(2, 0, 2)] = 1; }

LIG_TEST(errors_index_range)
{
    static const errtest_case cases[] = {
        {.name = "index == batch key length", .edit_data = idx_eq_lk, .phase = 2, .want = INVALID,
         .names = "sparse_indices"},
        {.name = "index -2", .edit_data = idx_minus2, .phase = 2, .want = INVALID, .names = "sparse_indices"},
        {.name = "index INT32_MIN", .edit_data = idx_int32_min, .phase = 2, .want = INVALID,
         .names = "sparse_indices"},
        {.name = "index == S2 without key lengths", .edit_data = idx_eq_s2_no_key_lengths, .phase = 2,
         .want = INVALID, .names = "sparse_indices"},
        {.name = "int64 index 2^40", .edit_data = idx_int64_huge, .phase = 2, .want = INVALID,
         .names = "sparse_indices"},
        {.name = "int64 index 2^32+1", .edit_data = idx_int64_wraps_to_valid, .phase = 2, .want = INVALID,
         .names = "sparse_indices"},
        {.name = "TND index past its batch's keys", .layout = REF_TND, .edit_data = tnd_idx_beyond_batch,
         .phase = 2, .want = INVALID, .names = "sparse_indices"},
        {.name = "TND index past the second batch's keys", .layout = REF_TND,
         .edit_data = tnd_idx_beyond_second_batch, .phase = 2, .want = INVALID, .names = "sparse_indices"},
    };
    errtest_run(&backward, cases, NCASES(cases));
}

/* Phase 1 with the tensor at `slot` replaced by a bfloat16 one of shape `bad` must fail with a
 * message naming `param`, the shape it expected and the one it got. */
static void check_shape_message(run_inst *ri, int slot, const int64_t bad[4], const char *param, const char *expected,
                                const char *got)
{
    ri->arg[slot] = inst_new_tensor(ri, LIG_BFLOAT16, 4, bad);
    lig_status st = inst_phase1(ri);
    if (CHECK(st == LIG_ERR_PARAM_INVALID, "%s %s accepted (%d)", param, got, (int)st)) {
        CHECK(strstr(ri->message, param) != NULL, "message lacks %s: \"%s\"", param, ri->message);
        CHECK(strstr(ri->message, expected) != NULL, "message lacks \"%s\": \"%s\"", expected, ri->message);
        CHECK(strstr(ri->message, got) != NULL, "message lacks \"%s\": \"%s\"", got, ri->message);
    }
}

/* Shapes are printed as [a,b,c] (the contract's example: "dy: expected shape [2,3,2048] (like
 * sparse_indices), got [2,3,64,128]"). */
LIG_TEST(errors_message_shapes)
{
    /* d_query [2,3,4,9] against query [2,3,4,8] */
    {
        tcase tc;
        base_case(&tc, REF_BSND, NULL);
        run_inst ri;
        run_setup(&tc, &ri);
        const int64_t bad[4] = {2, 3, 4, 9};
        check_shape_message(&ri, RB_DQ, bad, "d_query", "expected shape [2,3,4,8]", "got [2,3,4,9]");
        ri.executor = NULL;
        inst_teardown(&ri);
        tc_free(&tc);
    }
    /* the contract's own example: N2 = 1, sparse_indices [2,3,2048], dy [2,3,64,128] */
    {
        tcase tc;
        tc_init(&tc);
        th_rng r = th_rng_make(5);
        gen_opts o;
        gen_opts_default(&o);
        tc_set_dims(&tc, 2, 2, 1, 4, 2048);
        tc.short_form = 1;
        gen_layout(&r, &tc, 0, 3, 4, 0, 0, 0);
        gen_data(&r, &tc, &o);
        run_inst ri;
        run_setup(&tc, &ri);
        const int64_t bad[4] = {2, 3, 64, 128};
        check_shape_message(&ri, RB_DY, bad, "dy", "expected shape [2,3,2048]", "got [2,3,64,128]");
        CHECK(inst_all_unchanged(&ri), "the failed call wrote somewhere");
        ri.executor = NULL;
        inst_teardown(&ri);
        tc_free(&tc);
    }
}

/* Garbage indices and non-finite dy in invalid rows (BSND t >= Lq, TND rows past the last end)
 * and out-of-range values in masked positions are not errors. */
static void invalid_rows_garbage(tcase *tc)
{
    /* BSND row b=1, t=2 is invalid (Lq = 2). */
    for (int64_t g = 0; g < 2; g++) {
        for (int64_t j = 0; j < 3; j++) {
            tc->idx[slot(5, g, j)] = j == 0 ? INT32_MIN : j == 1 ? -2 : 1000;
        }
    }
}
static void tnd_past_end_garbage(tcase *tc)
{
    for (int64_t g = 0; g < 2; g++) {
        for (int64_t j = 0; j < 3; j++) {
            tc->idx[slot(3, g, j)] = j == 0 ? INT32_MIN : j == 1 ? -5 : 6;
        }
    }
}

LIG_TEST(errors_invalid_rows_are_not_read)
{
    errtest_case c;
    memset(&c, 0, sizeof c);
    tcase tc;
    c.edit_data = invalid_rows_garbage;
    base_case(&tc, REF_BSND, &c);
    CHECK(check_case(&tc, "BSND garbage in rows past the query length"), "BSND garbage rows");
    tc_free(&tc);
    c.edit_data = tnd_past_end_garbage;
    base_case(&tc, REF_TND, &c);
    CHECK(check_case(&tc, "TND garbage in rows past the last end"), "TND garbage rows");
    tc_free(&tc);
}

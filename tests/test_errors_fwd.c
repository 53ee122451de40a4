/*
 * Error paths of the forward (lig_indexer_get_workspace_size / lig_indexer) and the KL step
 * (lig_kl_loss_and_dy_get_workspace_size / lig_kl_loss_and_dy), contract section 6 and the
 * README's decisions. Each case starts from a valid problem, breaks one thing and checks the
 * status and the phase it surfaces in, that lig_get_last_error() names the parameter and says
 * "expected" and "got" (and shows shapes as [a,b,c] where a shape is wrong), that a failed
 * phase 1 leaves no executor, and that no input or output byte changed.
 *
 * Forward base problems (bf16, INT32 indices, INT64 lengths, mode 3, sparse_count 3):
 *   BSND query [2,3,4,8] key [2,5,2,8] weights [2,3,4] sparse_indices/values [2,3,2,3]
 *        lengths query [3,2], key [5,3]
 *   TND  query [4,4,8] key [6,2,8] weights [4,4] sparse_indices/values [4,2,3]
 *        cumulative ends query [2,3], key [4,5]
 * KL base problem (FLOAT32): sparse_values, sparse_indices (INT64), target, dy [2,3,8], loss [1].
 *
 * An executor handed to the wrong phase 2 must be refused and still consumed: nothing frees it
 * afterwards, so a leak would show up in the sanitizer run (LeakSanitizer).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error_cases.h"
#include "case_generators.h"
#include "float_formats.h"
#include "framework.h"
#include "lig.h"
#include "forward_kl_checks.h"
#include "forward_kl_runner.h"
#include "backward_runner.h"

/* Phase-2 modes beyond errtest_ws's. */
typedef enum fe_ws {
    FW_STREAM = ERRTEST_WS_COMMON, /* a non-NULL stream */
    FW_FOREIGN_FWD,                /* a forward executor handed to this operator's phase 2 */
    FW_FOREIGN_KL,                 /* a KL-step executor handed to this operator's phase 2 */
    FW_FOREIGN_GRAD,               /* a backward executor handed to this operator's phase 2 */
    FW_TO_GRAD                     /* this operator's executor handed to lig_indexer_grad */
} fe_ws;


#define NCASES(a) (sizeof(a) / sizeof((a)[0]))
#define NULLPTR LIG_ERR_PARAM_NULLPTR
#define INVALID LIG_ERR_PARAM_INVALID

/* ---- base problems ---- */

static void fwd_base(tcase *tc, ref_layout layout, const errtest_case *c)
{
    th_rng r = th_rng_make(99);
    fwd_gen_opts o;
    fwd_gen_opts_default(&o);
    errtest_base_dims(tc, c != NULL ? c->edit_dims : NULL);
    errtest_base_layout(&r, tc, layout);
    fwd_gen_data(&r, tc, &o);
    if (c != NULL && c->edit_data != NULL) {
        c->edit_data(tc);
    }
}

static void kl_base(klcase *kc, const errtest_case *c)
{
    th_rng r = th_rng_make(98);
    kl_init(kc);
    kl_set_shape(kc, 3, (const int64_t[]){2, 3, 8});
    kc->has_indices = c == NULL || !c->no_indices;
    kc->idx_dtype = LIG_INT64;
    kl_alloc(kc);
    kl_gen_opts o;
    kl_gen_opts_default(&o);
    o.p_empty_row = 0.0;
    kl_gen_data(&r, kc, &o);
    if (c != NULL && c->edit_kc != NULL) {
        c->edit_kc(kc);
    }
}

/* ---- edits ---- */

/* A lengths array placed inside an output (ET_ALIAS onto FW_SQ / FW_SK): give it valid contents,
 * so that only the overlap is wrong, and take the output's snapshot again. */
static void after_edit(const errtest_case *c, const errtest_problem *p, inst *oi, unsigned char *alias)
{
    if (c->kind != ET_ALIAS || oi->kind != OP_FORWARD || (c->target != FW_SQ && c->target != FW_SK)) return;
    const tcase *tc = &p->tc;
    const int64_t *v = c->target == FW_SQ ? tc->seq_q : tc->seq_k;
    for (int64_t b = 0; b < tc->p.B; b++) {
        th_store_int(alias, oi->buf[c->target].dtype, b, v[b]);
    }
    tbuf_snapshot(&oi->buf[c->source]);
}

/* ---- executors of the other operators ---- */

typedef struct foreign {
    int kind; /* 0 forward, 1 KL, 2 backward */
    tcase tc;
    klcase kc;
    op_inst oi;
    run_inst ri;
    lig_executor *exec;
    uint64_t ws;
} foreign;

static int foreign_make(foreign *f, int kind)
{
    memset(f, 0, sizeof *f);
    f->kind = kind;
    lig_status st;
    if (kind == 0) {
        fwd_base(&f->tc, REF_BSND, NULL);
        fwd_setup(&f->tc, 1, f->tc.dtype, &f->oi);
        st = inst_phase1(&f->oi);
        f->exec = f->oi.executor;
        f->ws = f->oi.workspace_size;
        f->oi.executor = NULL;
    } else if (kind == 1) {
        kl_base(&f->kc, NULL);
        kl_setup(&f->kc, &f->oi);
        st = inst_phase1(&f->oi);
        f->exec = f->oi.executor;
        f->ws = f->oi.workspace_size;
        f->oi.executor = NULL;
    } else {
        th_rng r = th_rng_make(97);
        gen_opts o;
        gen_opts_default(&o);
        tc_init(&f->tc);
        f->tc.p.N1 = 2;
        f->tc.p.D = 4;
        f->tc.p.K = 2;
        f->tc.p.S1 = 3;
        f->tc.p.S2 = 4;
        gen_bsnd(&r, &f->tc);
        gen_data(&r, &f->tc, &o);
        run_setup(&f->tc, &f->ri);
        st = inst_phase1(&f->ri);
        f->exec = f->ri.executor;
        f->ws = f->ri.workspace_size;
        f->ri.executor = NULL;
    }
    return CHECK(st == LIG_SUCCESS && f->exec != NULL, "could not make a %s executor",
                 kind == 0 ? "forward" : kind == 1 ? "KL" : "backward");
}

/* Tears down; returns 1 when the foreign operator's tensors are untouched. */
static int foreign_free(foreign *f)
{
    int unchanged;
    if (f->kind == 2) {
        unchanged = inst_all_unchanged(&f->ri);
        inst_teardown(&f->ri);
    } else {
        unchanged = inst_all_unchanged(&f->oi);
        inst_teardown(&f->oi);
    }
    if (f->kind == 1) {
        kl_free(&f->kc);
    } else {
        tc_free(&f->tc);
    }
    return unchanged;
}

/* ---- one case ---- */

/* The modes of fe_ws; errtest_phase2 the others. */
static lig_status run_phase2_case(const errtest_case *c, op_inst *oi, int *not_run)
{
    lig_status st;
    *not_run = 0;
    switch (c->ws) {
    case FW_STREAM: {
        void *ws = oi->workspace_size ? th_xmalloc((size_t)oi->workspace_size) : NULL;
        int dummy_stream = 0;
        st = oi->launch(ws, oi->workspace_size, oi->executor, &dummy_stream);
        oi->executor = NULL;
        snprintf(oi->message, sizeof oi->message, "%s", lig_get_last_error());
        free(ws);
        return st;
    }
    case FW_FOREIGN_FWD:
    case FW_FOREIGN_KL:
    case FW_FOREIGN_GRAD: {
        foreign f;
        if (!foreign_make(&f, c->ws == FW_FOREIGN_FWD ? 0 : c->ws == FW_FOREIGN_KL ? 1 : 2)) {
            foreign_free(&f); /* foreign_make's check failed, saying why the case cannot run */
            *not_run = 1;
            return INVALID;
        }
        const uint64_t size = (f.ws > oi->workspace_size ? f.ws : oi->workspace_size) + 4096;
        void *ws = th_xmalloc((size_t)size);
        st = oi->launch(ws, size, f.exec, NULL); /* consumes f.exec */
        snprintf(oi->message, sizeof oi->message, "%s", lig_get_last_error());
        free(ws);
        CHECK(foreign_free(&f), "%s: the refused call wrote to the other operator's tensors", c->name);
        return st; /* this operator's own executor is destroyed by inst_teardown */
    }
    case FW_TO_GRAD: {
        const uint64_t size = oi->workspace_size + 4096;
        void *ws = th_xmalloc((size_t)size);
        st = lig_indexer_grad(ws, size, oi->executor, NULL);
        oi->executor = NULL;
        snprintf(oi->message, sizeof oi->message, "%s", lig_get_last_error());
        free(ws);
        return st;
    }
    default: return errtest_phase2(oi, c->ws, c->name, not_run);
    }
}

/* The forward's and the KL step's side of the error runner. */
static void setup(const errtest_case *c, errtest_problem *p, inst *oi)
{
    if (c->op == OP_FORWARD) {
        fwd_base(&p->tc, c->layout, c);
        fwd_setup(&p->tc, !c->no_values, p->tc.dtype, oi);
    } else {
        kl_base(&p->kc, c);
        kl_setup(&p->kc, oi);
    }
}

static void teardown(const errtest_case *c, errtest_problem *p, inst *oi)
{
    inst_teardown(oi);
    if (c->op == OP_FORWARD) {
        tc_free(&p->tc);
    } else {
        kl_free(&p->kc);
    }
}

static const errtest_operator forward_or_kl = {
    .setup = setup, .after_edit = after_edit, .phase2 = run_phase2_case, .teardown = teardown};

/* ---- forward ---- */

LIG_TEST(errors_fwd_null_pointers)
{
    static const errtest_case cases[] = {
        {.name = "query NULL", .kind = ET_NULL_ARG, .target = FW_Q, .phase = 1, .want = NULLPTR, .names = "query"},
        {.name = "key NULL", .kind = ET_NULL_ARG, .target = FW_K, .phase = 1, .want = NULLPTR, .names = "key"},
        {.name = "weights NULL", .kind = ET_NULL_ARG, .target = FW_W, .phase = 1, .want = NULLPTR,
         .names = "weights"},
        {.name = "sparse_indices NULL", .kind = ET_NULL_ARG, .target = FW_IDX, .phase = 1, .want = NULLPTR,
         .names = "sparse_indices"},
        {.name = "TND sparse_indices NULL", .layout = REF_TND, .kind = ET_NULL_ARG, .target = FW_IDX, .phase = 1,
         .want = NULLPTR, .names = "sparse_indices"},
        {.name = "sparse_values NULL is fine", .no_values = 1, .phase = 2, .ws = ERRTEST_WS_EXACT, .want = LIG_SUCCESS,
         .names = ""},
    };
    errtest_run_pointer_defects(&forward_or_kl, OP_FORWARD);
    errtest_run(&forward_or_kl, cases, NCASES(cases));
}

static void dims_f32(tcase *tc) { tc->dtype = LIG_FLOAT32; }
static void dims_n2_3(tcase *tc) { tc->p.N2 = 3; } /* N1 = 4 */

LIG_TEST(errors_fwd_layout_rank_shape)
{
    static const errtest_case cases[] = {
        {.name = "layout bsnd", .kind = ET_LAYOUT, .str = "bsnd", .phase = 1, .want = INVALID, .names = "layout"},
        {.name = "layout empty", .kind = ET_LAYOUT, .str = "", .phase = 1, .want = INVALID, .names = "layout"},
        {.name = "layout 'BSND '", .kind = ET_LAYOUT, .str = "BSND ", .phase = 1, .want = INVALID,
         .names = "layout"},
        {.name = "TND string, BSND tensors", .kind = ET_LAYOUT, .str = "TND", .phase = 1, .want = INVALID,
         .names = "query|layout"},
        {.name = "BSND string, TND tensors", .layout = REF_TND, .kind = ET_LAYOUT, .str = "BSND", .phase = 1,
         .want = INVALID, .names = "query|layout"},
        {.name = "query 3-D in BSND", .kind = ET_REPLACE, .target = FW_Q, .dtype = -1, .ndim = 3,
         .shape = {2, 3, 32}, .phase = 1, .want = INVALID, .names = "query"},
        {.name = "key 5-D", .kind = ET_REPLACE, .target = FW_K, .dtype = -1, .ndim = 5, .shape = {2, 5, 2, 8, 1},
         .phase = 1, .want = INVALID, .names = "key"},
        {.name = "weights 2-D in BSND", .kind = ET_REPLACE, .target = FW_W, .dtype = -1, .ndim = 2,
         .shape = {2, 12}, .phase = 1, .want = INVALID, .names = "weights"},
        {.name = "sparse_indices 2-D", .kind = ET_REPLACE, .target = FW_IDX, .dtype = -1, .ndim = 2,
         .shape = {6, 6}, .phase = 1, .want = INVALID, .names = "sparse_indices"},
        {.name = "sparse_indices short form with N2 = 2", .kind = ET_REPLACE, .target = FW_IDX, .dtype = -1,
         .ndim = 3, .shape = {2, 3, 6}, .phase = 1, .want = INVALID, .names = "sparse_indices",
         .has = {"got rank 3 shape [2,3,6]", NULL}},
        {.name = "sparse_values rank 3", .kind = ET_REPLACE, .target = FW_VAL, .dtype = -1, .ndim = 3,
         .shape = {2, 3, 6}, .phase = 1, .want = INVALID, .names = "sparse_values"},
        {.name = "TND query 4-D", .layout = REF_TND, .kind = ET_REPLACE, .target = FW_Q, .dtype = -1, .ndim = 4,
         .shape = {1, 4, 4, 8}, .phase = 1, .want = INVALID, .names = "query"},
        {.name = "actual_seq_lengths_query 2-D", .kind = ET_REPLACE, .target = FW_SQ, .dtype = -1, .ndim = 2,
         .shape = {2, 1}, .phase = 1, .want = INVALID, .names = "actual_seq_lengths_query"},
        {.name = "key batch != query batch", .kind = ET_REPLACE, .target = FW_K, .dtype = -1, .ndim = 4,
         .shape = {3, 5, 2, 8}, .phase = 1, .want = INVALID, .names = "key|query", .has = {"[3,5,2,8]", NULL}},
        {.name = "key D != query D", .kind = ET_REPLACE, .target = FW_K, .dtype = -1, .ndim = 4,
         .shape = {2, 5, 2, 7}, .phase = 1, .want = INVALID, .names = "key|query"},
        {.name = "weights heads != N1", .kind = ET_REPLACE, .target = FW_W, .dtype = -1, .ndim = 3,
         .shape = {2, 3, 5}, .phase = 1, .want = INVALID, .names = "weights",
         .has = {"expected shape [2,3,4]", "got [2,3,5]"}},
        {.name = "sparse_indices K != sparse_count", .kind = ET_REPLACE, .target = FW_IDX, .dtype = -1, .ndim = 4,
         .shape = {2, 3, 2, 4}, .phase = 1, .want = INVALID, .names = "sparse_indices|sparse_count",
         .has = {"expected shape [2,3,2,3]", "got [2,3,2,4]"}},
        {.name = "sparse_indices rows != S1", .kind = ET_REPLACE, .target = FW_IDX, .dtype = -1, .ndim = 4,
         .shape = {2, 4, 2, 3}, .phase = 1, .want = INVALID, .names = "sparse_indices",
         .has = {"got [2,4,2,3]", NULL}},
        {.name = "sparse_indices N2 != key's", .kind = ET_REPLACE, .target = FW_IDX, .dtype = -1, .ndim = 4,
         .shape = {2, 3, 1, 3}, .phase = 1, .want = INVALID, .names = "sparse_indices"},
        {.name = "sparse_values unlike sparse_indices", .kind = ET_REPLACE, .target = FW_VAL, .dtype = -1,
         .ndim = 4, .shape = {2, 3, 2, 4}, .phase = 1, .want = INVALID, .names = "sparse_values",
         .has = {"expected shape [2,3,2,3]", "got [2,3,2,4]"}},
        {.name = "N1 % N2 != 0", .edit_dims = dims_n2_3, .phase = 1, .want = INVALID,
         .names = "key|query|sparse_indices"},
        {.name = "actual_seq_lengths_query [3] for B = 2", .kind = ET_REPLACE, .target = FW_SQ, .dtype = -1,
         .ndim = 1, .shape = {3}, .phase = 1, .want = INVALID, .names = "actual_seq_lengths_query",
         .has = {"[3]", NULL}},
        {.name = "TND sparse_indices rows != T1", .layout = REF_TND, .kind = ET_REPLACE, .target = FW_IDX,
         .dtype = -1, .ndim = 3, .shape = {5, 2, 3}, .phase = 1, .want = INVALID, .names = "sparse_indices",
         .has = {"expected shape [4,2,3]", "got [5,2,3]"}},
    };
    errtest_run(&forward_or_kl, cases, NCASES(cases));
}

LIG_TEST(errors_fwd_dtypes)
{
    static const errtest_case cases[] = {
        {.name = "sparse_indices FLOAT32", .kind = ET_REPLACE, .target = FW_IDX, .dtype = LIG_FLOAT32, .ndim = -1,
         .phase = 1, .want = INVALID, .names = "sparse_indices"},
        {.name = "sparse_indices BFLOAT16", .kind = ET_REPLACE, .target = FW_IDX, .dtype = LIG_BFLOAT16,
         .ndim = -1, .phase = 1, .want = INVALID, .names = "sparse_indices"},
        {.name = "sparse_values INT32", .kind = ET_REPLACE, .target = FW_VAL, .dtype = LIG_INT32, .ndim = -1,
         .phase = 1, .want = INVALID, .names = "sparse_values"},
        {.name = "sparse_values INT64", .kind = ET_REPLACE, .target = FW_VAL, .dtype = LIG_INT64, .ndim = -1,
         .phase = 1, .want = INVALID, .names = "sparse_values"},
        {.name = "sparse_values FLOAT16, query BFLOAT16", .kind = ET_REPLACE, .target = FW_VAL,
         .dtype = LIG_FLOAT16, .ndim = -1, .phase = 1, .want = INVALID, .names = "sparse_values"},
        {.name = "sparse_values BFLOAT16, query FLOAT32", .edit_dims = dims_f32, .kind = ET_REPLACE, .target = FW_VAL,
         .dtype = LIG_BFLOAT16, .ndim = -1, .phase = 1, .want = INVALID, .names = "sparse_values"},
        {.name = "sparse_values FLOAT32 is fine", .kind = ET_REPLACE, .target = FW_VAL, .dtype = LIG_FLOAT32,
         .ndim = -1, .phase = 2, .ws = ERRTEST_WS_EXACT, .want = LIG_SUCCESS, .names = ""},
        {.name = "key FLOAT16, query BFLOAT16", .kind = ET_REPLACE, .target = FW_K, .dtype = LIG_FLOAT16,
         .ndim = -1, .phase = 1, .want = INVALID, .names = "key"},
        {.name = "weights FLOAT32, query BFLOAT16", .kind = ET_REPLACE, .target = FW_W, .dtype = LIG_FLOAT32,
         .ndim = -1, .phase = 1, .want = INVALID, .names = "weights"},
        {.name = "query INT32", .kind = ET_REPLACE, .target = FW_Q, .dtype = LIG_INT32, .ndim = -1, .phase = 1,
         .want = INVALID, .names = "query|key"},
        {.name = "actual_seq_lengths_key FLOAT32", .kind = ET_REPLACE, .target = FW_SK, .dtype = LIG_FLOAT32,
         .ndim = -1, .phase = 1, .want = INVALID, .names = "actual_seq_lengths_key"},
        {.name = "TND actual_seq_lengths_query BFLOAT16", .layout = REF_TND, .kind = ET_REPLACE, .target = FW_SQ,
         .dtype = LIG_BFLOAT16, .ndim = -1, .phase = 1, .want = INVALID, .names = "actual_seq_lengths_query"},
    };
    errtest_run(&forward_or_kl, cases, NCASES(cases));
}

LIG_TEST(errors_fwd_count_modes_band)
{
    static const errtest_case cases[] = {
        {.name = "sparse_count 0", .kind = ET_COUNT, .value = 0, .phase = 1, .want = INVALID,
         .names = "sparse_count"},
        {.name = "sparse_count -1", .kind = ET_COUNT, .value = -1, .phase = 1, .want = INVALID,
         .names = "sparse_count"},
        {.name = "sparse_count INT64_MIN", .kind = ET_COUNT, .value = INT64_MIN, .phase = 1, .want = INVALID,
         .names = "sparse_count"},
        {.name = "sparse_count 4, K of sparse_indices 3", .kind = ET_COUNT, .value = 4, .phase = 1,
         .want = INVALID, .names = "sparse_indices|sparse_count", .has = {"[2,3,2,4]", "[2,3,2,3]"}},
        {.name = "sparse_count 2, K of sparse_indices 3", .kind = ET_COUNT, .value = 2, .phase = 1,
         .want = INVALID, .names = "sparse_indices|sparse_count"},
    };
    errtest_run(&forward_or_kl, cases, NCASES(cases));
    errtest_run_mode_band_defects(&forward_or_kl, OP_FORWARD);
}

LIG_TEST(errors_fwd_seq_lengths)
{
    errtest_run_seq_defects(&forward_or_kl, OP_FORWARD);
}

LIG_TEST(errors_fwd_overlap)
{
    static const errtest_case cases[] = {
        {.name = "sparse_indices inside query", .kind = ET_ALIAS, .target = FW_IDX, .source = FW_Q, .phase = 1,
         .want = INVALID, .names = "sparse_indices|query"},
        {.name = "sparse_indices overlaps key (shifted)", .kind = ET_ALIAS, .target = FW_IDX, .source = FW_K,
         .shift = 3, .phase = 1, .want = INVALID, .names = "sparse_indices|key"},
        {.name = "sparse_values overlaps weights", .kind = ET_ALIAS, .target = FW_VAL, .source = FW_W, .shift = 1,
         .phase = 1, .want = INVALID, .names = "sparse_values|weights"},
        {.name = "sparse_values over sparse_indices", .kind = ET_ALIAS, .target = FW_VAL, .source = FW_IDX,
         .shift = 2, .phase = 1, .want = INVALID, .names = "sparse_values|sparse_indices"},
        {.name = "actual_seq_lengths_key inside sparse_indices", .kind = ET_ALIAS, .target = FW_SK,
         .source = FW_IDX, .shift = 0, .phase = 1, .want = INVALID,
         .names = "sparse_indices|actual_seq_lengths_key"},
        {.name = "actual_seq_lengths_query inside sparse_values", .kind = ET_ALIAS, .target = FW_SQ,
         .source = FW_VAL, .shift = 4, .phase = 1, .want = INVALID,
         .names = "sparse_values|actual_seq_lengths_query"},
        {.name = "sparse_indices with overlapping strides", .kind = ET_SELF_OVERLAP, .target = FW_IDX, .phase = 1,
         .want = INVALID, .names = "sparse_indices"},
        {.name = "sparse_values with overlapping strides", .kind = ET_SELF_OVERLAP, .target = FW_VAL, .phase = 1,
         .want = INVALID, .names = "sparse_values"},
        {.name = "TND sparse_indices inside query", .layout = REF_TND, .kind = ET_ALIAS, .target = FW_IDX,
         .source = FW_Q, .phase = 1, .want = INVALID, .names = "sparse_indices|query"},
    };
    errtest_run(&forward_or_kl, cases, NCASES(cases));
}

LIG_TEST(errors_fwd_workspace_executor)
{
    static const errtest_case cases[] = {
        {.name = "non-NULL stream", .phase = 2, .ws = FW_STREAM, .want = INVALID, .names = "stream"},
        {.name = "KL-step executor to lig_indexer", .phase = 2, .ws = FW_FOREIGN_KL, .want = INVALID,
         .names = "executor"},
        {.name = "backward executor to lig_indexer", .phase = 2, .ws = FW_FOREIGN_GRAD, .want = INVALID,
         .names = "executor"},
        {.name = "forward executor to lig_indexer_grad", .phase = 2, .ws = FW_TO_GRAD, .want = INVALID,
         .names = "executor"},
    };
    errtest_run_workspace_defects(&forward_or_kl, OP_FORWARD);
    errtest_run(&forward_or_kl, cases, NCASES(cases));
}

/* INT32 indices cannot address more than 2^31 keys: phase 1 refuses them for S2 > 2^31 (INT64
 * is accepted) and accepts S2 = 2^31 (largest index 2^31 - 1). The key tensor is a stride-0
 * view, so nothing of that size is allocated; phase 2 is never run. */
LIG_TEST(errors_fwd_int32_limit)
{
    {
        float one = 0.25f;
        const int64_t qs[4] = {1, 1, 1, 2}, ks[4] = {1, (int64_t)1 << 31, 1, 2}, wsh[3] = {1, 1, 1},
                      is[3] = {1, 1, 4};
        const int64_t zero4[4] = {0, 0, 0, 0};
        int32_t out[4];
        lig_tensor *q = lig_create_tensor(&one, LIG_FLOAT32, 4, qs, zero4);
        lig_tensor *k = lig_create_tensor(&one, LIG_FLOAT32, 4, ks, zero4);
        lig_tensor *w = lig_create_tensor(&one, LIG_FLOAT32, 3, wsh, NULL);
        lig_tensor *i32 = lig_create_tensor(out, LIG_INT32, 3, is, NULL);
        uint64_t size = 0;
        lig_executor *e = NULL;
        lig_status st = lig_indexer_get_workspace_size(q, k, w, NULL, NULL, "BSND", 4, 3, INT64_MAX, INT64_MAX, i32,
                                                       NULL, &size, &e);
        CHECK(st == LIG_SUCCESS, "INT32 indices with S2 = 2^31 refused: %s", lig_get_last_error());
        lig_destroy_executor(e);
        lig_destroy_tensor(q);
        lig_destroy_tensor(k);
        lig_destroy_tensor(w);
        lig_destroy_tensor(i32);
    }
    float one = 0.25f;
    const int64_t S2 = ((int64_t)1 << 31) + 1;
    const int64_t qs[4] = {1, 1, 1, 2}, ks[4] = {1, S2, 1, 2}, wsh[3] = {1, 1, 1}, is[3] = {1, 1, 4};
    const int64_t zero4[4] = {0, 0, 0, 0};
    lig_tensor *q = lig_create_tensor(&one, LIG_FLOAT32, 4, qs, zero4);
    lig_tensor *k = lig_create_tensor(&one, LIG_FLOAT32, 4, ks, zero4);
    lig_tensor *w = lig_create_tensor(&one, LIG_FLOAT32, 3, wsh, NULL);
    int64_t out[4];
    memset(out, 0xCD, sizeof out);
    lig_tensor *i32 = lig_create_tensor(out, LIG_INT32, 3, is, NULL);
    lig_tensor *i64 = lig_create_tensor(out, LIG_INT64, 3, is, NULL);
    REQUIRE(q && k && w && i32 && i64, "tensor creation failed: %s", lig_get_last_error());
    uint64_t size = 0;
    lig_executor *e = NULL;
    lig_status st = lig_indexer_get_workspace_size(q, k, w, NULL, NULL, "BSND", 4, 3, INT64_MAX, INT64_MAX, i32, NULL,
                                                   &size, &e);
    const char *m = lig_get_last_error();
    CHECK(st == INVALID && e == NULL, "INT32 indices with S2 = 2^31 + 1: status %d", (int)st);
    CHECK(strstr(m, "sparse_indices") && contains_ci(m, "expected") && contains_ci(m, "got"),
          "message \"%s\" must name sparse_indices and say expected/got", m);
    st = lig_indexer_get_workspace_size(q, k, w, NULL, NULL, "BSND", 4, 3, INT64_MAX, INT64_MAX, i64, NULL, &size, &e);
    CHECK(st == LIG_SUCCESS, "INT64 indices with S2 = 2^31 + 1 refused: %s", lig_get_last_error());
    lig_destroy_executor(e);
    unsigned char expect[sizeof out];
    memset(expect, 0xCD, sizeof expect);
    CHECK(memcmp(out, expect, sizeof out) == 0, "phase 1 wrote to the output");
    lig_destroy_tensor(q);
    lig_destroy_tensor(k);
    lig_destroy_tensor(w);
    lig_destroy_tensor(i32);
    lig_destroy_tensor(i64);
}

/* ---- KL step ---- */

LIG_TEST(errors_kl_null_pointers)
{
    static const errtest_case cases[] = {
        {.name = "KL sparse_values NULL", .op = OP_KL, .kind = ET_NULL_ARG, .target = KL_VAL, .phase = 1,
         .want = NULLPTR, .names = "sparse_values"},
        {.name = "KL target NULL", .op = OP_KL, .kind = ET_NULL_ARG, .target = KL_TGT, .phase = 1, .want = NULLPTR,
         .names = "target"},
        {.name = "KL loss NULL", .op = OP_KL, .kind = ET_NULL_ARG, .target = KL_LOSS, .phase = 1, .want = NULLPTR,
         .names = "loss"},
        {.name = "KL dy NULL", .op = OP_KL, .kind = ET_NULL_ARG, .target = KL_DY, .phase = 1, .want = NULLPTR,
         .names = "dy"},
        {.name = "KL workspace_size NULL", .op = OP_KL, .kind = ET_NULL_WS_SIZE, .phase = 1, .want = NULLPTR,
         .names = "workspace_size"},
        {.name = "KL executor NULL (phase 1)", .op = OP_KL, .kind = ET_NULL_EXEC_PTR, .phase = 1, .want = NULLPTR,
         .names = "executor"},
        {.name = "KL executor NULL (phase 2)", .op = OP_KL, .phase = 2, .ws = ERRTEST_WS_NULL_EXEC, .want = NULLPTR,
         .names = "executor"},
        {.name = "KL sparse_indices NULL is fine", .op = OP_KL, .no_indices = 1, .phase = 2, .ws = ERRTEST_WS_EXACT,
         .want = LIG_SUCCESS, .names = ""},
    };
    errtest_run(&forward_or_kl, cases, NCASES(cases));
}

LIG_TEST(errors_kl_shapes_dtypes)
{
    static const errtest_case cases[] = {
        {.name = "KL sparse_values 0-D", .op = OP_KL, .kind = ET_REPLACE, .target = KL_VAL, .dtype = -1, .ndim = 0,
         .phase = 1, .want = INVALID, .names = "sparse_values|target|dy|sparse_indices"},
        {.name = "KL target [2,3,9]", .op = OP_KL, .kind = ET_REPLACE, .target = KL_TGT, .dtype = -1, .ndim = 3,
         .shape = {2, 3, 9}, .phase = 1, .want = INVALID, .names = "target",
         .has = {"expected shape [2,3,8]", "got [2,3,9]"}},
        {.name = "KL target [3,2,8]", .op = OP_KL, .kind = ET_REPLACE, .target = KL_TGT, .dtype = -1, .ndim = 3,
         .shape = {3, 2, 8}, .phase = 1, .want = INVALID, .names = "target", .has = {"[3,2,8]", NULL}},
        {.name = "KL dy rank 4", .op = OP_KL, .kind = ET_REPLACE, .target = KL_DY, .dtype = -1, .ndim = 4,
         .shape = {2, 3, 8, 1}, .phase = 1, .want = INVALID, .names = "dy",
         .has = {"expected shape [2,3,8]", "got [2,3,8,1]"}},
        {.name = "KL sparse_indices [2,3,7]", .op = OP_KL, .kind = ET_REPLACE, .target = KL_IDX, .dtype = -1,
         .ndim = 3, .shape = {2, 3, 7}, .phase = 1, .want = INVALID, .names = "sparse_indices",
         .has = {"got [2,3,7]", NULL}},
        {.name = "KL sparse_values INT32", .op = OP_KL, .kind = ET_REPLACE, .target = KL_VAL, .dtype = LIG_INT32,
         .ndim = -1, .phase = 1, .want = INVALID, .names = "sparse_values"},
        {.name = "KL target INT64", .op = OP_KL, .kind = ET_REPLACE, .target = KL_TGT, .dtype = LIG_INT64,
         .ndim = -1, .phase = 1, .want = INVALID, .names = "target"},
        {.name = "KL dy INT32", .op = OP_KL, .kind = ET_REPLACE, .target = KL_DY, .dtype = LIG_INT32, .ndim = -1,
         .phase = 1, .want = INVALID, .names = "dy"},
        {.name = "KL sparse_indices FLOAT32", .op = OP_KL, .kind = ET_REPLACE, .target = KL_IDX,
         .dtype = LIG_FLOAT32, .ndim = -1, .phase = 1, .want = INVALID, .names = "sparse_indices"},
        {.name = "KL sparse_indices BFLOAT16", .op = OP_KL, .kind = ET_REPLACE, .target = KL_IDX,
         .dtype = LIG_BFLOAT16, .ndim = -1, .phase = 1, .want = INVALID, .names = "sparse_indices"},
        {.name = "KL loss FLOAT16", .op = OP_KL, .kind = ET_REPLACE, .target = KL_LOSS, .dtype = LIG_FLOAT16,
         .ndim = -1, .phase = 1, .want = INVALID, .names = "loss"},
        {.name = "KL loss BFLOAT16", .op = OP_KL, .kind = ET_REPLACE, .target = KL_LOSS, .dtype = LIG_BFLOAT16,
         .ndim = -1, .phase = 1, .want = INVALID, .names = "loss"},
        {.name = "KL loss INT32", .op = OP_KL, .kind = ET_REPLACE, .target = KL_LOSS, .dtype = LIG_INT32,
         .ndim = -1, .phase = 1, .want = INVALID, .names = "loss"},
        {.name = "KL loss with 2 elements", .op = OP_KL, .kind = ET_REPLACE, .target = KL_LOSS, .dtype = -1,
         .ndim = 1, .shape = {2}, .phase = 1, .want = INVALID, .names = "loss", .has = {"[2]", NULL}},
        {.name = "KL loss [1,2]", .op = OP_KL, .kind = ET_REPLACE, .target = KL_LOSS, .dtype = -1, .ndim = 2,
         .shape = {1, 2}, .phase = 1, .want = INVALID, .names = "loss", .has = {"[1,2]", NULL}},
        {.name = "KL loss with no element", .op = OP_KL, .kind = ET_REPLACE, .target = KL_LOSS, .dtype = -1,
         .ndim = 1, .shape = {0}, .phase = 1, .want = INVALID, .names = "loss"},
        {.name = "KL loss [1,1] is fine", .op = OP_KL, .kind = ET_REPLACE, .target = KL_LOSS, .dtype = -1,
         .ndim = 2, .shape = {1, 1}, .phase = 2, .ws = ERRTEST_WS_EXACT, .want = LIG_SUCCESS, .names = ""},
    };
    errtest_run(&forward_or_kl, cases, NCASES(cases));
}

LIG_TEST(errors_kl_overlap)
{
    static const errtest_case cases[] = {
        {.name = "KL dy is sparse_values", .op = OP_KL, .kind = ET_ALIAS, .target = KL_DY, .source = KL_VAL,
         .phase = 1, .want = INVALID, .names = "dy|sparse_values"},
        {.name = "KL dy overlaps target (shifted)", .op = OP_KL, .kind = ET_ALIAS, .target = KL_DY,
         .source = KL_TGT, .shift = 5, .phase = 1, .want = INVALID, .names = "dy|target"},
        {.name = "KL dy over sparse_indices", .op = OP_KL, .kind = ET_ALIAS, .target = KL_DY, .source = KL_IDX,
         .shift = 1, .phase = 1, .want = INVALID, .names = "dy|sparse_indices"},
        {.name = "KL loss inside target", .op = OP_KL, .kind = ET_ALIAS, .target = KL_LOSS, .source = KL_TGT,
         .shift = 7, .phase = 1, .want = INVALID, .names = "loss|target"},
        {.name = "KL loss inside dy", .op = OP_KL, .kind = ET_ALIAS, .target = KL_LOSS, .source = KL_DY,
         .shift = 3, .phase = 1, .want = INVALID, .names = "loss|dy"},
        {.name = "KL dy with overlapping strides", .op = OP_KL, .kind = ET_SELF_OVERLAP, .target = KL_DY,
         .phase = 1, .want = INVALID, .names = "dy"},
    };
    errtest_run(&forward_or_kl, cases, NCASES(cases));
}

LIG_TEST(errors_kl_workspace_executor)
{
    static const errtest_case cases[] = {
        {.name = "KL workspace one byte short", .op = OP_KL, .phase = 2, .ws = ERRTEST_WS_SHORT, .want = INVALID,
         .names = "workspace|workspace_size"},
        {.name = "KL no workspace at all", .op = OP_KL, .phase = 2, .ws = ERRTEST_WS_ZERO, .want = INVALID,
         .want_alt = NULLPTR, .names = "workspace|workspace_size"},
        {.name = "KL NULL workspace with the right size", .op = OP_KL, .phase = 2, .ws = ERRTEST_WS_NULL_PTR,
         .want = NULLPTR, .want_alt = INVALID, .names = "workspace"},
        {.name = "KL non-NULL stream", .op = OP_KL, .phase = 2, .ws = FW_STREAM, .want = INVALID,
         .names = "stream"},
        {.name = "forward executor to lig_kl_loss_and_dy", .op = OP_KL, .phase = 2, .ws = FW_FOREIGN_FWD,
         .want = INVALID, .names = "executor"},
        {.name = "backward executor to lig_kl_loss_and_dy", .op = OP_KL, .phase = 2, .ws = FW_FOREIGN_GRAD,
         .want = INVALID, .names = "executor"},
        {.name = "KL executor to lig_indexer_grad", .op = OP_KL, .phase = 2, .ws = FW_TO_GRAD, .want = INVALID,
         .names = "executor"},
    };
    errtest_run(&forward_or_kl, cases, NCASES(cases));
}

/* The first counted slot at or after row `row` (a later row, so that a careless implementation
 * would already have written the earlier ones). */
static int64_t first_counted_in_row(const klcase *kc, int64_t row)
{
    const int64_t n = kl_rows(kc) * kl_K(kc);
    for (int64_t i = row * kl_K(kc); i < n; i++) {
        if (kl_counted(kc, i)) {
            return i;
        }
    }
    for (int64_t i = 0; i < n; i++) {
        if (kl_counted(kc, i)) {
            return i;
        }
    }
    fprintf(stderr, "the base KL problem has no counted slot\n");
    abort();
}

static void target_negative(klcase *kc) { kc->target[first_counted_in_row(kc, 4)] = -0.125; }
static void target_nan(klcase *kc) { kc->target[first_counted_in_row(kc, 5)] = NAN; }
static void target_minus_inf(klcase *kc) { kc->target[first_counted_in_row(kc, 1)] = -INFINITY; }
static void target_negative_zero(klcase *kc) { kc->target[first_counted_in_row(kc, 2)] = -0.0; }

LIG_TEST(errors_kl_target)
{
    static const errtest_case cases[] = {
        {.name = "KL negative target in a counted slot", .op = OP_KL, .edit_kc = target_negative, .phase = 2,
         .ws = ERRTEST_WS_EXACT, .want = INVALID, .names = "target"},
        {.name = "KL NaN target in a counted slot", .op = OP_KL, .edit_kc = target_nan, .phase = 2,
         .ws = ERRTEST_WS_EXACT, .want = INVALID, .names = "target"},
        {.name = "KL -inf target in a counted slot", .op = OP_KL, .edit_kc = target_minus_inf, .phase = 2,
         .ws = ERRTEST_WS_EXACT, .want = INVALID, .names = "target"},
        {.name = "KL negative target without sparse_indices", .op = OP_KL, .no_indices = 1,
         .edit_kc = target_negative, .phase = 2, .ws = ERRTEST_WS_EXACT, .want = INVALID, .names = "target"},
        {.name = "KL target -0.0 is fine", .op = OP_KL, .edit_kc = target_negative_zero, .phase = 2,
         .ws = ERRTEST_WS_EXACT, .want = LIG_SUCCESS, .names = ""},
    };
    errtest_run(&forward_or_kl, cases, NCASES(cases));
    /* Negative and NaN targets in slots that do not count are ignored (the generator puts them
     * there); the base problems above succeed untouched -- checked against the reference. */
    for (int with_idx = 0; with_idx < 2; with_idx++) {
        errtest_case c;
        memset(&c, 0, sizeof c);
        c.no_indices = !with_idx;
        klcase kc;
        kl_base(&kc, &c);
        int64_t poisoned = 0;
        for (int64_t i = 0; i < kl_rows(&kc) * kl_K(&kc); i++) {
            poisoned += !kl_counted(&kc, i) && !(kc.target[i] >= 0.0);
        }
        CHECK(poisoned > 0, "the base KL problem has no poisoned uncounted target");
        kl_check_case(&kc, with_idx ? "negative/NaN targets in uncounted slots (indices)"
                                    : "negative/NaN targets in uncounted slots (no indices)");
        kl_free(&kc);
    }
}

/*
 * Fuzzing for half of LIG_FUZZ_SECONDS (default 20; fuzz_budget.h splits it with the forward / KL
 * fuzz of test_fuzz_fwd.c): random small problems -- layout, dtypes,
 * shapes with zeros, strides, index values, lengths, modes, bands, thread counts -- with up to two
 * random defects (NULL pointers, bad strings/modes/bands/lengths, wrong dtypes or shapes, out-of-range
 * indices, overlapping outputs). Each call must either succeed and match the reference, or fail
 * with the documented status for the defect (PARAM_NULLPTR / PARAM_INVALID, in the right phase),
 * with a message, without writing anything.
 *
 * The seed is printed; LIG_FUZZ_SEED=s reproduces a run and LIG_FUZZ_ITER=i reruns one iteration.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fuzz_budget.h"
#include "fuzz_util.h"
#include "gen.h"
#include "half.h"
#include "harness.h"
#include "lig.h"
#include "runner.h"
#include "tests.h"

#define FUZZ_DEFAULT_SEED 20250917

typedef struct fz_expect {
    int null_err;      /* a required pointer is NULL: phase 1 PARAM_NULLPTR */
    int invalid1;      /* an invalid argument: phase 1 PARAM_INVALID */
    int invalid2;      /* out-of-range index in a valid row: phase 2 PARAM_INVALID */
    int maybe_refused; /* innermost stride 2 / broadcast inputs: phase 1 may refuse */
    int empty;         /* a zero dimension: workspace 0; an index error may be moot */
    char what[256];    /* the defects, for failure messages */
} fz_expect;

typedef enum fz_post {
    P_NONE = 0,
    P_NULL_TENSOR,
    P_LAYOUT_BAD,
    P_LAYOUT_NULL,
    P_HEAD,
    P_MODE,
    P_PRE,
    P_NEXT,
    P_DTYPE,
    P_SHAPE,
    P_OVERLAP,
    P_NULL_WS_SIZE,
    P_NULL_EXEC
} fz_post;

typedef struct fz_stats {
    int64_t iterations, successes, refusals, nullptr_errors, invalid_errors, phase2_errors;
} fz_stats;

static void random_problem(th_rng *r, tcase *tc, fz_expect *ex)
{
    static const lig_dtype floats[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    static const tc_strides plain[4] = {TC_CONTIGUOUS, TC_EXPLICIT, TC_PADDED, TC_PERMUTED};
    tc_init(tc);
    tc->dtype = floats[th_rng_range(r, 0, 2)];
    tc->dw_dtype = th_rng_chance(r, 0.5) ? LIG_FLOAT32 : tc->dtype;
    tc->idx_dtype = th_rng_chance(r, 0.5) ? LIG_INT32 : LIG_INT64;
    tc->seq_dtype = th_rng_chance(r, 0.5) ? LIG_INT32 : LIG_INT64;
    tc->deterministic = th_rng_chance(r, 0.5);
    tc->p.sparse_mode = th_rng_chance(r, 0.5) ? 0 : 3;
    tc->p.pre_tokens = fuzz_pick_band(r);
    tc->p.next_tokens = fuzz_pick_band(r);

    int zero = th_rng_chance(r, 0.12) ? (int)th_rng_range(r, 0, 6) : -1;
    tc->p.B = zero == 0 ? 0 : th_rng_range(r, 1, 3);
    tc->p.N2 = th_rng_range(r, 1, 3);
    tc->p.N1 = zero == 1 ? 0 : tc->p.N2 * th_rng_range(r, 1, 3);
    tc->p.D = zero == 2 ? 0 : th_rng_range(r, 1, 17);
    tc->p.K = zero == 3 ? 0 : th_rng_range(r, 1, 9);
    int64_t s1 = zero == 4 ? 0 : th_rng_range(r, 1, 7);
    int64_t s2 = zero == 5 ? 0 : th_rng_range(r, 1, 8);
    tc->head_num = th_rng_chance(r, 0.3) ? 0 : tc->p.N1;
    tc->short_form = tc->p.N2 == 1 && th_rng_chance(r, 0.5);

    double u = th_rng_unit(r);
    if (u < 0.12) {
        tc->in_strides = TC_INNER_STRIDED;
        ex->maybe_refused = 1;
    } else if (u < 0.2) {
        tc->in_strides = TC_BROADCAST;
        ex->maybe_refused = 1;
    } else {
        tc->in_strides = plain[th_rng_range(r, 0, 3)];
    }
    tc->out_strides = plain[th_rng_range(r, 0, 3)];

    gen_opts o;
    gen_opts_default(&o);
    o.grid = th_rng_chance(r, 0.85);
    tc->grid = o.grid;
    o.min_abs_s = 1e-3;
    o.poison = tc->in_strides != TC_BROADCAST;
    o.p_pad = 0.3 * th_rng_unit(r);
    o.p_mask = 0.3 * th_rng_unit(r);
    o.p_dup = 0.3 * th_rng_unit(r);
    o.tail_pad = th_rng_chance(r, 0.2);
    if (th_rng_chance(r, 0.4)) {
        gen_tnd(r, tc, s1, s2, th_rng_range(r, 0, 2), th_rng_range(r, 0, 2));
    } else {
        tc->p.S1 = s1;
        tc->p.S2 = s2;
        tc->has_seq_q = th_rng_chance(r, 0.5);
        tc->has_seq_k = th_rng_chance(r, 0.5);
        gen_bsnd(r, tc);
    }
    gen_data(r, tc, &o);
    const ref_problem *p = &tc->p;
    ex->empty = p->B == 0 || p->S1 == 0 || p->S2 == 0 || p->N1 == 0 || p->D == 0 || p->K == 0;
}

/* Defects applied to the case before it is materialized (lengths, indices). */
static void defect_seq(th_rng *r, tcase *tc, fz_expect *ex)
{
    ref_problem *p = &tc->p;
    if (p->B == 0) {
        return;
    }
    int64_t b = th_rng_range(r, 0, p->B - 1);
    int on_q = th_rng_chance(r, 0.5);
    int64_t *seq = on_q ? tc->seq_q : tc->seq_k;
    int64_t limit = on_q ? p->S1 : p->S2;
    if (p->layout == REF_BSND) {
        if (on_q) {
            tc->has_seq_q = 1;
        } else {
            tc->has_seq_k = 1;
        }
        tc_sync_seq(tc);
        seq[b] = th_rng_chance(r, 0.5) ? limit + th_rng_range(r, 1, 3) : -th_rng_range(r, 1, 3);
        fuzz_note_defect(ex->what, sizeof ex->what, on_q ? "BSND query length out of range" : "BSND key length out of range");
    } else if (b > 0 && seq[b - 1] > 0 && th_rng_chance(r, 0.5)) {
        seq[b] = seq[b - 1] - th_rng_range(r, 1, seq[b - 1]);
        fuzz_note_defect(ex->what, sizeof ex->what, "TND ends decreasing");
    } else {
        seq[p->B - 1] = limit + th_rng_range(r, 1, 3);
        fuzz_note_defect(ex->what, sizeof ex->what, "TND end above T");
    }
    ex->invalid1 = 1;
}

static void defect_tnd_missing(th_rng *r, tcase *tc, fz_expect *ex)
{
    if (tc->p.layout != REF_TND) {
        return;
    }
    if (th_rng_chance(r, 0.5)) {
        tc->has_seq_q = 0;
    } else {
        tc->has_seq_k = 0;
    }
    tc_sync_seq(tc);
    ex->invalid1 = 1;
    fuzz_note_defect(ex->what, sizeof ex->what, "TND without a length array");
}

static void defect_index(th_rng *r, tcase *tc, fz_expect *ex)
{
    const ref_problem *p = &tc->p;
    if (!ref_seq_ok(p, NULL, 0) || p->K == 0) {
        return;
    }
    int64_t rows = ref_rows_q(p);
    for (int tries = 0; tries < 20 && rows > 0; tries++) {
        int64_t row = th_rng_range(r, 0, rows - 1);
        ref_row info;
        ref_row_info(p, row, &info);
        if (!info.valid) {
            continue;
        }
        int64_t s = (row * p->N2 + th_rng_range(r, 0, p->N2 - 1)) * p->K + th_rng_range(r, 0, p->K - 1);
        int64_t v;
        do {
            v = gen_garbage_index(r, tc, info.lk);
        } while (v >= -1 && v < info.lk);
        tc->idx[s] = v;
        ex->invalid2 = 1;
        fuzz_note_defect(ex->what, sizeof ex->what, "index out of range in a valid row");
        return;
    }
}

static const int k_tensor_slots[8] = {RB_Q, RB_K, RB_DY, RB_IDX, RB_W, RB_DQ, RB_DK, RB_DW};

static void apply_post(th_rng *r, fz_post kind, run_inst *ri, const tcase *tc, fz_expect *ex)
{
    static const char *bad_layouts[] = {"bsnd", "tnd", "BSN", "", "BSND\n", "TND ", "SBND"};
    switch (kind) {
    case P_NULL_TENSOR: {
        int which = k_tensor_slots[th_rng_range(r, 0, 7)];
        ri->arg[which] = NULL;
        ex->null_err = 1;
        fuzz_note_defect(ex->what, sizeof ex->what, "NULL tensor");
        break;
    }
    case P_LAYOUT_BAD:
        ri->layout = bad_layouts[th_rng_range(r, 0, 6)];
        ex->invalid1 = 1;
        fuzz_note_defect(ex->what, sizeof ex->what, "bad layout string");
        break;
    case P_LAYOUT_NULL:
        ri->layout = NULL;
        ex->null_err = 1;
        fuzz_note_defect(ex->what, sizeof ex->what, "NULL layout");
        break;
    case P_HEAD:
        ri->head_num = th_rng_chance(r, 0.5) ? tc->p.N1 + th_rng_range(r, 1, 4) : -th_rng_range(r, 1, 4);
        ex->invalid1 = 1;
        fuzz_note_defect(ex->what, sizeof ex->what, "head_num");
        break;
    case P_MODE: {
        static const int64_t modes[] = {1, 2, 4, -1, 100};
        ri->sparse_mode = modes[th_rng_range(r, 0, 4)];
        ex->invalid1 = 1;
        fuzz_note_defect(ex->what, sizeof ex->what, "sparse_mode");
        break;
    }
    case P_PRE:
        ri->pre_tokens = th_rng_chance(r, 0.5) ? -1 : INT64_MIN;
        ex->invalid1 = 1;
        fuzz_note_defect(ex->what, sizeof ex->what, "negative pre_tokens");
        break;
    case P_NEXT:
        ri->next_tokens = -th_rng_range(r, 1, 1000);
        ex->invalid1 = 1;
        fuzz_note_defect(ex->what, sizeof ex->what, "negative next_tokens");
        break;
    case P_DTYPE: {
        int which = (int)th_rng_range(r, 0, 8);
        int slot = which < 8 ? k_tensor_slots[which] : (ri->present[RB_SQ] ? RB_SQ : RB_Q);
        const tbuf *b = &ri->buf[slot];
        lig_dtype wrong;
        if (slot == RB_IDX || slot == RB_SQ) {
            wrong = th_rng_chance(r, 0.5) ? LIG_FLOAT32 : LIG_BFLOAT16;
        } else if (slot == RB_DW) {
            wrong = tc->dtype == LIG_FLOAT16 ? LIG_BFLOAT16 : th_rng_chance(r, 0.5) ? LIG_INT32 : LIG_FLOAT16;
        } else {
            wrong = th_rng_chance(r, 0.3) ? LIG_INT32 : tc->dtype == LIG_FLOAT32 ? LIG_FLOAT16 : LIG_FLOAT32;
        }
        ri->arg[slot] = inst_new_tensor(ri, wrong, b->ndim, b->shape);
        ex->invalid1 = 1;
        fuzz_note_defect(ex->what, sizeof ex->what, "wrong dtype");
        break;
    }
    case P_SHAPE: {
        int which = (int)th_rng_range(r, 0, 8);
        int slot = which < 8 ? k_tensor_slots[which] : (ri->present[RB_SK] ? RB_SK : RB_K);
        const tbuf *b = &ri->buf[slot];
        int64_t shape[LIG_MAX_DIMS];
        memcpy(shape, b->shape, sizeof shape);
        shape[b->ndim - 1] += 1; /* the last axis is tied to another tensor in every case */
        ri->arg[slot] = inst_new_tensor(ri, b->dtype, b->ndim, shape);
        ex->invalid1 = 1;
        fuzz_note_defect(ex->what, sizeof ex->what, "wrong shape");
        break;
    }
    case P_OVERLAP: {
        const tbuf *q = &ri->buf[RB_Q];
        if (tbuf_numel(q) == 0 || tc->in_strides == TC_BROADCAST) {
            break;
        }
        ri->arg[RB_DQ] = inst_adopt(ri, lig_create_tensor(q->base + (size_t)q->offset * th_dtype_size(q->dtype),
                                                         q->dtype, q->ndim, q->shape,
                                                         q->null_strides ? NULL : q->strides));
        ex->invalid1 = 1;
        fuzz_note_defect(ex->what, sizeof ex->what, "d_query overlaps query");
        break;
    }
    case P_NULL_WS_SIZE:
        ri->workspace_size_arg = NULL;
        ex->null_err = 1;
        fuzz_note_defect(ex->what, sizeof ex->what, "NULL workspace_size");
        break;
    case P_NULL_EXEC:
        ri->executor_arg = NULL;
        ex->null_err = 1;
        fuzz_note_defect(ex->what, sizeof ex->what, "NULL executor");
        break;
    default: break;
    }
}

/* Returns 1 when the iteration behaved. */
static int fuzz_one(uint64_t seed, int64_t iter, void *arg)
{
    fz_stats *stats = arg;
    th_rng r = th_rng_make(seed ^ ((uint64_t)iter * 0x9E3779B97F4A7C15ull));
    if (th_rng_chance(&r, 0.3)) {
        lig_set_num_threads((int)th_rng_range(&r, 1, 4));
    }
    tcase tc;
    fz_expect ex;
    memset(&ex, 0, sizeof ex);
    random_problem(&r, &tc, &ex);

    fz_post post[2] = {P_NONE, P_NONE};
    int defects = th_rng_chance(&r, 0.45) ? 0 : (int)th_rng_range(&r, 1, 2);
    for (int i = 0; i < defects; i++) {
        int kind = (int)th_rng_range(&r, 0, 15);
        if (kind == 0) {
            defect_seq(&r, &tc, &ex);
        } else if (kind == 1) {
            defect_tnd_missing(&r, &tc, &ex);
        } else if (kind <= 3) {
            defect_index(&r, &tc, &ex);
        } else if (i == 0 || post[0] != (fz_post)(kind - 3)) {
            /* Never the same kind twice: two shape defects can cancel (dy and indices both K+1). */
            post[i] = (fz_post)(kind - 3); /* P_NULL_TENSOR .. P_NULL_EXEC */
        }
    }

    run_inst ri;
    run_setup(&tc, &ri);
    for (int i = 0; i < 2; i++) {
        apply_post(&r, post[i], &ri, &tc, &ex);
    }

    char desc[512], label[1024];
    tc_describe(&tc, desc, sizeof desc);
    snprintf(label, sizeof label, "fuzz iteration %" PRId64 " (LIG_FUZZ_SEED=%" PRIu64 " LIG_FUZZ_ITER=%" PRId64
             ") [%s] defects: %s", iter, seed, iter, desc, ex.what[0] ? ex.what : "none");
    int before = th_current_failures();

    lig_status st = inst_phase1(&ri);
    int phase1_must_fail = ex.null_err || ex.invalid1;
    if (st != LIG_SUCCESS) {
        CHECK(ri.executor == NULL, "%s: failed phase 1 left an executor", label);
        ri.executor = NULL;
        CHECK(ri.message[0] != '\0', "%s: failure without a message", label);
        CHECK(inst_all_unchanged(&ri), "%s: failed phase 1 wrote to a tensor", label);
        if (phase1_must_fail) {
            CHECK(fuzz_status_in(st, ex.null_err, ex.invalid1 || ex.maybe_refused),
                  "%s: phase 1 returned %d: %s", label, (int)st, ri.message);
            stats->nullptr_errors += st == LIG_ERR_PARAM_NULLPTR;
            stats->invalid_errors += st == LIG_ERR_PARAM_INVALID;
        } else if (ex.maybe_refused && st == LIG_ERR_PARAM_INVALID) {
            stats->refusals++;
        } else {
            CHECK(0, "%s: valid problem rejected in phase 1 with %d: %s", label, (int)st, ri.message);
        }
    } else if (phase1_must_fail) {
        CHECK(0, "%s: phase 1 accepted a defective call", label);
        lig_destroy_executor(ri.executor);
        ri.executor = NULL;
    } else {
        if (ex.empty) {
            CHECK(ri.workspace_size == 0, "%s: empty problem wants %" PRIu64 " workspace bytes", label,
                  ri.workspace_size);
        }
        st = inst_phase2(&ri, 0);
        int may_fail2 = ex.invalid2;
        int must_fail2 = ex.invalid2 && !ex.empty; /* with a zero dimension the index error may be moot */
        if (st != LIG_SUCCESS) {
            CHECK(may_fail2 && st == LIG_ERR_PARAM_INVALID, "%s: phase 2 returned %d: %s", label, (int)st,
                  ri.message);
            CHECK(ri.message[0] != '\0', "%s: phase 2 failure without a message", label);
            CHECK(inst_all_unchanged(&ri), "%s: failed phase 2 wrote to a tensor", label);
            stats->phase2_errors++;
        } else if (must_fail2) {
            CHECK(0, "%s: out-of-range index accepted", label);
        } else {
            run_result res;
            memset(&res, 0, sizeof res);
            res.gaps_ok = inst_gaps_ok(&ri);
            res.dq = th_xmalloc((size_t)tc_numel_q(&tc) * sizeof(double));
            res.dk = th_xmalloc((size_t)tc_numel_k(&tc) * sizeof(double));
            res.dw = th_xmalloc((size_t)tc_numel_w(&tc) * sizeof(double));
            run_read_outputs(&ri, res.dq, res.dk, res.dw);
            check_result(&tc, &res, label);
            inst_result_free(&res);
            stats->successes++;
        }
    }
    inst_teardown(&ri);
    tc_free(&tc);
    stats->iterations++;
    return th_current_failures() == before;
}

void test_fuzz(void)
{
    fz_stats stats;
    memset(&stats, 0, sizeof stats);
    fuzz_drive(FUZZ_SHARE_BACKWARD, FUZZ_DEFAULT_SEED, 20, fuzz_one, &stats);
    th_note("%" PRId64 " iterations: %" PRId64 " matched the reference, %" PRId64 " refused strides, %" PRId64
            " NULLPTR, %" PRId64 " INVALID in phase 1, %" PRId64 " INVALID in phase 2",
            stats.iterations, stats.successes, stats.refusals, stats.nullptr_errors, stats.invalid_errors,
            stats.phase2_errors);
}

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

#include "fuzz_budget.h"
#include "fuzz_helpers.h"
#include "case_generators.h"
#include "float_formats.h"
#include "framework.h"
#include "lig.h"
#include "backward_runner.h"
#include "tests.h"

#define FUZZ_DEFAULT_SEED 20250917

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

static void random_problem(th_rng *r, tcase *tc, fuzz_expect *ex)
{
    tc_init(tc);
    tc->dtype = fuzz_pick_float(r);
    tc->dw_dtype = th_rng_chance(r, 0.5) ? LIG_FLOAT32 : tc->dtype;
    tc->idx_dtype = th_rng_chance(r, 0.5) ? LIG_INT32 : LIG_INT64;
    tc->seq_dtype = th_rng_chance(r, 0.5) ? LIG_INT32 : LIG_INT64;
    tc->deterministic = th_rng_chance(r, 0.5);
    tc->p.sparse_mode = th_rng_chance(r, 0.5) ? 0 : 3;
    tc->p.pre_tokens = fuzz_pick_band(r);
    tc->p.next_tokens = fuzz_pick_band(r);

    int zero = th_rng_chance(r, 0.12) ? (int)th_rng_range(r, 0, 6) : -1;
    fuzz_pick_heads(r, tc, zero);
    tc->p.K = zero == 3 ? 0 : th_rng_range(r, 1, 9);
    int64_t s1 = zero == 4 ? 0 : th_rng_range(r, 1, 7);
    int64_t s2 = zero == 5 ? 0 : th_rng_range(r, 1, 8);
    tc->head_num = th_rng_chance(r, 0.3) ? 0 : tc->p.N1;
    tc->short_form = tc->p.N2 == 1 && th_rng_chance(r, 0.5);
    tc->in_strides = fuzz_pick_in_strides(r, 0.12, 0.2, ex);
    tc->out_strides = fuzz_pick_plain_strides(r);

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
    fuzz_layout(r, tc, s1, s2);
    gen_data(r, tc, &o);
    const ref_problem *p = &tc->p;
    ex->empty = p->B == 0 || p->S1 == 0 || p->S2 == 0 || p->N1 == 0 || p->D == 0 || p->K == 0;
}

static void defect_index(th_rng *r, tcase *tc, fuzz_expect *ex)
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
        fuzz_note_defect(ex, "index out of range in a valid row");
        return;
    }
}

static const int k_tensor_slots[8] = {RB_Q, RB_K, RB_DY, RB_IDX, RB_W, RB_DQ, RB_DK, RB_DW};

static void apply_post(th_rng *r, fz_post kind, run_inst *ri, const tcase *tc, fuzz_expect *ex)
{
    static const char *bad_layouts[] = {"bsnd", "tnd", "BSN", "", "BSND\n", "TND ", "SBND"};
    switch (kind) {
    case P_NULL_TENSOR: {
        int which = k_tensor_slots[th_rng_range(r, 0, 7)];
        ri->arg[which] = NULL;
        ex->null_err = 1;
        fuzz_note_defect(ex, "NULL tensor");
        break;
    }
    case P_LAYOUT_BAD:
        ri->layout = bad_layouts[th_rng_range(r, 0, 6)];
        ex->invalid1 = 1;
        fuzz_note_defect(ex, "bad layout string");
        break;
    case P_LAYOUT_NULL:
        ri->layout = NULL;
        ex->null_err = 1;
        fuzz_note_defect(ex, "NULL layout");
        break;
    case P_HEAD:
        ri->head_num = th_rng_chance(r, 0.5) ? tc->p.N1 + th_rng_range(r, 1, 4) : -th_rng_range(r, 1, 4);
        ex->invalid1 = 1;
        fuzz_note_defect(ex, "head_num");
        break;
    case P_MODE: {
        static const int64_t modes[] = {1, 2, 4, -1, 100};
        ri->sparse_mode = modes[th_rng_range(r, 0, 4)];
        ex->invalid1 = 1;
        fuzz_note_defect(ex, "sparse_mode");
        break;
    }
    case P_PRE:
        ri->pre_tokens = th_rng_chance(r, 0.5) ? -1 : INT64_MIN;
        ex->invalid1 = 1;
        fuzz_note_defect(ex, "negative pre_tokens");
        break;
    case P_NEXT:
        ri->next_tokens = -th_rng_range(r, 1, 1000);
        ex->invalid1 = 1;
        fuzz_note_defect(ex, "negative next_tokens");
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
        fuzz_note_defect(ex, "wrong dtype");
        break;
    }
    case P_SHAPE: {
        int which = (int)th_rng_range(r, 0, 8);
        int slot = which < 8 ? k_tensor_slots[which] : (ri->present[RB_SK] ? RB_SK : RB_K);
        ri->arg[slot] = inst_new_widened(ri, slot);
        ex->invalid1 = 1;
        fuzz_note_defect(ex, "wrong shape");
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
        fuzz_note_defect(ex, "d_query overlaps query");
        break;
    }
    case P_NULL_WS_SIZE:
    case P_NULL_EXEC:
        fuzz_defect_null_pointer(ri, kind == P_NULL_WS_SIZE, ex);
        break;
    default: break;
    }
}

/* Returns 1 when the iteration behaved. */
static int fuzz_one(uint64_t seed, int64_t iter, void *arg)
{
    fuzz_stats *stats = arg;
    th_rng r = th_rng_make(seed ^ ((uint64_t)iter * 0x9E3779B97F4A7C15ull));
    if (th_rng_chance(&r, 0.3)) {
        lig_set_num_threads((int)th_rng_range(&r, 1, 4));
    }
    tcase tc;
    fuzz_expect ex;
    memset(&ex, 0, sizeof ex);
    random_problem(&r, &tc, &ex);

    fz_post post[2] = {P_NONE, P_NONE};
    int defects = th_rng_chance(&r, 0.45) ? 0 : (int)th_rng_range(&r, 1, 2);
    for (int i = 0; i < defects; i++) {
        int kind = (int)th_rng_range(&r, 0, 15);
        if (kind == 0) {
            fuzz_defect_seq(&r, &tc, 0.0, &ex);
        } else if (kind == 1) {
            fuzz_defect_seq_missing(&r, &tc, &ex);
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

    if (fuzz_check_phase1(&ri, inst_phase1(&ri), &ex, label, stats)) {
        if (ex.empty) {
            CHECK(ri.workspace_size == 0, "%s: empty problem wants %" PRIu64 " workspace bytes", label,
                  ri.workspace_size);
        }
        /* with a zero dimension an index error may be moot */
        suite_case sc = {.tc = &tc};
        fuzz_check_phase2(&ri, inst_phase2(&ri, 0), ex.invalid2, ex.invalid2 && !ex.empty, &suite_backward, &sc, label,
                          stats);
    }
    inst_teardown(&ri);
    tc_free(&tc);
    stats->iterations++;
    return th_current_failures() == before;
}

void test_fuzz(void)
{
    fuzz_stats stats;
    memset(&stats, 0, sizeof stats);
    fuzz_drive(FUZZ_SHARE_BACKWARD, FUZZ_DEFAULT_SEED, 20, fuzz_one, &stats);
    fuzz_stats_note("backward", &stats);
}

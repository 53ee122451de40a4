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
#include "fuzz_runner.h"
#include "case_generators.h"
#include "float_formats.h"
#include "framework.h"
#include "lig.h"
#include "backward_runner.h"

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
    fuzz_pick_mode_and_band(r, tc);

    int zero = th_rng_chance(r, 0.12) ? (int)th_rng_range(r, 0, 6) : -1;
    fuzz_pick_heads(r, tc, zero);
    tc->p.K = zero == 3 ? 0 : th_rng_range(r, 1, 9);
    int64_t s1 = zero == 4 ? 0 : th_rng_range(r, 1, 7);
    int64_t s2 = zero == 5 ? 0 : th_rng_range(r, 1, 8);
    tc->head_num = th_rng_chance(r, 0.3) ? 0 : tc->p.N1;
    fuzz_pick_forms(r, tc, 0.12, 0.2, ex);

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

/* One of the eight tensors, or the length array `seq` (`instead` when the call has none). */
static int pick_slot(th_rng *r, const run_inst *ri, int seq, int instead)
{
    const int which = (int)th_rng_range(r, 0, 8);
    return which < 8 ? k_tensor_slots[which] : ri->present[seq] ? seq : instead;
}

static void apply_post(th_rng *r, fz_post kind, run_inst *ri, const tcase *tc, fuzz_expect *ex)
{
    static const char *bad_layouts[] = {"bsnd", "tnd", "BSN", "", "BSND\n", "TND ", "SBND"};
    switch (kind) {
    case P_NULL_TENSOR:
        fuzz_defect_null_tensor(r, ri, k_tensor_slots, 8, ex);
        break;
    case P_LAYOUT_BAD:
        ri->layout = bad_layouts[th_rng_range(r, 0, 6)];
        fuzz_note_invalid(ex, "bad layout string");
        break;
    case P_LAYOUT_NULL:
        ri->layout = NULL;
        ex->null_err = 1;
        fuzz_note_defect(ex, "NULL layout");
        break;
    case P_HEAD:
        ri->head_num = th_rng_chance(r, 0.5) ? tc->p.N1 + th_rng_range(r, 1, 4) : -th_rng_range(r, 1, 4);
        fuzz_note_invalid(ex, "head_num");
        break;
    case P_MODE: {
        static const int64_t modes[] = {1, 2, 4, -1, 100};
        ri->sparse_mode = modes[th_rng_range(r, 0, 4)];
        fuzz_note_invalid(ex, "sparse_mode");
        break;
    }
    case P_PRE:
        ri->pre_tokens = th_rng_chance(r, 0.5) ? -1 : INT64_MIN;
        fuzz_note_invalid(ex, "negative pre_tokens");
        break;
    case P_NEXT:
        ri->next_tokens = -th_rng_range(r, 1, 1000);
        fuzz_note_invalid(ex, "negative next_tokens");
        break;
    case P_DTYPE: {
        const int slot = pick_slot(r, ri, RB_SQ, RB_Q);
        const tbuf *b = &ri->buf[slot];
        lig_dtype wrong;
        if (slot == RB_IDX || slot == RB_SQ) {
            wrong = th_rng_chance(r, 0.5) ? LIG_FLOAT32 : LIG_BFLOAT16;
        } else if (slot == RB_DW) {
            wrong = tc->dtype == LIG_FLOAT16 ? LIG_BFLOAT16 : th_rng_chance(r, 0.5) ? LIG_INT32 : LIG_FLOAT16;
        } else {
            wrong = th_rng_chance(r, 0.3) ? LIG_INT32 : tc->dtype == LIG_FLOAT32 ? LIG_FLOAT16 : LIG_FLOAT32;
        }
        fuzz_defect_replace(ri, slot, inst_new_tensor(ri, wrong, b->ndim, b->shape), "wrong dtype", ex);
        break;
    }
    case P_SHAPE: {
        const int slot = pick_slot(r, ri, RB_SK, RB_K);
        fuzz_defect_replace(ri, slot, inst_new_widened(ri, slot), "wrong shape", ex);
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
        fuzz_note_invalid(ex, "d_query overlaps query");
        break;
    }
    case P_NULL_WS_SIZE:
    case P_NULL_EXEC:
        fuzz_defect_null_pointer(ri, kind == P_NULL_WS_SIZE, ex);
        break;
    default: break;
    }
}

/* ---- the backward as a fuzzed operator ---- */

typedef struct fz_backward {
    tcase tc;
    fz_post post[2];
} fz_backward;

static void backward_prepare(th_rng *r, void *state, inst *in, suite_case *sc, fuzz_expect *ex)
{
    fz_backward *b = state;
    random_problem(r, &b->tc, ex);
    const int defects = fuzz_defect_count(r);
    for (int i = 0; i < defects; i++) {
        int kind = (int)th_rng_range(r, 0, 15);
        if (kind == 0) {
            fuzz_defect_seq(r, &b->tc, 0.0, ex);
        } else if (kind == 1) {
            fuzz_defect_seq_missing(r, &b->tc, ex);
        } else if (kind <= 3) {
            defect_index(r, &b->tc, ex);
        } else if (i == 0 || b->post[0] != (fz_post)(kind - 3)) {
            /* Never the same kind twice: two shape defects can cancel (dy and indices both K+1). */
            b->post[i] = (fz_post)(kind - 3); /* P_NULL_TENSOR .. P_NULL_EXEC */
        }
    }
    run_setup(&b->tc, in);
    for (int i = 0; i < 2; i++) {
        apply_post(r, b->post[i], in, &b->tc, ex);
    }
    sc->tc = &b->tc;
}

static void backward_describe(const void *state, const fuzz_expect *ex, char *out, size_t size)
{
    char desc[512];
    tc_describe(&((const fz_backward *)state)->tc, desc, sizeof desc);
    snprintf(out, size, "[%s] defects: %s", desc, ex->what[0] ? ex->what : "none");
}

static lig_status backward_phase2(th_rng *r, void *state, inst *in, const fuzz_expect *ex, int *may_fail,
                                  int *must_fail)
{
    (void)r;
    (void)state;
    *may_fail = ex->invalid2;
    /* with a zero dimension an index error may be moot */
    *must_fail = ex->invalid2 && !ex->empty;
    return inst_phase2(in, 0);
}

static void backward_free(void *state)
{
    tc_free(&((fz_backward *)state)->tc);
}

static const fuzz_operator fuzz_backward = {.name = "backward", .state_size = sizeof(fz_backward),
                                            .prepare = backward_prepare, .describe = backward_describe,
                                            .phase2 = backward_phase2, .checker = &suite_backward,
                                            .free_state = backward_free};

LIG_TEST(fuzz)
{
    static const fuzz_operator *const ops[] = {&fuzz_backward};
    const fuzz_spec spec = {.test_name = "fuzz", .share = FUZZ_SHARE_BACKWARD, .default_seed = FUZZ_DEFAULT_SEED,
                            .min_iterations = 20, .ops = ops, .n_ops = 1};
    fuzz_run(&spec);
}

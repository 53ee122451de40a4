/*
 * Fuzzing of the forward (lig_indexer) and the KL step (lig_kl_loss_and_dy) for their share of
 * LIG_FUZZ_SECONDS (fuzz_budget.h), alternating the two operators: random small problems --
 * layouts, dtypes, shapes with zeros, strides, lengths, modes, bands, sparse_count, thread
 * counts, KL ranks, padding and poison -- with up to two random defects (NULL pointers, bad
 * strings/counts/modes/bands/lengths, wrong dtypes or shapes, overlapping outputs, too small a
 * workspace, a stream, negative targets). Each call must either succeed and match the reference,
 * or fail with the documented status for the defect in the right phase, with a message, without
 * writing anything.
 *
 * The seed is printed; LIG_FUZZ_SEED=s reproduces a run and LIG_FUZZ_ITER=i reruns one iteration
 * (run "lig-tests fuzz_forward_kl" to rerun it here only).
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_budget.h"
#include "fuzz_helpers.h"
#include "fuzz_runner.h"
#include "case_generators.h"
#include "float_formats.h"
#include "framework.h"
#include "lig.h"
#include "forward_kl_checks.h"
#include "forward_kl_runner.h"

#define FUZZ_DEFAULT_SEED 20251130

/* ---- forward ---- */

typedef struct ff_fwd {
    tcase tc;
    int with_values;
    lig_dtype val_dtype;
} ff_fwd;

static void random_forward(th_rng *r, ff_fwd *f, fuzz_expect *ex)
{
    tcase *tc = &f->tc;
    tc_init(tc);
    tc->dtype = fuzz_pick_float(r);
    tc->idx_dtype = th_rng_chance(r, 0.5) ? LIG_INT32 : LIG_INT64;
    tc->seq_dtype = th_rng_chance(r, 0.5) ? LIG_INT32 : LIG_INT64;
    f->with_values = th_rng_chance(r, 0.7);
    f->val_dtype = th_rng_chance(r, 0.5) ? LIG_FLOAT32 : tc->dtype;
    fuzz_pick_mode_and_band(r, tc);
    int zero = th_rng_chance(r, 0.12) ? (int)th_rng_range(r, 0, 5) : -1;
    fuzz_pick_heads(r, tc, zero);
    tc->p.K = th_rng_chance(r, 0.2) ? th_rng_range(r, 9, 40) : th_rng_range(r, 1, 8);
    int64_t s1 = zero == 3 ? 0 : th_rng_range(r, 1, 8);
    int64_t s2 = zero == 4 ? 0 : th_rng_range(r, 1, 14);
    fuzz_pick_forms(r, tc, 0.1, 0.17, ex);
    fwd_gen_opts o;
    fwd_gen_opts_default(&o);
    o.grid = th_rng_chance(r, 0.8);
    tc->grid = o.grid;
    o.tie_heavy = o.grid && th_rng_chance(r, 0.5);
    o.poison = tc->in_strides != TC_BROADCAST;
    o.p_dup_key = 0.3 * th_rng_unit(r);
    o.p_zero_w = 0.3 * th_rng_unit(r);
    fuzz_layout(r, tc, s1, s2);
    fwd_gen_data(r, tc, &o);
    const ref_problem *p = &tc->p;
    ex->empty = p->B == 0 || p->S1 == 0 || p->S2 == 0 || p->N1 == 0 || p->D == 0;
}

static const int k_fwd_tensors[5] = {FW_Q, FW_K, FW_W, FW_IDX, FW_VAL};

/* One of the five tensors; `instead` of sparse_values when the call has none. */
static int fwd_pick_slot(th_rng *r, const op_inst *oi, int instead)
{
    const int slot = k_fwd_tensors[th_rng_range(r, 0, 4)];
    return slot == FW_VAL && !oi->present[FW_VAL] ? instead : slot;
}

/* Defects applied to the materialized call. `kind` 0..11. */
static void fwd_defect(th_rng *r, int kind, op_inst *oi, const ff_fwd *f, fuzz_expect *ex)
{
    static const char *bad_layouts[] = {"bsnd", "tnd", "BSN", "", "BSND\n", "TND ", "SBND"};
    const tcase *tc = &f->tc;
    switch (kind) {
    case 0: { /* NULL required tensor */
        static const int req[4] = {FW_Q, FW_K, FW_W, FW_IDX};
        fuzz_defect_null_tensor(r, oi, req, 4, ex);
        break;
    }
    case 1:
        oi->layout = bad_layouts[th_rng_range(r, 0, 6)];
        fuzz_note_invalid(ex, "bad layout");
        break;
    case 2:
        oi->layout = NULL;
        ex->null_err = 1;
        fuzz_note_defect(ex, "NULL layout");
        break;
    case 3: {
        const int64_t K = tc->p.K;
        const int64_t choices[4] = {0, -th_rng_range(r, 1, 5), K + 1, K > 1 ? K - 1 : INT64_MIN};
        oi->sparse_count = choices[th_rng_range(r, 0, 3)];
        fuzz_note_invalid(ex, "sparse_count");
        break;
    }
    case 4: {
        static const int64_t modes[] = {1, 2, 4, -1, 100};
        oi->sparse_mode = modes[th_rng_range(r, 0, 4)];
        fuzz_note_invalid(ex, "sparse_mode");
        break;
    }
    case 5:
        if (th_rng_chance(r, 0.5)) {
            oi->pre_tokens = th_rng_chance(r, 0.5) ? -1 : INT64_MIN;
        } else {
            oi->next_tokens = -th_rng_range(r, 1, 1000);
        }
        fuzz_note_invalid(ex, "negative band");
        break;
    case 6: { /* wrong dtype */
        const int slot = fwd_pick_slot(r, oi, oi->present[FW_SQ] ? FW_SQ : FW_IDX);
        const tbuf *b = &oi->buf[slot];
        lig_dtype wrong;
        if (slot == FW_IDX || slot == FW_SQ) {
            wrong = th_rng_chance(r, 0.5) ? LIG_FLOAT32 : LIG_BFLOAT16;
        } else if (slot == FW_VAL) {
            wrong = th_rng_chance(r, 0.4) ? LIG_INT32 : tc->dtype == LIG_FLOAT16 ? LIG_BFLOAT16 : LIG_FLOAT16;
            if (wrong == tc->dtype) {
                wrong = LIG_INT64;
            }
        } else {
            wrong = th_rng_chance(r, 0.3) ? LIG_INT32 : tc->dtype == LIG_FLOAT32 ? LIG_FLOAT16 : LIG_FLOAT32;
        }
        fuzz_defect_replace(oi, slot, inst_new_tensor(oi, wrong, b->ndim, b->shape), "wrong dtype", ex);
        break;
    }
    case 7: { /* wrong shape: the last axis is tied to another tensor or to sparse_count */
        const int slot = fwd_pick_slot(r, oi, oi->present[FW_SK] ? FW_SK : FW_W);
        fuzz_defect_replace(oi, slot, inst_new_widened(oi, slot), "wrong shape", ex);
        break;
    }
    case 8: { /* an output over an input or over the other output */
        tbuf *out = &oi->buf[FW_IDX];
        if (tbuf_numel(out) == 0 || tc->in_strides == TC_BROADCAST) {
            break;
        }
        if (oi->present[FW_VAL] && th_rng_chance(r, 0.5)) {
            /* values (2 or 4 bytes) over the indices (4 or 8 bytes), same shape: fits */
            const tbuf *v = &oi->buf[FW_VAL];
            oi->arg[FW_VAL] = inst_adopt(oi, lig_create_tensor(out->base + (size_t)out->offset * th_dtype_size(out->dtype),
                                                             v->dtype, v->ndim, v->shape, NULL));
            fuzz_note_defect(ex, "sparse_values over sparse_indices");
        } else {
            const tbuf *q = &oi->buf[FW_Q];
            if (tbuf_numel(q) == 0) {
                break;
            }
            const size_t qbytes = (size_t)tbuf_numel(q) * th_dtype_size(q->dtype);
            const size_t ibytes = (size_t)tbuf_numel(out) * th_dtype_size(out->dtype);
            if (qbytes <= out->bytes - (size_t)out->offset * th_dtype_size(out->dtype)) {
                /* the query read from inside the output */
                oi->arg[FW_Q] = inst_adopt(oi, lig_create_tensor(out->base + (size_t)out->offset *
                                                                   th_dtype_size(out->dtype),
                                                               q->dtype, q->ndim, q->shape, NULL));
            } else if (ibytes <= q->bytes - (size_t)q->offset * th_dtype_size(q->dtype)) {
                /* the indices written over the query's first elements */
                oi->arg[FW_IDX] = inst_adopt(oi, lig_create_tensor(q->base + (size_t)q->offset * th_dtype_size(q->dtype),
                                                                 out->dtype, out->ndim, out->shape, NULL));
            } else {
                break;
            }
            fuzz_note_defect(ex, "sparse_indices over query");
        }
        ex->invalid1 = 1;
        break;
    }
    case 9:
    case 10:
        fuzz_defect_null_pointer(oi, kind == 9, ex);
        break;
    default: break;
    }
}

/* ---- KL step ---- */

static void random_kl(th_rng *r, klcase *kc, fuzz_expect *ex)
{
    kl_init(kc);
    kc->ndim = (int)th_rng_range(r, 1, 4);
    for (int i = 0; i < kc->ndim - 1; i++) {
        kc->shape[i] = th_rng_chance(r, 0.05) ? 0 : th_rng_range(r, 1, 4);
    }
    kc->shape[kc->ndim - 1] = th_rng_chance(r, 0.05) ? 0 : th_rng_range(r, 1, 20);
    kc->v_dtype = fuzz_pick_float(r);
    kc->t_dtype = fuzz_pick_float(r);
    kc->dy_dtype = fuzz_pick_float(r);
    kc->idx_dtype = th_rng_chance(r, 0.5) ? LIG_INT32 : LIG_INT64;
    kc->has_indices = th_rng_chance(r, 0.5);
    kc->loss_ndim = (int)th_rng_range(r, 0, 2);
    kc->in_strides = fuzz_pick_in_strides(r, 0.1, 0.17, ex);
    kc->out_strides = fuzz_pick_plain_strides(r);
    kl_alloc(kc);
    kl_gen_opts o;
    kl_gen_opts_default(&o);
    o.p_pad = 0.5 * th_rng_unit(r);
    o.p_empty_row = 0.2 * th_rng_unit(r);
    o.p_zero_target = 0.3 * th_rng_unit(r);
    o.normalize = th_rng_chance(r, 0.7);
    o.logit_scale = th_rng_chance(r, 0.1) ? 3000.0 : 5.0;
    kl_gen_data(r, kc, &o);
}

/* A counted slot for a target defect, or -1. */
static int64_t some_counted(th_rng *r, const klcase *kc)
{
    const int64_t n = kl_rows(kc) * kl_K(kc);
    if (n == 0) {
        return -1;
    }
    const int64_t start = th_rng_range(r, 0, n - 1);
    for (int64_t k = 0; k < n; k++) {
        const int64_t i = (start + k) % n;
        if (kl_counted(kc, i)) {
            return i;
        }
    }
    return -1;
}

static const int k_kl_tensors[5] = {KL_VAL, KL_IDX, KL_TGT, KL_LOSS, KL_DY};

/* One of the tensors from k_kl_tensors[first] on; `instead` of sparse_indices when the call has
 * none. */
static int kl_pick_slot(th_rng *r, const op_inst *oi, int first, int instead)
{
    const int slot = k_kl_tensors[th_rng_range(r, first, 4)];
    return slot == KL_IDX && !oi->present[KL_IDX] ? instead : slot;
}

static void kl_defect(th_rng *r, int kind, op_inst *oi, const klcase *kc, fuzz_expect *ex)
{
    switch (kind) {
    case 0: {
        static const int req[4] = {KL_VAL, KL_TGT, KL_LOSS, KL_DY};
        fuzz_defect_null_tensor(r, oi, req, 4, ex);
        break;
    }
    case 1:
        fuzz_defect_null_pointer(oi, th_rng_chance(r, 0.5), ex);
        break;
    case 2: { /* wrong dtype */
        const int slot = kl_pick_slot(r, oi, 0, KL_DY);
        const tbuf *b = &oi->buf[slot];
        lig_dtype wrong;
        if (slot == KL_IDX) {
            wrong = th_rng_chance(r, 0.5) ? LIG_FLOAT32 : LIG_FLOAT16;
        } else if (slot == KL_LOSS) {
            static const lig_dtype l[4] = {LIG_FLOAT16, LIG_BFLOAT16, LIG_INT32, LIG_INT64};
            wrong = l[th_rng_range(r, 0, 3)];
        } else {
            wrong = th_rng_chance(r, 0.5) ? LIG_INT32 : LIG_INT64;
        }
        fuzz_defect_replace(oi, slot, inst_new_tensor(oi, wrong, b->ndim, b->shape), "wrong dtype", ex);
        break;
    }
    case 3: { /* wrong shape */
        const int slot = kl_pick_slot(r, oi, 1, KL_TGT);
        const tbuf *b = &oi->buf[slot];
        int64_t shape[LIG_MAX_DIMS];
        memcpy(shape, b->shape, sizeof shape);
        int nd = b->ndim;
        if (slot == KL_LOSS) {
            nd = 1;
            shape[0] = th_rng_chance(r, 0.5) ? 2 : 0;
        } else {
            shape[nd - 1] += 1;
        }
        fuzz_defect_replace(oi, slot, inst_new_tensor(oi, b->dtype, nd, shape), "wrong shape", ex);
        break;
    }
    case 4: { /* loss inside dy, or dy over target / values */
        if (kc->in_strides == TC_BROADCAST) {
            break;
        }
        const tbuf *dy = &oi->buf[KL_DY];
        if (tbuf_numel(dy) == 0) {
            break;
        }
        if (th_rng_chance(r, 0.5)) {
            const tbuf *l = &oi->buf[KL_LOSS];
            oi->arg[KL_LOSS] = inst_adopt(oi, lig_create_tensor(dy->base + (size_t)dy->offset * th_dtype_size(dy->dtype),
                                                              LIG_FLOAT32, l->ndim, l->shape, NULL));
            fuzz_note_defect(ex, "loss inside dy");
        } else {
            const int src = th_rng_chance(r, 0.5) ? KL_TGT : KL_VAL;
            const tbuf *s = &oi->buf[src];
            /* a contiguous dy view of the same shape fits inside a buffer of >= 2-byte elements only
             * when dy's elements are not wider: otherwise place the input inside dy */
            if (th_dtype_size(dy->dtype) <= th_dtype_size(s->dtype)) {
                oi->arg[KL_DY] = inst_adopt(oi, lig_create_tensor(s->base + (size_t)s->offset * th_dtype_size(s->dtype),
                                                                dy->dtype, dy->ndim, dy->shape, NULL));
            } else {
                oi->arg[src] = inst_adopt(oi, lig_create_tensor(dy->base + (size_t)dy->offset * th_dtype_size(dy->dtype),
                                                              s->dtype, s->ndim, s->shape, NULL));
            }
            fuzz_note_defect(ex, "dy over an input");
        }
        ex->invalid1 = 1;
        break;
    }
    default: break;
    }
}

/* ---- both as fuzzed operators ---- */

/* A defect only phase 2 can see. */
typedef enum ff_phase2_defect { F2_NONE = 0, F2_SHORT_WORKSPACE, F2_STREAM } ff_phase2_defect;

typedef lig_status (*ff_phase2_fn)(void *workspace, uint64_t workspace_size, lig_executor *executor, void *stream);

/* Phase 2 with too small a workspace, with a stream (neither operator takes one), or as it is. */
static lig_status ff_phase2(th_rng *r, ff_phase2_defect defect, ff_phase2_fn call, inst *in, int *want_fail)
{
    if (defect == F2_SHORT_WORKSPACE && in->workspace_size > 0) {
        *want_fail = 1;
        return inst_phase2(in, -(int64_t)th_rng_range(r, 1, (int64_t)in->workspace_size));
    }
    if (defect == F2_STREAM) {
        void *ws = in->workspace_size ? th_xmalloc((size_t)in->workspace_size) : NULL;
        int dummy = 0;
        const lig_status st = call(ws, in->workspace_size, in->executor, &dummy);
        in->executor = NULL;
        if (st != LIG_SUCCESS) {
            snprintf(in->message, sizeof in->message, "%s", lig_get_last_error());
        }
        free(ws);
        *want_fail = 1;
        return st;
    }
    return inst_phase2(in, 0);
}

static const char *ff_phase2_defect_name(ff_phase2_defect defect)
{
    return defect == F2_SHORT_WORKSPACE ? ", short workspace" : defect == F2_STREAM ? ", stream" : "";
}

typedef struct ff_forward {
    ff_fwd f;
    int kinds[2];
    ff_phase2_defect phase2_defect;
} ff_forward;

static void forward_prepare(th_rng *r, void *state, inst *in, suite_case *sc, fuzz_expect *ex)
{
    ff_forward *s = state;
    random_forward(r, &s->f, ex);
    s->kinds[0] = s->kinds[1] = -1;
    const int defects = fuzz_defect_count(r);
    for (int i = 0; i < defects; i++) {
        const int k = (int)th_rng_range(r, 0, 13);
        if (i == 1 && (k == s->kinds[0] || (k == 3 && s->kinds[0] == 7) || (k == 7 && s->kinds[0] == 3))) {
            /* never the same kind twice (two shape defects can cancel), nor sparse_count K+1 with
             * sparse_indices [.., K+1] */
            continue;
        }
        s->kinds[i] = k;
        if (k == 11) {
            fuzz_defect_seq(r, &s->f.tc, 0.3, ex);
        } else if (k >= 12) {
            s->phase2_defect = (ff_phase2_defect)th_rng_range(r, 1, 2);
        }
    }
    fwd_setup(&s->f.tc, s->f.with_values, s->f.val_dtype, in);
    for (int i = 0; i < 2; i++) {
        if (s->kinds[i] >= 0 && s->kinds[i] <= 10) {
            fwd_defect(r, s->kinds[i], in, &s->f, ex);
        }
    }
    sc->tc = &s->f.tc;
    sc->with_values = s->f.with_values;
    sc->val_dtype = s->f.val_dtype;
}

static void forward_describe(const void *state, const fuzz_expect *ex, char *out, size_t size)
{
    const ff_forward *s = state;
    char desc[512];
    tc_describe(&s->f.tc, desc, sizeof desc);
    snprintf(out, size, "forward [%s%s%s] defects: %s%s", desc, s->f.with_values ? " values=" : "",
             s->f.with_values ? th_dtype_name(s->f.val_dtype) : "", ex->what[0] ? ex->what : "none",
             ff_phase2_defect_name(s->phase2_defect));
}

static lig_status forward_phase2(th_rng *r, void *state, inst *in, const fuzz_expect *ex, int *may_fail,
                                 int *must_fail)
{
    (void)ex;
    const lig_status st = ff_phase2(r, ((ff_forward *)state)->phase2_defect, lig_indexer, in, may_fail);
    *must_fail = *may_fail;
    return st;
}

static void forward_free(void *state)
{
    tc_free(&((ff_forward *)state)->f.tc);
}

static const fuzz_operator fuzz_forward = {.name = "forward", .state_size = sizeof(ff_forward),
                                           .prepare = forward_prepare, .describe = forward_describe,
                                           .phase2 = forward_phase2, .checker = &suite_forward,
                                           .free_state = forward_free};

typedef struct ff_kl {
    klcase kc;
    int kinds[2];
    ff_phase2_defect phase2_defect;
    int64_t bad_target;  /* the counted slot given a negative or non-finite target, or -1 */
    int bad_target_live; /* after setup: broadcast views may have replaced or copied the row */
} ff_kl;

static void kl_prepare(th_rng *r, void *state, inst *in, suite_case *sc, fuzz_expect *ex)
{
    ff_kl *s = state;
    random_kl(r, &s->kc, ex);
    s->kinds[0] = s->kinds[1] = -1;
    s->bad_target = -1;
    int negative_target = 0;
    const int defects = fuzz_defect_count(r);
    for (int i = 0; i < defects; i++) {
        const int k = (int)th_rng_range(r, 0, 7);
        if (i == 1 && k == s->kinds[0]) {
            continue; /* never the same kind twice (two shape defects can cancel) */
        }
        s->kinds[i] = k;
        if (k == 7) {
            negative_target = 1;
            s->phase2_defect = F2_NONE;
        } else if (k >= 5) {
            negative_target = 0;
            s->phase2_defect = (ff_phase2_defect)th_rng_range(r, 1, 2);
        }
    }
    if (negative_target) {
        s->bad_target = some_counted(r, &s->kc);
        if (s->bad_target >= 0) {
            static const double bad[3] = {-0.5, NAN, -INFINITY};
            s->kc.target[s->bad_target] = bad[th_rng_range(r, 0, 2)];
        }
    }
    kl_setup(&s->kc, in);
    if (s->bad_target >= 0) {
        for (int64_t i = 0; i < kl_rows(&s->kc) * kl_K(&s->kc); i++) {
            s->bad_target_live |= kl_counted(&s->kc, i) && !(s->kc.target[i] >= 0.0);
        }
    }
    for (int i = 0; i < 2; i++) {
        if (s->kinds[i] >= 0 && s->kinds[i] <= 4) {
            kl_defect(r, s->kinds[i], in, &s->kc, ex);
        }
    }
    sc->kc = &s->kc;
}

static void kl_describe_call(const void *state, const fuzz_expect *ex, char *out, size_t size)
{
    const ff_kl *s = state;
    char desc[512];
    kl_describe(&s->kc, desc, sizeof desc);
    snprintf(out, size, "KL step [%s] defects: %s%s%s", desc, ex->what[0] ? ex->what : "none",
             ff_phase2_defect_name(s->phase2_defect), s->bad_target_live ? ", bad target in a counted slot" : "");
}

static lig_status kl_phase2(th_rng *r, void *state, inst *in, const fuzz_expect *ex, int *may_fail, int *must_fail)
{
    (void)ex;
    ff_kl *s = state;
    *may_fail = s->bad_target_live;
    const lig_status st = ff_phase2(r, s->phase2_defect, lig_kl_loss_and_dy, in, may_fail);
    *must_fail = *may_fail;
    return st;
}

static void kl_free_state(void *state)
{
    kl_free(&((ff_kl *)state)->kc);
}

static const fuzz_operator fuzz_kl = {.name = "KL step", .state_size = sizeof(ff_kl), .prepare = kl_prepare,
                                      .describe = kl_describe_call, .phase2 = kl_phase2, .checker = &suite_kl,
                                      .free_state = kl_free_state};

LIG_TEST(fuzz_forward_kl)
{
    /* alternating: even iterations the forward, odd ones the KL step */
    static const fuzz_operator *const ops[] = {&fuzz_forward, &fuzz_kl};
    const fuzz_spec spec = {.test_name = "fuzz_forward_kl", .share = FUZZ_SHARE_FORWARD_KL,
                            .default_seed = FUZZ_DEFAULT_SEED, .min_iterations = 40, .ops = ops, .n_ops = 2};
    fwd_check_stats_reset();
    fuzz_run(&spec);
    fwd_check_stats_note("forward fuzz");
}

/*
 * Fuzzing of the forward (lig_indexer) and the KL step (lig_indexer_kl_grad) for their share of
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
#include "case_generators.h"
#include "float_formats.h"
#include "framework.h"
#include "lig.h"
#include "forward_kl_checks.h"
#include "forward_kl_runner.h"
#include "tests.h"

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
    tc->p.sparse_mode = th_rng_chance(r, 0.5) ? 0 : 3;
    tc->p.pre_tokens = fuzz_pick_band(r);
    tc->p.next_tokens = fuzz_pick_band(r);
    int zero = th_rng_chance(r, 0.12) ? (int)th_rng_range(r, 0, 5) : -1;
    fuzz_pick_heads(r, tc, zero);
    tc->p.K = th_rng_chance(r, 0.2) ? th_rng_range(r, 9, 40) : th_rng_range(r, 1, 8);
    int64_t s1 = zero == 3 ? 0 : th_rng_range(r, 1, 8);
    int64_t s2 = zero == 4 ? 0 : th_rng_range(r, 1, 14);
    tc->short_form = tc->p.N2 == 1 && th_rng_chance(r, 0.5);
    tc->in_strides = fuzz_pick_in_strides(r, 0.1, 0.17, ex);
    tc->out_strides = fuzz_pick_plain_strides(r);
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

/* Defects applied to the materialized call. `kind` 0..11. */
static void fwd_defect(th_rng *r, int kind, op_inst *oi, const ff_fwd *f, fuzz_expect *ex)
{
    static const char *bad_layouts[] = {"bsnd", "tnd", "BSN", "", "BSND\n", "TND ", "SBND"};
    const tcase *tc = &f->tc;
    switch (kind) {
    case 0: { /* NULL required tensor */
        static const int req[4] = {FW_Q, FW_K, FW_W, FW_IDX};
        oi->arg[req[th_rng_range(r, 0, 3)]] = NULL;
        ex->null_err = 1;
        fuzz_note_defect(ex, "NULL tensor");
        break;
    }
    case 1:
        oi->layout = bad_layouts[th_rng_range(r, 0, 6)];
        ex->invalid1 = 1;
        fuzz_note_defect(ex, "bad layout");
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
        ex->invalid1 = 1;
        fuzz_note_defect(ex, "sparse_count");
        break;
    }
    case 4: {
        static const int64_t modes[] = {1, 2, 4, -1, 100};
        oi->sparse_mode = modes[th_rng_range(r, 0, 4)];
        ex->invalid1 = 1;
        fuzz_note_defect(ex, "sparse_mode");
        break;
    }
    case 5:
        if (th_rng_chance(r, 0.5)) {
            oi->pre_tokens = th_rng_chance(r, 0.5) ? -1 : INT64_MIN;
        } else {
            oi->next_tokens = -th_rng_range(r, 1, 1000);
        }
        ex->invalid1 = 1;
        fuzz_note_defect(ex, "negative band");
        break;
    case 6: { /* wrong dtype */
        int slot = k_fwd_tensors[th_rng_range(r, 0, 4)];
        if (slot == FW_VAL && !oi->present[FW_VAL]) {
            slot = oi->present[FW_SQ] ? FW_SQ : FW_IDX;
        }
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
        oi->arg[slot] = inst_new_tensor(oi, wrong, b->ndim, b->shape);
        ex->invalid1 = 1;
        fuzz_note_defect(ex, "wrong dtype");
        break;
    }
    case 7: { /* wrong shape: the last axis is tied to another tensor or to sparse_count */
        int slot = k_fwd_tensors[th_rng_range(r, 0, 4)];
        if (slot == FW_VAL && !oi->present[FW_VAL]) {
            slot = oi->present[FW_SK] ? FW_SK : FW_W;
        }
        oi->arg[slot] = inst_new_widened(oi, slot);
        ex->invalid1 = 1;
        fuzz_note_defect(ex, "wrong shape");
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

static void kl_defect(th_rng *r, int kind, op_inst *oi, const klcase *kc, fuzz_expect *ex)
{
    switch (kind) {
    case 0: {
        static const int req[4] = {KL_VAL, KL_TGT, KL_LOSS, KL_DY};
        oi->arg[req[th_rng_range(r, 0, 3)]] = NULL;
        ex->null_err = 1;
        fuzz_note_defect(ex, "NULL tensor");
        break;
    }
    case 1:
        fuzz_defect_null_pointer(oi, th_rng_chance(r, 0.5), ex);
        break;
    case 2: { /* wrong dtype */
        int slot = k_kl_tensors[th_rng_range(r, 0, 4)];
        if (slot == KL_IDX && !oi->present[KL_IDX]) {
            slot = KL_DY;
        }
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
        oi->arg[slot] = inst_new_tensor(oi, wrong, b->ndim, b->shape);
        ex->invalid1 = 1;
        fuzz_note_defect(ex, "wrong dtype");
        break;
    }
    case 3: { /* wrong shape */
        int slot = k_kl_tensors[th_rng_range(r, 1, 4)];
        if (slot == KL_IDX && !oi->present[KL_IDX]) {
            slot = KL_TGT;
        }
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
        oi->arg[slot] = inst_new_tensor(oi, b->dtype, nd, shape);
        ex->invalid1 = 1;
        fuzz_note_defect(ex, "wrong shape");
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

/* ---- one iteration ---- */

static int fuzz_one(uint64_t seed, int64_t iter, void *arg)
{
    th_rng r = th_rng_make(seed ^ ((uint64_t)iter * 0x9E3779B97F4A7C15ull));
    const int op = (int)(iter % 2); /* 0 forward, 1 KL step */
    fuzz_stats *stats = (fuzz_stats *)arg + op;
    if (th_rng_chance(&r, 0.3)) {
        lig_set_num_threads((int)th_rng_range(&r, 1, 4));
    }
    fuzz_expect ex;
    memset(&ex, 0, sizeof ex);
    ff_fwd f;
    klcase kc;
    op_inst oi;
    memset(&f, 0, sizeof f);
    memset(&kc, 0, sizeof kc);
    if (op == 0) {
        random_forward(&r, &f, &ex);
    } else {
        random_kl(&r, &kc, &ex);
    }
    const int defects = th_rng_chance(&r, 0.45) ? 0 : (int)th_rng_range(&r, 1, 2);
    int kinds[2] = {-1, -1};
    int phase2_defect = 0; /* 1 short workspace, 2 stream, 3 negative target */
    int64_t bad_target = -1;
    for (int i = 0; i < defects; i++) {
        int k = (int)th_rng_range(&r, 0, op == 0 ? 13 : 7);
        if (i == 1 && (k == kinds[0] || (op == 0 && ((k == 3 && kinds[0] == 7) || (k == 7 && kinds[0] == 3))))) {
            /* never the same kind twice (two shape defects can cancel), nor sparse_count K+1 with
             * sparse_indices [.., K+1] */
            continue;
        }
        kinds[i] = k;
        if (op == 0 && k == 11) {
            fuzz_defect_seq(&r, &f.tc, 0.3, &ex);
        } else if ((op == 0 && k >= 12) || (op == 1 && k >= 5)) {
            phase2_defect = op == 1 && k == 7 ? 3 : (int)th_rng_range(&r, 1, 2);
        }
    }
    if (phase2_defect == 3) {
        bad_target = some_counted(&r, &kc);
        if (bad_target >= 0) {
            static const double bad[3] = {-0.5, NAN, -INFINITY};
            kc.target[bad_target] = bad[th_rng_range(&r, 0, 2)];
        }
    }
    if (op == 0) {
        fwd_setup(&f.tc, f.with_values, f.val_dtype, &oi);
    } else {
        kl_setup(&kc, &oi);
    }
    int bad_target_live = 0; /* after setup: broadcast views may have replaced or copied the row */
    if (op == 1 && bad_target >= 0) {
        for (int64_t i = 0; i < kl_rows(&kc) * kl_K(&kc); i++) {
            bad_target_live |= kl_counted(&kc, i) && !(kc.target[i] >= 0.0);
        }
    }
    for (int i = 0; i < 2; i++) {
        if (kinds[i] < 0) {
            continue;
        }
        if (op == 0 && kinds[i] <= 10) {
            fwd_defect(&r, kinds[i], &oi, &f, &ex);
        } else if (op == 1 && kinds[i] <= 4) {
            kl_defect(&r, kinds[i], &oi, &kc, &ex);
        }
    }

    char desc[512], label[1200];
    if (op == 0) {
        tc_describe(&f.tc, desc, sizeof desc);
    } else {
        kl_describe(&kc, desc, sizeof desc);
    }
    snprintf(label, sizeof label, "fuzz_forward_kl iteration %" PRId64 " (LIG_FUZZ_SEED=%" PRIu64
             " LIG_FUZZ_ITER=%" PRId64 ") %s [%s%s%s] defects: %s%s%s",
             iter, seed, iter, op == 0 ? "forward" : "KL step", desc, op == 0 && f.with_values ? " values=" : "",
             op == 0 && f.with_values ? th_dtype_name(f.val_dtype) : "", ex.what[0] ? ex.what : "none",
             phase2_defect == 1 ? ", short workspace" : phase2_defect == 2 ? ", stream" : "",
             bad_target_live ? ", bad target in a counted slot" : "");
    const int before = th_current_failures();
    stats->iterations++;

    if (fuzz_check_phase1(&oi, inst_phase1(&oi), &ex, label, stats)) {
        if (op == 0 && ex.empty) {
            CHECK(oi.workspace_size == 0, "%s: empty problem wants %" PRIu64 " workspace bytes", label,
                  oi.workspace_size);
        }
        lig_status st;
        int want_fail2 = 0;
        if (phase2_defect == 1 && oi.workspace_size > 0) {
            st = inst_phase2(&oi, -(int64_t)th_rng_range(&r, 1, (int64_t)oi.workspace_size));
            want_fail2 = 1;
        } else if (phase2_defect == 2) {
            void *ws = oi.workspace_size ? th_xmalloc((size_t)oi.workspace_size) : NULL;
            int dummy = 0;
            st = op == 0 ? lig_indexer(ws, oi.workspace_size, oi.executor, &dummy)
                         : lig_indexer_kl_grad(ws, oi.workspace_size, oi.executor, &dummy);
            oi.executor = NULL;
            if (st != LIG_SUCCESS) {
                snprintf(oi.message, sizeof oi.message, "%s", lig_get_last_error());
            }
            free(ws);
            want_fail2 = 1;
        } else {
            st = inst_phase2(&oi, 0);
            want_fail2 = bad_target_live;
        }
        suite_case sc = {.tc = &f.tc, .kc = &kc, .with_values = f.with_values, .val_dtype = f.val_dtype};
        fuzz_check_phase2(&oi, st, want_fail2, want_fail2, op == 0 ? &suite_forward : &suite_kl, &sc, label, stats);
    }
    inst_teardown(&oi);
    if (op == 0) {
        tc_free(&f.tc);
    } else {
        kl_free(&kc);
    }
    return th_current_failures() == before;
}

void test_fuzz_forward_kl(void)
{
    fuzz_stats stats[2];
    memset(stats, 0, sizeof stats);
    fwd_check_stats_reset();
    fuzz_drive(FUZZ_SHARE_FORWARD_KL, FUZZ_DEFAULT_SEED, 40, fuzz_one, stats);
    fuzz_stats_note("forward", &stats[0]);
    fuzz_stats_note("KL step", &stats[1]);
    fwd_check_stats_note("forward fuzz");
}

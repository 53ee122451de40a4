#include "fuzz_case.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor_buffers.h"
#include "backward_checks.h"
#include "float_formats.h"
#include "framework.h"
#include "lig.h"
#include "forward_kl_checks.h"

/* ---- views ---- */

static void decode_view(fz_in *in, fz_view *v)
{
    memset(v, 0, sizeof *v);
    const uint8_t m = fz_u8(in);
    v->mode = m < 100 ? 0 : m < 150 ? 1 : m < 200 ? 2 : 3;
    if (v->mode == 0) {
        return;
    }
    v->inner = fz_chance(in, 40) ? 2 : 1;
    uint8_t keys[4];
    for (int d = 0; d < 4; d++) {
        keys[d] = fz_u8(in);
        v->pad[d] = keys[d] % 3;
        v->raw[d] = (int64_t)(int8_t)keys[d] % 24;
        v->order[d] = d;
    }
    /* mode 2: the dimensions in the order of their keys (a permutation whatever the bytes) */
    for (int i = 1; i < 4; i++) {
        for (int j = i; j > 0 && keys[v->order[j - 1]] > keys[v->order[j]]; j--) {
            const int t = v->order[j];
            v->order[j] = v->order[j - 1];
            v->order[j - 1] = t;
        }
    }
    v->offset = fz_range(in, 0, 3);
}

static void view_strides(void *ctx, tbuf *b, int output)
{
    (void)output; /* inputs and outputs draw from the same layouts; fz_expect_outputs judges */
    fz_views *vs = ctx;
    if (vs->next >= vs->n) {
        return; /* more tensors than decoded views: row-major */
    }
    const fz_view *v = &vs->v[vs->next++];
    const int n = b->ndim;
    if (v->mode == 0 || n > 4) {
        b->null_strides = v->mode == 0;
        return;
    }
    b->offset = v->offset;
    if (v->mode == 3) {
        for (int d = 0; d < n; d++) {
            b->strides[d] = v->raw[d];
        }
        return;
    }
    /* memory order: innermost first; mode 1 row-major, mode 2 the decoded permutation */
    int64_t s = v->inner;
    for (int i = n - 1; i >= 0; i--) {
        const int d = v->mode == 1 ? i : v->order[4 - n + i] % n;
        b->strides[d] = s;
        s *= (b->shape[d] > 0 ? b->shape[d] : 1) + v->pad[d];
    }
    if (v->mode == 2) {
        /* order[] restricted to n dims may repeat a dimension: fall back to row-major then */
        int seen = 0;
        for (int i = 0; i < n; i++) {
            seen |= 1 << (v->order[4 - n + i] % n);
        }
        if (seen != (1 << n) - 1) {
            s = v->inner;
            for (int d = n - 1; d >= 0; d--) {
                b->strides[d] = s;
                s *= (b->shape[d] > 0 ? b->shape[d] : 1) + v->pad[d];
            }
        }
    }
}

void fz_decode_views(fz_in *in, fz_views *vs, int n)
{
    memset(vs, 0, sizeof *vs);
    vs->n = n < FZ_MAX_VIEWS ? n : FZ_MAX_VIEWS;
    for (int i = 0; i < vs->n; i++) {
        decode_view(in, &vs->v[i]);
    }
    tbuf_set_stride_source(view_strides, vs);
}

/* ---- environment ---- */

void fz_decode_env(fz_in *in, char *desc, size_t size)
{
    const int threads = (int)fz_range(in, 1, 4);
    lig_set_num_threads(threads);
    /* the sets this CPU runs, "scalar,avx2,...": pick one by position, or automatic */
    char sets[128];
    snprintf(sets, sizeof sets, "%s", lig_kernel_sets());
    int count = 1;
    for (const char *c = sets; *c; c++) {
        count += *c == ',';
    }
    int pick = (int)fz_range(in, 0, count); /* 0: automatic */
    const char *name = "";
    if (pick > 0) {
        char *tok = strtok(sets, ",");
        while (--pick > 0 && tok != NULL) {
            tok = strtok(NULL, ",");
        }
        name = tok != NULL ? tok : "";
    }
    CHECK(lig_set_kernel_set(name) == LIG_SUCCESS, "lig_set_kernel_set(\"%s\") refused a listed set: %s", name,
          lig_get_last_error());
    snprintf(desc, size, "threads=%d set=%s", threads, name[0] ? name : "auto");
}

void fz_reset_env(void)
{
    lig_set_num_threads(0);
    lig_set_kernel_set(NULL);
}

/* ---- problems ---- */

double fz_value(fz_in *in, lig_dtype dtype, int grid)
{
    if (grid) {
        return (double)((int)(fz_u8(in) % 33) - 16) / 8.0;
    }
    const uint32_t u = (uint32_t)fz_u8(in) << 8 | fz_u8(in);
    return th_round_dtype(dtype, (double)u / 32768.0 - 1.0);
}

static int64_t decode_band(fz_in *in)
{
    const uint8_t b = fz_u8(in);
    if (b < 128) {
        return INT64_MAX;
    }
    if (b < 240) {
        return b % 7;
    }
    return b & 1 ? INT64_MAX - 1 : (int64_t)1 << 40;
}

static void fill(fz_in *in, double *v, int64_t n, lig_dtype dtype, int grid)
{
    for (int64_t i = 0; i < n; i++) {
        v[i] = fz_value(in, dtype, grid);
    }
}

void fz_decode_tcase(fz_in *in, tcase *tc, int forward)
{
    static const lig_dtype floats[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    tc_init(tc);
    const uint8_t f = fz_u8(in);
    tc->dtype = floats[(f & 3) % 3];
    tc->dw_dtype = f & 4 ? LIG_FLOAT32 : tc->dtype;
    tc->idx_dtype = f & 8 ? LIG_INT64 : LIG_INT32;
    tc->seq_dtype = f & 16 ? LIG_INT64 : LIG_INT32;
    tc->deterministic = (f & 32) != 0;
    /* the backward's gate decides S > 0: continuous data could put S within fp32's error of 0,
     * where the reference and the library may decide differently, so it stays on the grid */
    tc->grid = !forward || (f & 64) != 0;
    const int tnd = (f & 128) != 0;
    const uint8_t m = fz_u8(in);
    tc->p.sparse_mode = m & 1 ? 3 : 0;
    tc->p.pre_tokens = decode_band(in);
    tc->p.next_tokens = decode_band(in);
    tc->p.B = fz_range(in, 0, 3);
    tc->p.N2 = fz_range(in, 1, 3);
    tc->p.N1 = tc->p.N2 * fz_range(in, 0, 3);
    tc->p.D = fz_range(in, 0, 17);
    tc->p.K = forward ? fz_range(in, 1, 20) : fz_range(in, 0, 9);
    tc->head_num = m & 2 ? 0 : tc->p.N1;
    tc->short_form = tc->p.N2 == 1 && (m & 4) != 0;
    tc->in_strides = tc->out_strides = TC_SOURCE;
    if (!tnd) {
        tc->p.layout = REF_BSND;
        tc->p.S1 = fz_range(in, 0, 7);
        tc->p.S2 = fz_range(in, 0, 9);
        tc->has_seq_q = (m & 8) != 0;
        tc->has_seq_k = (m & 16) != 0;
        tc_alloc(tc);
        for (int64_t b = 0; b < tc->p.B; b++) {
            tc->seq_q[b] = fz_range(in, 0, tc->p.S1);
            tc->seq_k[b] = fz_range(in, 0, tc->p.S2);
        }
    } else {
        /* cumulative ends, then up to two rows past the last */
        int64_t lq[3], lk[3], eq = 0, ek = 0;
        for (int64_t b = 0; b < tc->p.B; b++) {
            lq[b] = eq += fz_range(in, 0, 4);
            lk[b] = ek += fz_range(in, 0, 5);
        }
        tc->p.layout = REF_TND;
        tc->p.S1 = eq + fz_range(in, 0, 2);
        tc->p.S2 = ek + fz_range(in, 0, 2);
        tc->has_seq_q = tc->has_seq_k = 1;
        tc_alloc(tc);
        memcpy(tc->seq_q, lq, (size_t)tc->p.B * sizeof(int64_t));
        memcpy(tc->seq_k, lk, (size_t)tc->p.B * sizeof(int64_t));
    }
    fill(in, tc->q, tc_numel_q(tc), tc->dtype, tc->grid);
    fill(in, tc->k, tc_numel_k(tc), tc->dtype, tc->grid);
    fill(in, tc->w, tc_numel_w(tc), tc->dtype, tc->grid);
    if (!forward) {
        fill(in, tc->dy, tc_numel_slots(tc), tc->dtype, tc->grid);
    }
}

void fz_defect_seq(fz_in *in, tcase *tc, fuzz_expect *ex)
{
    ref_problem *p = &tc->p;
    if (p->B == 0) {
        return;
    }
    const int64_t b = fz_range(in, 0, p->B - 1);
    const uint8_t how = fz_u8(in);
    const int on_q = how & 1;
    int64_t *seq = on_q ? tc->seq_q : tc->seq_k;
    const int64_t limit = on_q ? p->S1 : p->S2;
    if (p->layout == REF_BSND) {
        *(on_q ? &tc->has_seq_q : &tc->has_seq_k) = 1;
        tc_sync_seq(tc);
        seq[b] = how & 2 ? limit + 1 + (how >> 2) % 3 : -1 - (how >> 2) % 3;
        fuzz_note_defect(ex, "BSND length out of range");
    } else if (how & 2) {
        *(on_q ? &tc->has_seq_q : &tc->has_seq_k) = 0;
        tc_sync_seq(tc);
        fuzz_note_defect(ex, "TND without a length array");
    } else if (b > 0 && seq[b - 1] > 0) {
        seq[b] = seq[b - 1] - 1 - (how >> 2) % seq[b - 1];
        fuzz_note_defect(ex, "TND ends decreasing");
    } else {
        seq[p->B - 1] = limit + 1 + (how >> 2) % 3;
        fuzz_note_defect(ex, "TND end past T");
    }
    ex->invalid1 = 1;
}

/* An index outside -1 .. lk-1. */
static int64_t out_of_range(uint8_t b, int64_t lk)
{
    static const int64_t far[4] = {INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN};
    switch (b & 7) {
    case 0: return lk;
    case 1: return lk + 1 + (b >> 3);
    case 2: return -2;
    case 3: return -2 - (b >> 3);
    default: return far[(b & 7) - 4];
    }
}

void fz_decode_indices(fz_in *in, tcase *tc, int bad)
{
    const ref_problem *p = &tc->p;
    const int ok = ref_seq_ok(p, NULL, 0);
    const int64_t rows = ref_rows_q(p), per_row = p->N2 * p->K;
    for (int64_t row = 0; row < rows; row++) {
        ref_row info;
        memset(&info, 0, sizeof info);
        if (ok) {
            ref_row_info(p, row, &info);
        }
        for (int64_t s = row * per_row; s < (row + 1) * per_row; s++) {
            const uint8_t b = fz_u8(in);
            int64_t v;
            if (!info.valid) {
                v = (int8_t)b; /* never read: garbage allowed */
            } else if (b < 24) {
                v = -1;
            } else if (bad && b >= 248) {
                v = out_of_range(b, info.lk);
            } else {
                v = info.lk > 0 ? b % info.lk : -1;
            }
            tc->idx[s] = v;
        }
    }
}

/* ---- views the library sees ---- */

int fz_creation_failed(const inst *in)
{
    int failed = 0;
    for (int i = 0; i < in->nbuf; i++) {
        const tbuf *b = &in->buf[i];
        if (!in->present[i] || b->t != NULL) {
            continue;
        }
        int negative = 0;
        for (int d = 0; d < b->ndim; d++) {
            negative |= !b->null_strides && b->strides[d] < 0;
        }
        CHECK(negative, "lig_create_tensor refused buffer %d without a negative stride: %s", i, lig_get_last_error());
        failed = 1;
    }
    return failed;
}

/* 1 when no two elements of the view share an element of memory (brute force over the buffer). */
static int injective(const tbuf *b)
{
    const int64_t n = tbuf_numel(b);
    const size_t elems = b->bytes / th_dtype_size(b->dtype);
    unsigned char *seen = th_xcalloc(elems, 1);
    int ok = 1;
    for (int64_t i = 0; i < n && ok; i++) {
        const int64_t off = tbuf_elem_offset(b, i);
        ok = !seen[off];
        seen[off] = 1;
    }
    free(seen);
    return ok;
}

/* Sorted by stride, each dimension of extent > 1 starts past the span of the smaller ones. */
static int nested(const tbuf *b)
{
    int64_t st[LIG_MAX_DIMS], ex[LIG_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < b->ndim; d++) {
        if (b->shape[d] > 1) {
            st[n] = b->strides[d];
            ex[n++] = b->shape[d];
        }
    }
    for (int i = 1; i < n; i++) {
        for (int j = i; j > 0 && st[j - 1] > st[j]; j--) {
            const int64_t ts = st[j], te = ex[j];
            st[j] = st[j - 1];
            ex[j] = ex[j - 1];
            st[j - 1] = ts;
            ex[j - 1] = te;
        }
    }
    int64_t reach = 0;
    for (int i = 0; i < n; i++) {
        if (st[i] <= reach) {
            return 0;
        }
        reach += (ex[i] - 1) * st[i];
    }
    return 1;
}

void fz_expect_outputs(const inst *in, fuzz_expect *ex)
{
    for (int i = in->first_output; i < in->nbuf; i++) {
        const tbuf *b = &in->buf[i];
        if (!in->present[i] || b->t == NULL || tbuf_numel(b) == 0) {
            continue;
        }
        if (!injective(b)) {
            ex->invalid1 = 1;
            fuzz_note_defect(ex, "output with overlapping strides");
        } else if (!nested(b)) {
            ex->maybe_refused = 1;
        }
    }
}

/* ---- defects ---- */

static lig_dtype wrong_dtype(fz_in *in, unsigned allowed)
{
    lig_dtype pick[5];
    int n = 0;
    for (int d = LIG_FLOAT32; d <= LIG_INT64; d++) {
        if (!(allowed & 1u << d)) {
            pick[n++] = (lig_dtype)d;
        }
    }
    return pick[fz_range(in, 0, n - 1)];
}

/* A contiguous view of output `o`'s dtype and shape at the first element of buffer `src`, when
 * the buffer holds it (so that a library that wrongly writes stays inside the allocation). */
static int alias(inst *oi, int o, int src)
{
    const tbuf *ob = &oi->buf[o], *sb = &oi->buf[src];
    const size_t need = (size_t)tbuf_numel(ob) * th_dtype_size(ob->dtype);
    const size_t start = (size_t)sb->offset * th_dtype_size(sb->dtype);
    if (tbuf_numel(ob) == 0 || tbuf_numel(sb) == 0 || oi->arg[src] == NULL || start + need > sb->bytes) {
        return 0;
    }
    oi->arg[o] = inst_adopt(oi, lig_create_tensor(sb->base + start, ob->dtype, ob->ndim, ob->shape, NULL));
    return 1;
}

void fz_defect_common(fz_in *in, int kind, inst *oi, const fz_op_desc *op, fuzz_expect *ex)
{
    static const char *bad_layouts[] = {"bsnd", "tnd", "BSN", "", "BSND\n", "TND ", "SBND", "PA_BSND"};
    const int slot = op->slots[fz_range(in, 0, op->n_slots - 1)];
    const tbuf *b = &oi->buf[slot];
    switch (kind) {
    case FZ_D_NULL_TENSOR:
        oi->arg[op->required[fz_range(in, 0, op->n_required - 1)]] = NULL;
        ex->null_err = 1;
        fuzz_note_defect(ex, "NULL tensor");
        break;
    case FZ_D_DTYPE:
        if (oi->present[slot]) {
            oi->arg[slot] = inst_new_tensor(oi, wrong_dtype(in, op->allowed[slot]), b->ndim, b->shape);
            ex->invalid1 = 1;
            fuzz_note_defect(ex, "wrong dtype");
        }
        break;
    case FZ_D_SHAPE:
        if (oi->present[slot] && b->ndim > 0) {
            oi->arg[slot] = inst_new_widened(oi, slot);
            ex->invalid1 = 1;
            fuzz_note_defect(ex, "wrong shape");
        }
        break;
    case FZ_D_ALIAS: {
        const int o = oi->first_output + (int)fz_range(in, 0, oi->nbuf - oi->first_output - 1);
        if (oi->present[o] && slot != o && oi->present[slot] && oi->arg[o] != NULL && alias(oi, o, slot)) {
            ex->invalid1 = 1;
            fuzz_note_defect(ex, "output over another tensor");
        }
        break;
    }
    case FZ_D_POINTERS:
        fuzz_defect_null_pointer(oi, fz_u8(in) & 1, ex);
        break;
    case FZ_D_LAYOUT:
        if (op->has_layout) {
            const uint8_t w = fz_u8(in);
            oi->layout = w < 32 ? NULL : bad_layouts[w % 8];
            *(w < 32 ? &ex->null_err : &ex->invalid1) = 1;
            fuzz_note_defect(ex, "bad layout");
        }
        break;
    case FZ_D_MODE:
        if (op->has_layout) {
            static const int64_t modes[] = {1, 2, 4, -1, 100, INT64_MIN};
            oi->sparse_mode = modes[fz_range(in, 0, 5)];
            ex->invalid1 = 1;
            fuzz_note_defect(ex, "sparse_mode");
        }
        break;
    case FZ_D_BAND:
        if (op->has_layout) {
            const uint8_t w = fz_u8(in);
            *(w & 1 ? &oi->pre_tokens : &oi->next_tokens) = w & 2 ? INT64_MIN : -1 - (w >> 2);
            ex->invalid1 = 1;
            fuzz_note_defect(ex, "negative band");
        }
        break;
    default: break;
    }
}

void fz_decode_kinds(fz_in *in, int n_kinds, int *kinds)
{
    for (int i = 0; i < 2; i++) {
        const uint8_t d = fz_u8(in);
        kinds[i] = d < 160 ? -1 : d % n_kinds;
    }
    if (kinds[1] == kinds[0]) {
        kinds[1] = -1; /* two shape defects could cancel out */
    }
}

int fz_p2_of(const int *kinds, int short_ws, int stream, int null_ws)
{
    for (int i = 0; i < 2; i++) {
        if (kinds[i] == short_ws || kinds[i] == stream || kinds[i] == null_ws) {
            return kinds[i] == short_ws ? FZ_P2_SHORT : kinds[i] == stream ? FZ_P2_STREAM : FZ_P2_NULL;
        }
    }
    return FZ_P2_NONE;
}

const char *fz_p2_name(int p2)
{
    return p2 == FZ_P2_SHORT ? ", short workspace" : p2 == FZ_P2_STREAM ? ", stream" : p2 == FZ_P2_NULL ? ", no workspace" : "";
}

/* ---- the call ---- */

static void save_message(inst *oi, lig_status st)
{
    if (st != LIG_SUCCESS) {
        snprintf(oi->message, sizeof oi->message, "%s", lig_get_last_error());
    }
}

int fz_env_flag(const char *name)
{
    const char *e = getenv(name);
    return e != NULL && e[0] == '1';
}

/* Outcomes over the process, printed at exit with LIG_FUZZ_STATS=1 (what the inputs reached). */
static fuzz_stats g_stats;
static int g_stats_registered;

static void print_stats(void)
{
    /* the checks' own totals show that the matches compared real work, not empty outputs */
    const check_stats c = check_stats_get();
    const fwd_check_stats f = fwd_check_stats_get();
    fprintf(stderr,
            "lig fuzz: %" PRId64 " calls: %" PRId64 " matched the reference, %" PRId64 " refused views, %" PRId64
            " NULLPTR and %" PRId64 " INVALID in phase 1, %" PRId64 " failed in phase 2; checked: %" PRId64
            " counted backward slots, %" PRId64 " non-zero gradients, %" PRId64 " selected forward keys\n",
            g_stats.iterations, g_stats.successes, g_stats.refusals, g_stats.nullptr_errors, g_stats.invalid1,
            g_stats.invalid2, c.counted_slots, c.nonzero, f.selected);
}

/* LIG_FUZZ_PERTURB=1 changes one output element after every successful call, before the checks:
 * the targets must then abort (make test-fuzz checks that they do, so the checks cannot be
 * vacuous). */
static int g_perturb;

static void perturb_output(inst *oi)
{
    for (int i = oi->first_output; i < oi->nbuf; i++) {
        tbuf *b = &oi->buf[i];
        if (oi->present[i] && tbuf_numel(b) > 0) {
            if (th_dtype_is_float(b->dtype)) {
                tbuf_write(b, 0, tbuf_read(b, 0) + 1.0);
            } else {
                tbuf_write_int(b, 0, tbuf_read_int(b, 0) + 1);
            }
            return;
        }
    }
}

fuzz_stats *fz_stats(void)
{
    if (!g_stats_registered) {
        g_stats_registered = 1;
        if (fz_env_flag("LIG_FUZZ_STATS")) {
            atexit(print_stats);
        }
        g_perturb = fz_env_flag("LIG_FUZZ_PERTURB");
    }
    return &g_stats;
}

int fz_perturb(void)
{
    (void)fz_stats();
    return g_perturb;
}

void fz_run(fz_in *in, inst *oi, const fuzz_expect *ex, int p2, int invalid2, const suite_op *op, suite_case *sc,
            const char *label)
{
    fuzz_stats *stats = fz_stats();
    stats->iterations++;
    if (!fuzz_check_phase1(oi, inst_phase1(oi), ex, label, stats)) {
        return;
    }
    if (ex->empty) {
        CHECK(oi->workspace_size == 0, "%s: empty problem wants %" PRIu64 " workspace bytes", label,
              oi->workspace_size);
    }
    const uint64_t ws = oi->workspace_size;
    lig_status st;
    int must_fail = invalid2 && !ex->empty;
    if (p2 == FZ_P2_SHORT && ws > 0) {
        st = inst_phase2(oi, -fz_range(in, 1, (int64_t)(ws < 65536 ? ws : 65536)));
        must_fail = 1;
    } else if (p2 == FZ_P2_STREAM || (p2 == FZ_P2_NULL && ws > 0)) {
        void *mem = p2 == FZ_P2_STREAM && ws > 0 ? th_xmalloc((size_t)ws) : NULL;
        int stream = 0;
        st = oi->launch(mem, ws, oi->executor, p2 == FZ_P2_STREAM ? &stream : NULL);
        oi->executor = NULL; /* consumed */
        save_message(oi, st);
        free(mem);
        if (p2 == FZ_P2_NULL) {
            /* no workspace where one is needed: PARAM_NULLPTR (contract 6.3), nothing written */
            CHECK(st == LIG_ERR_PARAM_NULLPTR || (invalid2 && st == LIG_ERR_PARAM_INVALID),
                  "%s: phase 2 without a workspace returned %d: %s", label, (int)st, oi->message);
            CHECK(oi->message[0] != '\0', "%s: phase 2 failure without a message", label);
            CHECK(inst_all_unchanged(oi), "%s: failed phase 2 wrote to a tensor", label);
            return;
        }
        must_fail = 1;
    } else {
        st = inst_phase2(oi, p2 == FZ_P2_SHORT ? 0 : fz_range(in, 0, 64)); /* a larger workspace is fine */
    }
    if (st == LIG_SUCCESS && g_perturb) {
        perturb_output(oi);
    }
    fuzz_check_phase2(oi, st, invalid2 || must_fail, must_fail, op, sc, label, stats);
}

void fz_verdict(int failures_before, const char *label)
{
    if (fz_env_flag("LIG_FUZZ_TRACE")) {
        fprintf(stderr, "lig fuzz: %s\n", label);
    }
    if (th_current_failures() != failures_before) {
        fprintf(stderr, "lig fuzz: check failed on %s\n", label);
        abort();
    }
}

int fz_begin(fz_in *in, const uint8_t *data, size_t size)
{
    const int before = th_current_failures();
    fz_init(in, data, size);
    return before;
}

void fz_decode_defects_and_views(fz_in *in, int n_kinds, int *kinds, fz_views *vs, int n_views)
{
    fz_decode_kinds(in, n_kinds, kinds);
    fz_decode_views(in, vs, n_views);
}

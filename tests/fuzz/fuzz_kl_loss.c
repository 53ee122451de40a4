/*
 * The fused KL loss in the libFuzzer targets (fuzz_kl_loss.h). The problem's data and tensors
 * are the C tests' (tests/kl_loss_case.c, contiguous tensors), its dims, modes and forms come
 * from the input; the defects edit the finished case the way a caller could get it wrong, and
 * say which status each phase must return. Success is judged by lkcase_check_outputs (the C
 * tests' bounds against the float64 reference), failure by its status, a message, no executor
 * and every tensor (inputs and outputs) unchanged.
 */
#include "fuzz_kl_loss.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework.h"
#include "float_formats.h"
#include "fuzz_case.h"
#include "tensor_buffers.h"

void fz_decode_lkcase(fz_in *in, lkcase *c, int cann, char *desc, size_t desc_size)
{
    static const lig_dtype floats[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    static const lig_kl_target targets[3] = {LIG_KL_TARGET_HEAD_MEAN, LIG_KL_TARGET_L1, LIG_KL_TARGET_CANN};
    const uint8_t f = fz_u8(in), g = fz_u8(in);
    lkcase_desc d = {.name = "fuzz"};
    d.layout = f & 1 ? REF_TND : REF_BSND;
    d.lse = (f & 4) != 0;
    d.sparse_stats = (f & 8) != 0;
    d.index_dtype = f & 32 ? LIG_INT64 : LIG_INT32;
    d.dtype = floats[(g & 3) % 3];
    d.dw_dtype = f & 64 ? LIG_FLOAT32 : d.dtype;
    d.target = targets[(g >> 2 & 3) % 3];
    d.sparse_mode = g & 16 ? 3 : 0;
    d.pre_tokens = g & 32 ? fz_range(in, 0, 6) : INT64_MAX;
    d.next_tokens = g & 64 ? fz_range(in, 0, 6) : INT64_MAX;
    d.B = fz_range(in, 0, 3);
    d.S1 = fz_range(in, 0, 6);
    d.S2 = fz_range(in, 0, 9);
    d.N2 = fz_range(in, 1, 2);
    d.N1 = d.N2 * fz_range(in, 0, 3);
    d.D = fz_range(in, 0, 9);
    d.K = fz_range(in, 0, 8);
    d.N1m = fz_range(in, 0, 4);
    d.Dm = fz_range(in, 0, 12);
    d.Dr = fz_chance(in, 128) ? fz_range(in, 1, 4) : 0;
    d.short_form = (f & 16) != 0 && d.N2 == 1;
    if (cann) { /* CANN's operator: its target, softmax_max / softmax_sum only */
        d.target = LIG_KL_TARGET_CANN;
        d.lse = false;
    }
    if (d.layout == REF_TND && d.S2 < d.B) {
        d.S2 = d.B; /* kl_loss_case gives every batch at least one key */
    }
    /* BSND lengths are drawn in 1..S */
    d.lengths = d.layout == REF_BSND && (f & 2) != 0 && d.S1 > 0 && d.S2 > 0;
    /* V2: sinks in the main attention's softmax, or V2 without them (with `cann`, CANN's V2) */
    d.sinks = fz_chance(in, 96);
    d.v2 = !d.sinks && fz_chance(in, 64);
    lkcase_make(c, &d, fz_u32(in));
    c->deterministic = (f & 128) != 0;
    const int minus_inf = d.sinks && d.N1m > 0 && fz_chance(in, 64); /* a head without a sink (-inf) */
    if (minus_inf) {
        const int64_t h = fz_range(in, 0, d.N1m - 1);
        th_store(c->buf[KA_SINKS], LIG_FLOAT32, h, -INFINITY);
        c->sinks[h] = -INFINITY;
    }
    snprintf(desc, desc_size,
             "%s B=%lld S1=%lld S2=%lld N1=%lld N2=%lld D=%lld K=%lld main N1=%lld Dm=%lld Dr=%lld %s%s %s %s "
             "stats target=%d mode=%lld pre=%lld next=%lld idx=%s%s d_weights=%s%s%s",
             d.layout == REF_TND ? "TND" : "BSND", (long long)d.B, (long long)d.S1, (long long)d.S2, (long long)d.N1,
             (long long)d.N2, (long long)d.D, (long long)d.K, (long long)d.N1m, (long long)d.Dm, (long long)d.Dr,
             th_dtype_name(d.dtype), d.lengths ? " lengths" : "", d.lse ? "lse" : "max/sum",
             d.sparse_stats ? "sparse" : "dense", (int)d.target, (long long)d.sparse_mode,
             (long long)(d.pre_tokens == INT64_MAX ? -1 : d.pre_tokens),
             (long long)(d.next_tokens == INT64_MAX ? -1 : d.next_tokens), th_dtype_name(d.index_dtype),
             d.short_form ? " short" : "", th_dtype_name(d.dw_dtype), c->deterministic ? " deterministic" : "",
             d.sinks ? (minus_inf ? " V2 sinks (one -inf)" : " V2 sinks") : d.v2 ? " V2 without sinks" : "");
}

/* ---- defects ---- */

enum { KD_NULL, KD_DTYPE, KD_SHAPE, KD_ALIAS, KD_POINTERS, KD_LAYOUT, KD_MODE, KD_BAND, KD_TARGET, KD_SCALE,
       KD_STATS, KD_ROPE, KD_SEQ, KD_INDEX, KD_SINKS, KD_SHORT_WS, KD_STREAM, KD_NULL_WS, KD_COUNT };

/* What the defects allow: the statuses of phase 1, and what phase 2 must do. */
typedef struct kl_expect {
    int null1, invalid1, invalid2, p2;
    int null_ws_size, null_executor;
    char what[256];
} kl_expect;

static void note(kl_expect *ex, int *flag, const char *what)
{
    *flag = 1;
    const size_t n = strlen(ex->what);
    snprintf(ex->what + n, sizeof ex->what - n, "%s%s", n ? ", " : "", what);
}

/* The tensor at `a` replaced by one over the same memory. */
static void replace(lkcase *c, int a, lig_tensor *t)
{
    lig_destroy_tensor(c->t[a]);
    c->t[a] = t;
}

/* A tensor shaped as the case's tensor `a` was made (the first extent grown by first_extra). */
static lig_tensor *like(const lkcase *c, int a, void *data, lig_dtype dtype, int64_t first_extra)
{
    int64_t shape[6];
    const int n = c->ndim[a];
    for (int i = 0; i < n; i++) {
        shape[i] = c->shape[a][i] + (i == 0 ? first_extra : 0);
    }
    return lig_create_tensor(data, dtype, n, shape, NULL);
}

/* A valid row with slots: one of its indices made -2 or past the batch's keys (phase 2). */
static int defect_index(fz_in *in, lkcase *c)
{
    const int64_t per_row = c->d.N2 * c->d.K;
    if (per_row == 0 || c->rows_q == 0) {
        return 0;
    }
    const int64_t start = fz_range(in, 0, c->rows_q - 1);
    for (int64_t i = 0; i < c->rows_q; i++) {
        const int64_t row = (start + i) % c->rows_q;
        ref_row info;
        ref_row_info(&c->p, row, &info);
        if (info.valid) {
            const int64_t at = row * per_row + fz_range(in, 0, per_row - 1);
            const int64_t v = fz_u8(in) & 1 ? -2 - fz_range(in, 0, 5) : info.lk + fz_range(in, 0, 5);
            th_store_int(c->buf[KA_IDX], c->d.index_dtype, at, v);
            c->idx[at] = v;
            return 1;
        }
    }
    return 0;
}

static void apply_defect(fz_in *in, int kind, lkcase *c, kl_expect *ex)
{
    static const int required[10] = {KA_Q, KA_K, KA_QI, KA_KI, KA_W, KA_IDX, KA_DQ, KA_DK, KA_DW, KA_LOSS};
    static const int tensors[11] = {KA_Q, KA_K, KA_QI, KA_KI, KA_W, KA_IDX, KA_DQ, KA_DK, KA_DW, KA_LOSS, KA_SMAX};
    static const lig_dtype any[5] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16, LIG_INT32, LIG_INT64};
    const lkcase_desc *d = &c->d;
    switch (kind) {
    case KD_NULL: {
        const int a = required[fz_range(in, 0, 9)];
        replace(c, a, NULL);
        note(ex, &ex->null1, "a required tensor NULL");
        break;
    }
    case KD_DTYPE: {
        int a = tensors[fz_range(in, 0, 10)];
        a = a == KA_SMAX && d->lse ? KA_LSE : a;
        const lig_dtype have = c->dtype[a];
        const int64_t j = fz_range(in, 0, 4);
        lig_dtype to = have;
        for (int i = 0; i < 5; i++) {
            /* a dtype the slot does not accept: d_weights takes the inputs' or FLOAT32, the
             * indices either integer type */
            to = any[(j + i) % 5];
            const int ok = to == have || (a == KA_DW && (to == d->dtype || to == LIG_FLOAT32)) ||
                           (a == KA_IDX && (to == LIG_INT32 || to == LIG_INT64));
            if (!ok) {
                break;
            }
        }
        replace(c, a, like(c, a, c->buf[a], to, 0));
        note(ex, &ex->invalid1, "a dtype");
        break;
    }
    case KD_SHAPE: {
        /* the first extent (B, T or the statistics' unit axis) is shared with another tensor */
        int a = tensors[fz_range(in, 0, 10)];
        a = a == KA_SMAX && d->lse ? KA_LSE : a;
        if (a == KA_LOSS) {
            const int64_t two[1] = {2};
            replace(c, a, lig_create_tensor(c->buf[a], LIG_FLOAT32, 1, two, NULL));
        } else {
            replace(c, a, like(c, a, c->buf[a], c->dtype[a], 1));
        }
        note(ex, &ex->invalid1, "a shape");
        break;
    }
    case KD_ALIAS: {
        /* an output over an input or another output */
        const int which = (int)fz_range(in, 0, 2);
        if (which == 0 && c->bytes[KA_W] > 0) {
            replace(c, KA_DW, like(c, KA_W, c->buf[KA_W], d->dtype, 0));
            note(ex, &ex->invalid1, "d_weights over weights");
        } else if (which == 1 && c->bytes[KA_DQ] >= 4) {
            replace(c, KA_LOSS, lig_create_tensor(c->buf[KA_DQ], LIG_FLOAT32, 0, NULL, NULL));
            note(ex, &ex->invalid1, "loss inside d_query_index");
        } else if (c->bytes[KA_Q] >= 4) {
            replace(c, KA_LOSS, lig_create_tensor(c->buf[KA_Q], LIG_FLOAT32, 0, NULL, NULL));
            note(ex, &ex->invalid1, "loss inside query");
        }
        break;
    }
    case KD_POINTERS:
        if (fz_u8(in) & 1) {
            ex->null_ws_size = 1;
        } else {
            ex->null_executor = 1;
        }
        note(ex, &ex->null1, "workspace_size or executor NULL");
        break;
    case KD_LAYOUT: {
        static const char *bad[4] = {NULL, "SBH", "", "BNSD"};
        const int i = (int)fz_range(in, 0, 3);
        c->layout = bad[i];
        note(ex, i == 0 ? &ex->null1 : &ex->invalid1, "layout");
        break;
    }
    case KD_MODE: {
        static const int64_t bad[4] = {1, 2, 4, -1};
        c->sparse_mode = bad[fz_range(in, 0, 3)];
        note(ex, &ex->invalid1, "sparse_mode");
        break;
    }
    case KD_BAND:
        if (fz_u8(in) & 1) {
            c->pre_tokens = -fz_range(in, 1, 9);
        } else {
            c->next_tokens = -fz_range(in, 1, 9);
        }
        note(ex, &ex->invalid1, "a negative band");
        break;
    case KD_TARGET:
        c->target = (lig_kl_target)(fz_u8(in) & 1 ? -1 : fz_range(in, 3, 9));
        note(ex, &ex->invalid1, "target");
        break;
    case KD_SCALE: {
        static const double bad[4] = {INFINITY, -INFINITY, NAN, 1e300};
        c->scale = bad[fz_range(in, 0, 3)];
        note(ex, &ex->invalid1, "scale");
        break;
    }
    case KD_STATS:
        if (d->lse) { /* softmax_max next to softmax_lse */
            c->t[KA_SMAX] = like(c, KA_LSE, c->buf[KA_LSE], LIG_FLOAT32, 0);
            note(ex, &ex->invalid1, "softmax_max next to softmax_lse");
        } else {
            replace(c, fz_u8(in) & 1 ? KA_SMAX : KA_SSUM, NULL);
            note(ex, &ex->null1, "softmax_max or softmax_sum NULL");
        }
        break;
    case KD_ROPE:
        if (d->Dr > 0) {
            replace(c, fz_u8(in) & 1 ? KA_QR : KA_KR, NULL);
        } else { /* a query_rope alone */
            c->t[KA_QR] = like(c, KA_Q, c->buf[KA_Q], d->dtype, 0);
        }
        note(ex, &ex->null1, "one rope tensor");
        break;
    case KD_SEQ:
        if (d->layout == REF_TND && d->B > 0) {
            const int u = fz_u8(in) % 3;
            int64_t *e = c->buf[u == 1 ? KA_AK : KA_AQ];
            if (u == 2) {
                replace(c, fz_u8(in) & 1 ? KA_AQ : KA_AK, NULL);
                note(ex, &ex->null1, "a TND length array missing");
                ex->invalid1 = 1; /* either status names it */
            } else if (d->B > 1 && e[d->B - 1] > 0 && (fz_u8(in) & 1)) {
                e[0] = e[d->B - 1] + fz_range(in, 0, 3); /* ends decreasing (or past the end) */
                e[0] = e[0] > e[1] ? e[0] : e[1] + 1;
                note(ex, &ex->invalid1, "TND ends decreasing");
            } else {
                e[d->B - 1] = (u == 1 ? c->rows_k : c->rows_q) + fz_range(in, 1, 5);
                note(ex, &ex->invalid1, "a TND end past the rows");
            }
        } else if (d->lengths && d->B > 0) {
            const int k = fz_u8(in) & 1;
            int64_t *l = c->buf[k ? KA_AK : KA_AQ];
            l[fz_range(in, 0, d->B - 1)] = fz_u8(in) & 1 ? -fz_range(in, 1, 4) : (k ? d->S2 : d->S1) + fz_range(in, 1, 4);
            note(ex, &ex->invalid1, "a BSND length out of range");
        }
        break;
    case KD_INDEX:
        if (defect_index(in, c)) {
            note(ex, &ex->invalid2, "an index out of range in a valid row");
        }
        break;
    case KD_SINKS:
        if (d->sinks || d->v2) { /* a sinks tensor of another dtype, length or rank, or over an output */
            const int u = (int)fz_range(in, 0, 3);
            void *data = c->buf[KA_SINKS] ? c->buf[KA_SINKS] : c->buf[KA_SMAX] ? c->buf[KA_SMAX] : c->buf[KA_LSE];
            const int64_t n1[1] = {d->N1m + 1 + fz_range(in, 0, 2)}, n2[2] = {1, d->N1m}, n0[1] = {d->N1m};
            if (u == 0) {
                replace(c, KA_SINKS, lig_create_tensor(data, fz_u8(in) & 1 ? LIG_FLOAT16 : LIG_INT32, 1, n0, NULL));
                note(ex, &ex->invalid1, "sinks dtype");
            } else if (u == 1 && data) {
                replace(c, KA_SINKS, lig_create_tensor(data, LIG_FLOAT32, 1, n1, NULL));
                note(ex, &ex->invalid1, "sinks length");
            } else if (u == 2) {
                replace(c, KA_SINKS, lig_create_tensor(data, LIG_FLOAT32, 2, n2, NULL));
                note(ex, &ex->invalid1, "sinks rank");
            } else if (d->N1m > 0 && c->bytes[KA_DQ] >= (uint64_t)(4 * d->N1m)) {
                replace(c, KA_SINKS, lig_create_tensor(c->buf[KA_DQ], LIG_FLOAT32, 1, n0, NULL));
                note(ex, &ex->invalid1, "sinks inside d_query_index");
            }
        }
        break;
    default: /* the phase-2 defects */
        ex->p2 = kind;
        break;
    }
}

/* ---- the call ---- */

typedef struct snapshot {
    unsigned char *bytes[KA_COUNT];
} snapshot;

static void snap_take(const lkcase *c, snapshot *s)
{
    for (int a = 0; a < KA_COUNT; a++) {
        s->bytes[a] = th_xmalloc(c->bytes[a] + 1);
        if (c->buf[a]) {
            memcpy(s->bytes[a], c->buf[a], c->bytes[a]);
        }
    }
}

/* The first tensor whose bytes changed, or -1. */
static int snap_changed(const lkcase *c, const snapshot *s, int first, int last)
{
    for (int a = first; a <= last; a++) {
        if (c->buf[a] && memcmp(s->bytes[a], c->buf[a], c->bytes[a]) != 0) {
            return a;
        }
    }
    return -1;
}

static void snap_free(snapshot *s)
{
    for (int a = 0; a < KA_COUNT; a++) {
        free(s->bytes[a]);
    }
}

static void check_failure(const lkcase *c, const snapshot *s, lig_status st, int allow_null, int allow_invalid,
                          const char *phase, const char *label)
{
    const char *msg = lig_get_last_error();
    CHECK((allow_null && st == LIG_ERR_PARAM_NULLPTR) || (allow_invalid && st == LIG_ERR_PARAM_INVALID),
          "%s: %s returned %d (%s)", label, phase, (int)st, msg);
    CHECK(msg[0] != '\0', "%s: %s failed without a message", label, phase);
    const int a = snap_changed(c, s, 0, KA_COUNT - 1);
    CHECK(a < 0, "%s: %s failed but tensor %d changed", label, phase, a);
}

void fz_kl_loss(fz_in *in, const char *env, char *label, size_t label_size)
{
    int kinds[2];
    fz_decode_kinds(in, KD_COUNT, kinds);
    lkcase c;
    char desc[512];
    fz_decode_lkcase(in, &c, 0, desc, sizeof desc);
    kl_expect ex;
    memset(&ex, 0, sizeof ex);
    for (int i = 0; i < 2; i++) {
        if (kinds[i] >= 0) {
            apply_defect(in, kinds[i], &c, &ex);
        }
    }
    static const char *p2_names[3] = {", short workspace", ", stream", ", no workspace"};
    snprintf(label, label_size, "sparse KL loss [%s] %s defects: %s%s", desc, env, ex.what[0] ? ex.what : "none",
             ex.p2 ? p2_names[ex.p2 - KD_SHORT_WS] : "");
    fuzz_stats *stats = fz_stats();
    stats->iterations++;
    snapshot s;
    snap_take(&c, &s);

    uint64_t ws_size = 0;
    lig_executor *executor = NULL;
    lig_tensor *const *t = c.t;
    uint64_t *ws_out = ex.null_ws_size ? NULL : &ws_size;
    lig_executor **ex_out = ex.null_executor ? NULL : &executor;
    lig_status st =
        c.d.sinks || c.d.v2
            ? lig_sparse_indexer_grad_kl_loss_v2_get_workspace_size(
                  t[KA_Q], t[KA_K], t[KA_QI], t[KA_KI], t[KA_W], t[KA_IDX], t[KA_SMAX], t[KA_SSUM], t[KA_LSE], t[KA_QR],
                  t[KA_KR], t[KA_AQ], t[KA_AK], t[KA_SINKS], c.scale, c.layout, c.sparse_mode, c.pre_tokens,
                  c.next_tokens, c.target, c.deterministic, t[KA_DQ], t[KA_DK], t[KA_DW], t[KA_LOSS], ws_out, ex_out)
            : lig_sparse_indexer_grad_kl_loss_get_workspace_size(
                  t[KA_Q], t[KA_K], t[KA_QI], t[KA_KI], t[KA_W], t[KA_IDX], t[KA_SMAX], t[KA_SSUM], t[KA_LSE], t[KA_QR],
                  t[KA_KR], t[KA_AQ], t[KA_AK], c.scale, c.layout, c.sparse_mode, c.pre_tokens, c.next_tokens,
                  c.target, c.deterministic, t[KA_DQ], t[KA_DK], t[KA_DW], t[KA_LOSS], ws_out, ex_out);
    if (ex.null1 || ex.invalid1) {
        check_failure(&c, &s, st, ex.null1, ex.invalid1, "phase 1", label);
        CHECK(executor == NULL, "%s: a failed phase 1 left an executor", label);
        stats->nullptr_errors += st == LIG_ERR_PARAM_NULLPTR;
        stats->invalid1 += st == LIG_ERR_PARAM_INVALID;
        lig_destroy_executor(executor);
    } else if (CHECK(st == LIG_SUCCESS, "%s: phase 1 returned %d (%s)", label, (int)st, lig_get_last_error())) {
        const lkcase_desc *d = &c.d;
        if (c.rows_q == 0 || d->K == 0) {
            CHECK(ws_size == 0, "%s: no slots but %llu workspace bytes", label, (unsigned long long)ws_size);
        }
        CHECK(snap_changed(&c, &s, 0, KA_COUNT - 1) < 0, "%s: phase 1 wrote to a tensor", label);
        int must_fail = ex.invalid2, null_ok = 0;
        void *ws = th_xmalloc((size_t)ws_size + 1);
        uint64_t pass = ws_size + (uint64_t)fz_range(in, 0, 64); /* a larger workspace is fine */
        void *ws_arg = ws;
        int stream = 0;
        void *stream_arg = NULL;
        if (ex.p2 == KD_SHORT_WS && ws_size > 0) {
            pass = ws_size - (uint64_t)fz_range(in, 1, (int64_t)(ws_size < 65536 ? ws_size : 65536));
            must_fail = 1;
        } else if (ex.p2 == KD_STREAM) {
            stream_arg = &stream;
            must_fail = 1;
        } else if (ex.p2 == KD_NULL_WS && ws_size > 0) {
            ws_arg = NULL;
            must_fail = null_ok = 1;
        }
        st = lig_sparse_indexer_grad_kl_loss(ws_arg, pass, executor, stream_arg);
        free(ws);
        if (must_fail) {
            check_failure(&c, &s, st, null_ok, ex.invalid2 || !null_ok, "phase 2", label);
            stats->invalid2++;
        } else if (CHECK(st == LIG_SUCCESS, "%s: phase 2 returned %d (%s)", label, (int)st, lig_get_last_error())) {
            CHECK(snap_changed(&c, &s, 0, KA_DQ - 1) < 0, "%s: an input changed", label);
            if (fz_perturb()) {
                const float nan = NAN;
                memcpy(c.buf[KA_LOSS], &nan, sizeof nan);
            }
            const int before = th_current_failures();
            lkcase_check_outputs(&c, label);
            stats->successes += th_current_failures() == before;
        }
    }
    snap_free(&s);
    lkcase_free(&c);
}

#include "two_phase_call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "float_formats.h"
#include "framework.h"

void inst_init(inst *in, int kind, int nbuf, int first_output, inst_phase1_fn phase1, inst_launch_fn launch)
{
    memset(in, 0, sizeof *in);
    in->kind = kind;
    in->nbuf = nbuf;
    in->first_output = first_output;
    in->phase1 = phase1;
    in->launch = launch;
    in->workspace_size_arg = &in->workspace_size;
    in->executor_arg = &in->executor;
}

/* [B,] S, N[, D]: the BSND / TND shape of q (S1, N1, D), k (S2, N2, D) or w (S1, N1). */
static int shape_heads(const tcase *tc, int64_t S, int64_t N, int with_d, int64_t *s)
{
    int n = 0;
    if (tc->p.layout == REF_BSND) {
        s[n++] = tc->p.B;
    }
    s[n++] = S;
    s[n++] = N;
    if (with_d) {
        s[n++] = tc->p.D;
    }
    return n;
}

int inst_shape_q(const tcase *tc, int64_t *s)
{
    return shape_heads(tc, tc->p.S1, tc->p.N1, 1, s);
}

int inst_shape_k(const tcase *tc, int64_t *s)
{
    return shape_heads(tc, tc->p.S2, tc->p.N2, 1, s);
}

int inst_shape_w(const tcase *tc, int64_t *s)
{
    return shape_heads(tc, tc->p.S1, tc->p.N1, 0, s);
}

int inst_shape_slots(const tcase *tc, int64_t *s)
{
    const ref_problem *p = &tc->p;
    int n = 0;
    if (p->layout == REF_BSND) {
        s[n++] = p->B;
    }
    s[n++] = p->S1;
    if (!tc->short_form) {
        s[n++] = p->N2;
    }
    s[n++] = p->K;
    return n;
}

static void make_seq(inst *in, int which, const tcase *tc, const int64_t *len)
{
    const int64_t B = tc->p.B;
    const tc_strides kind = tc->in_strides == TC_CONTIGUOUS ? TC_CONTIGUOUS : TC_PADDED;
    tbuf_make(&in->buf[which], tc->seq_dtype, 1, &B, kind, TB_INT_GAP_FILL);
    for (int64_t b = 0; b < B; b++) {
        tbuf_write_int(&in->buf[which], b, len[b]);
    }
    in->present[which] = 1;
}

void inst_make_seq(inst *in, const tcase *tc, int sq, int sk)
{
    in->present[sq] = in->present[sk] = 0;
    if (tc->has_seq_q) {
        make_seq(in, sq, tc, tc->seq_q);
    }
    if (tc->has_seq_k) {
        make_seq(in, sk, tc, tc->seq_k);
    }
}

void inst_load_qkw(inst *in, tcase *tc, int q, int k, int w)
{
    tbuf_write_doubles(&in->buf[q], tc->q);
    tbuf_write_doubles(&in->buf[k], tc->k);
    tbuf_write_doubles(&in->buf[w], tc->w);
    /* Re-read: with stride-0 views, later writes replaced earlier ones. */
    tbuf_read_doubles(&in->buf[q], tc->q);
    tbuf_read_doubles(&in->buf[k], tc->k);
    tbuf_read_doubles(&in->buf[w], tc->w);
}

void inst_snapshot_all(inst *in)
{
    for (int i = 0; i < in->nbuf; i++) {
        if (in->present[i]) {
            tbuf_snapshot(&in->buf[i]);
            in->arg[i] = in->buf[i].t;
        }
    }
}

static void save_message(inst *in)
{
    const char *m = lig_get_last_error();
    if (m == NULL) {
        m = "(lig_get_last_error returned NULL)";
    }
    snprintf(in->message, sizeof in->message, "%s", m);
}

void (*inst_around_library)(bool entering);

lig_status inst_phase1(inst *in)
{
    in->executor = NULL;
    in->workspace_size = 0;
    if (inst_around_library) inst_around_library(true);
    lig_status st = in->phase1(in);
    if (inst_around_library) inst_around_library(false);
    if (st != LIG_SUCCESS) {
        save_message(in);
    }
    return st;
}

lig_status inst_phase2(inst *in, int64_t delta)
{
    int64_t size = (int64_t)in->workspace_size + delta;
    if (size < 0) {
        size = 0;
    }
    void *ws = NULL;
    if (size > 0) {
        ws = th_xmalloc((size_t)size);
        memset(ws, 0xAB, (size_t)size); /* the library must not rely on a zeroed workspace */
    }
    if (inst_around_library) inst_around_library(true);
    lig_status st = in->launch(ws, (uint64_t)size, in->executor, NULL);
    if (inst_around_library) inst_around_library(false);
    in->executor = NULL; /* consumed, success or not */
    if (st != LIG_SUCCESS) {
        save_message(in);
    }
    free(ws);
    return st;
}

int inst_all_unchanged(const inst *in)
{
    for (int i = 0; i < in->nbuf; i++) {
        if (in->present[i] && !tbuf_unchanged(&in->buf[i])) {
            return 0;
        }
    }
    for (int i = 0; i < in->n_extra_mem; i++) {
        const unsigned char *m = in->extra_mem[i];
        for (size_t j = 0; j < in->extra_mem_bytes[i]; j++) {
            if (m[j] != TB_OUTPUT_FILL) {
                return 0;
            }
        }
    }
    return 1;
}

int inst_gaps_ok(const inst *in)
{
    for (int i = 0; i < in->nbuf; i++) {
        if (!in->present[i]) {
            continue;
        }
        if (i < in->first_output ? !tbuf_unchanged(&in->buf[i]) : !tbuf_gaps_unchanged(&in->buf[i])) {
            return 0;
        }
    }
    return 1;
}

void inst_teardown(inst *in)
{
    if (in->executor != NULL) {
        lig_destroy_executor(in->executor);
        in->executor = NULL;
    }
    for (int i = 0; i < in->nbuf; i++) {
        if (in->present[i]) {
            tbuf_free(&in->buf[i]);
        }
    }
    for (int i = 0; i < in->n_extra; i++) {
        lig_destroy_tensor(in->extra[i]);
    }
    for (int i = 0; i < in->n_extra_mem; i++) {
        free(in->extra_mem[i]);
    }
    in->n_extra = in->n_extra_mem = 0;
}

lig_tensor *inst_adopt(inst *in, lig_tensor *t)
{
    if (t != NULL) {
        if (in->n_extra >= INST_MAX_EXTRA) {
            abort();
        }
        in->extra[in->n_extra++] = t;
    }
    return t;
}

void *inst_alloc(inst *in, size_t bytes)
{
    if (in->n_extra_mem >= INST_MAX_EXTRA) {
        abort();
    }
    void *m = th_xmalloc(bytes);
    memset(m, TB_OUTPUT_FILL, bytes);
    in->extra_mem_bytes[in->n_extra_mem] = bytes;
    in->extra_mem[in->n_extra_mem++] = m;
    return m;
}

lig_tensor *inst_new_tensor(inst *in, lig_dtype dtype, int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        n *= shape[i] > 0 ? shape[i] : 0;
    }
    void *mem = inst_alloc(in, (size_t)(n > 0 ? n : 1) * th_dtype_size(dtype));
    return inst_adopt(in, lig_create_tensor(mem, dtype, ndim, shape, NULL));
}

lig_tensor *inst_new_widened(inst *in, int which)
{
    const tbuf *b = &in->buf[which];
    int64_t shape[LIG_MAX_DIMS];
    memcpy(shape, b->shape, sizeof shape);
    shape[b->ndim - 1] += 1;
    return inst_new_tensor(in, b->dtype, b->ndim, shape);
}

void inst_replace_arg(inst *in, int target, int dtype, int ndim, const int64_t *shape)
{
    const tbuf *b = &in->buf[target];
    lig_dtype dt = dtype < 0 ? b->dtype : (lig_dtype)dtype;
    in->arg[target] = ndim < 0 ? inst_new_tensor(in, dt, b->ndim, b->shape) : inst_new_tensor(in, dt, ndim, shape);
}

unsigned char *inst_alias_arg(inst *in, int target, int source, int64_t shift)
{
    const tbuf *t = &in->buf[target];
    const tbuf *s = &in->buf[source];
    unsigned char *data =
        s->base + (size_t)s->offset * th_dtype_size(s->dtype) + (size_t)shift * th_dtype_size(t->dtype);
    in->arg[target] = inst_adopt(in, lig_create_tensor(data, t->dtype, t->ndim, t->shape, NULL));
    return data;
}

static void keep_failure(inst *in, inst_result *res)
{
    memcpy(res->message, in->message, sizeof res->message);
    res->unchanged = inst_all_unchanged(in);
    inst_teardown(in);
}

int inst_run(inst *in, inst_result *res)
{
    memset(res, 0, sizeof *res);
    res->st1 = inst_phase1(in);
    res->workspace_size = in->workspace_size;
    if (res->st1 != LIG_SUCCESS) {
        res->executor_null_after_failure = in->executor == NULL;
        in->executor = NULL; /* never destroy what a failed phase 1 may have left there */
        keep_failure(in, res);
        return 0;
    }
    res->phase2_ran = 1;
    res->st2 = inst_phase2(in, 0);
    if (res->st2 != LIG_SUCCESS) {
        keep_failure(in, res);
        return 0;
    }
    res->gaps_ok = inst_gaps_ok(in);
    return 1;
}

int inst_result_ran(const inst_result *res, const char *label, int *refused, int *ok)
{
    if (refused != NULL) {
        *refused = 0;
    }
    if (refused != NULL && res->st1 == LIG_ERR_PARAM_INVALID) {
        *refused = 1;
        *ok = CHECK(res->message[0] != '\0', "%s: refused without a message", label);
        *ok &= CHECK(res->unchanged, "%s: refused but wrote to a tensor", label);
        *ok &= CHECK(res->executor_null_after_failure, "%s: refused but left an executor", label);
        return 0;
    }
    if (res->st1 != LIG_SUCCESS || res->st2 != LIG_SUCCESS) {
        const lig_status st = res->st1 != LIG_SUCCESS ? res->st1 : res->st2;
        CHECK(0, "%s: phase %d failed with %d (%s): %s", label, res->st1 != LIG_SUCCESS ? 1 : 2, (int)st,
              lig_status_string(st), res->message);
        *ok = 0;
        return 0;
    }
    return 1;
}

void inst_keep_raw(const inst *in, inst_result *res, const int *which, int n)
{
    for (int i = 0; i < n; i++) {
        if (which[i] < 0 || !in->present[which[i]]) {
            continue;
        }
        const tbuf *b = &in->buf[which[i]];
        res->raw_bytes[i] = b->bytes;
        res->raw[i] = th_xmalloc(b->bytes);
        memcpy(res->raw[i], b->base, b->bytes);
    }
}

void inst_finish(inst *in, inst_result *res, const int *which, int n)
{
    inst_keep_raw(in, res, which, n);
    inst_teardown(in);
}

void inst_result_free(inst_result *res)
{
    void *const owned[] = {res->dq,  res->dk,     res->dw,     res->idx,   res->val,
                           res->dy,  res->raw[0], res->raw[1], res->raw[2]};
    th_free_all(owned, sizeof owned / sizeof owned[0]);
    memset(res, 0, sizeof *res);
}

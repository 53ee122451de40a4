#include "op_runner.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"

/* ---- KL cases ---- */

int64_t kl_rows(const klcase *kc)
{
    int64_t n = 1;
    for (int i = 0; i + 1 < kc->ndim; i++) {
        n *= kc->shape[i];
    }
    return n;
}

int64_t kl_K(const klcase *kc)
{
    return kc->ndim > 0 ? kc->shape[kc->ndim - 1] : 1;
}

void kl_init(klcase *kc)
{
    memset(kc, 0, sizeof *kc);
    kc->ndim = 2;
    kc->shape[0] = 1;
    kc->shape[1] = 1;
    kc->v_dtype = kc->t_dtype = kc->dy_dtype = LIG_FLOAT32;
    kc->idx_dtype = LIG_INT32;
    kc->loss_ndim = 1;
}

void kl_free(klcase *kc)
{
    free(kc->values);
    free(kc->target);
    free(kc->idx);
    kc->values = kc->target = NULL;
    kc->idx = NULL;
}

void kl_alloc(klcase *kc)
{
    kl_free(kc);
    size_t n = (size_t)(kl_rows(kc) * kl_K(kc));
    kc->values = th_xcalloc(n, sizeof(double));
    kc->target = th_xcalloc(n, sizeof(double));
    kc->idx = th_xcalloc(n, sizeof(int64_t));
}

int kl_counted(const klcase *kc, int64_t i)
{
    return kc->has_indices ? kc->idx[i] >= 0 : kc->values[i] != -INFINITY;
}

void kl_describe(const klcase *kc, char *buf, size_t size)
{
    char shape[96] = "[";
    size_t used = 1;
    for (int i = 0; i < kc->ndim && used < sizeof shape; i++) {
        int m = snprintf(shape + used, sizeof shape - used, "%s%" PRId64, i ? "," : "", kc->shape[i]);
        if (m < 0) {
            break;
        }
        used += (size_t)m;
    }
    if (used + 2 <= sizeof shape) {
        shape[used] = ']';
        shape[used + 1] = '\0';
    }
    snprintf(buf, size, "KL %s values=%s target=%s dy=%s indices=%s loss_ndim=%d in=%d out=%d", shape,
             th_dtype_name(kc->v_dtype), th_dtype_name(kc->t_dtype), th_dtype_name(kc->dy_dtype),
             kc->has_indices ? th_dtype_name(kc->idx_dtype) : "none", kc->loss_ndim, (int)kc->in_strides,
             (int)kc->out_strides);
}

/* ---- shapes of the forward's tensors ---- */

static int shape_q(const tcase *tc, int64_t *s)
{
    const ref_problem *p = &tc->p;
    if (p->layout == REF_BSND) {
        s[0] = p->B; s[1] = p->S1; s[2] = p->N1; s[3] = p->D;
        return 4;
    }
    s[0] = p->S1; s[1] = p->N1; s[2] = p->D;
    return 3;
}

static int shape_k(const tcase *tc, int64_t *s)
{
    const ref_problem *p = &tc->p;
    if (p->layout == REF_BSND) {
        s[0] = p->B; s[1] = p->S2; s[2] = p->N2; s[3] = p->D;
        return 4;
    }
    s[0] = p->S2; s[1] = p->N2; s[2] = p->D;
    return 3;
}

static int shape_w(const tcase *tc, int64_t *s)
{
    const ref_problem *p = &tc->p;
    if (p->layout == REF_BSND) {
        s[0] = p->B; s[1] = p->S1; s[2] = p->N1;
        return 3;
    }
    s[0] = p->S1; s[1] = p->N1;
    return 2;
}

static int shape_slots(const tcase *tc, int64_t *s)
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

static void write_doubles(tbuf *b, const double *v)
{
    int64_t n = tbuf_numel(b);
    for (int64_t i = 0; i < n; i++) {
        tbuf_write(b, i, v[i]);
    }
}

static void read_doubles(const tbuf *b, double *v)
{
    int64_t n = tbuf_numel(b);
    for (int64_t i = 0; i < n; i++) {
        v[i] = tbuf_read(b, i);
    }
}

static void common_init(op_inst *oi, op_kind kind, int nbuf, int first_output)
{
    memset(oi, 0, sizeof *oi);
    oi->kind = kind;
    oi->nbuf = nbuf;
    oi->first_output = first_output;
    oi->workspace_size_arg = &oi->workspace_size;
    oi->executor_arg = &oi->executor;
}

static void snapshot_all(op_inst *oi)
{
    for (int i = 0; i < oi->nbuf; i++) {
        if (oi->present[i]) {
            tbuf_snapshot(&oi->buf[i]);
            oi->arg[i] = oi->buf[i].t;
        }
    }
}

void fwd_setup(tcase *tc, int with_values, lig_dtype val_dtype, op_inst *oi)
{
    common_init(oi, OP_FORWARD, FW_COUNT, FW_FIRST_OUTPUT);
    const ref_problem *p = &tc->p;
    int64_t s[LIG_MAX_DIMS];
    int n;
    n = shape_q(tc, s);
    tbuf_make(&oi->buf[FW_Q], tc->dtype, n, s, tc->in_strides, TB_FLOAT_GAP_FILL);
    n = shape_k(tc, s);
    tbuf_make(&oi->buf[FW_K], tc->dtype, n, s, tc->in_strides, TB_FLOAT_GAP_FILL);
    n = shape_w(tc, s);
    tbuf_make(&oi->buf[FW_W], tc->dtype, n, s, tc->in_strides, TB_FLOAT_GAP_FILL);
    n = shape_slots(tc, s);
    tbuf_make(&oi->buf[FW_IDX], tc->idx_dtype, n, s, tc->out_strides, TB_OUTPUT_FILL);
    oi->present[FW_Q] = oi->present[FW_K] = oi->present[FW_W] = oi->present[FW_IDX] = 1;
    if (with_values) {
        tbuf_make(&oi->buf[FW_VAL], val_dtype, n, s, tc->out_strides, TB_OUTPUT_FILL);
        oi->present[FW_VAL] = 1;
    }
    s[0] = p->B;
    tc_strides seq_kind = tc->in_strides == TC_CONTIGUOUS ? TC_CONTIGUOUS : TC_PADDED;
    if (tc->has_seq_q) {
        tbuf_make(&oi->buf[FW_SQ], tc->seq_dtype, 1, s, seq_kind, TB_INT_GAP_FILL);
        for (int64_t b = 0; b < p->B; b++) {
            tbuf_write_int(&oi->buf[FW_SQ], b, tc->seq_q[b]);
        }
        oi->present[FW_SQ] = 1;
    }
    if (tc->has_seq_k) {
        tbuf_make(&oi->buf[FW_SK], tc->seq_dtype, 1, s, seq_kind, TB_INT_GAP_FILL);
        for (int64_t b = 0; b < p->B; b++) {
            tbuf_write_int(&oi->buf[FW_SK], b, tc->seq_k[b]);
        }
        oi->present[FW_SK] = 1;
    }
    write_doubles(&oi->buf[FW_Q], tc->q);
    write_doubles(&oi->buf[FW_K], tc->k);
    write_doubles(&oi->buf[FW_W], tc->w);
    /* Re-read: with stride-0 views, later writes replaced earlier ones. */
    read_doubles(&oi->buf[FW_Q], tc->q);
    read_doubles(&oi->buf[FW_K], tc->k);
    read_doubles(&oi->buf[FW_W], tc->w);
    snapshot_all(oi);
    oi->layout = p->layout == REF_BSND ? "BSND" : "TND";
    oi->sparse_count = p->K;
    oi->sparse_mode = p->sparse_mode;
    oi->pre_tokens = p->pre_tokens;
    oi->next_tokens = p->next_tokens;
}

void kl_setup(klcase *kc, op_inst *oi)
{
    common_init(oi, OP_KL, KL_COUNT, KL_FIRST_OUTPUT);
    tbuf_make(&oi->buf[KL_VAL], kc->v_dtype, kc->ndim, kc->shape, kc->in_strides, TB_FLOAT_GAP_FILL);
    tbuf_make(&oi->buf[KL_TGT], kc->t_dtype, kc->ndim, kc->shape, kc->in_strides, TB_FLOAT_GAP_FILL);
    tbuf_make(&oi->buf[KL_DY], kc->dy_dtype, kc->ndim, kc->shape, kc->out_strides, TB_OUTPUT_FILL);
    const int64_t one[2] = {1, 1};
    tbuf_make(&oi->buf[KL_LOSS], LIG_FLOAT32, kc->loss_ndim, one, kc->out_strides, TB_OUTPUT_FILL);
    oi->present[KL_VAL] = oi->present[KL_TGT] = oi->present[KL_DY] = oi->present[KL_LOSS] = 1;
    write_doubles(&oi->buf[KL_VAL], kc->values);
    write_doubles(&oi->buf[KL_TGT], kc->target);
    if (kc->has_indices) {
        tbuf_make(&oi->buf[KL_IDX], kc->idx_dtype, kc->ndim, kc->shape, kc->in_strides, TB_INT_GAP_FILL);
        oi->present[KL_IDX] = 1;
        const int64_t n = tbuf_numel(&oi->buf[KL_IDX]);
        for (int64_t i = 0; i < n; i++) {
            tbuf_write_int(&oi->buf[KL_IDX], i, kc->idx[i]);
        }
        for (int64_t i = 0; i < n; i++) {
            kc->idx[i] = tbuf_read_int(&oi->buf[KL_IDX], i);
        }
    }
    read_doubles(&oi->buf[KL_VAL], kc->values);
    read_doubles(&oi->buf[KL_TGT], kc->target);
    snapshot_all(oi);
}

static void save_message(op_inst *oi)
{
    const char *m = lig_get_last_error();
    if (m == NULL) {
        m = "(lig_get_last_error returned NULL)";
    }
    snprintf(oi->message, sizeof oi->message, "%s", m);
}

lig_status op_phase1(op_inst *oi)
{
    oi->executor = NULL;
    oi->workspace_size = 0;
    lig_status st;
    if (oi->kind == OP_FORWARD) {
        st = lig_indexer_get_workspace_size(oi->arg[FW_Q], oi->arg[FW_K], oi->arg[FW_W], oi->arg[FW_SQ],
                                            oi->arg[FW_SK], oi->layout, oi->sparse_count, oi->sparse_mode,
                                            oi->pre_tokens, oi->next_tokens, oi->arg[FW_IDX], oi->arg[FW_VAL],
                                            oi->workspace_size_arg, oi->executor_arg);
    } else {
        st = lig_indexer_kl_grad_get_workspace_size(oi->arg[KL_VAL], oi->arg[KL_IDX], oi->arg[KL_TGT],
                                                    oi->arg[KL_LOSS], oi->arg[KL_DY], oi->workspace_size_arg,
                                                    oi->executor_arg);
    }
    if (st != LIG_SUCCESS) {
        save_message(oi);
    }
    return st;
}

lig_status op_phase2(op_inst *oi, int64_t delta)
{
    int64_t size = (int64_t)oi->workspace_size + delta;
    if (size < 0) {
        size = 0;
    }
    void *ws = NULL;
    if (size > 0) {
        ws = th_xmalloc((size_t)size);
        memset(ws, 0xAB, (size_t)size); /* the library must not rely on a zeroed workspace */
    }
    lig_status st = oi->kind == OP_FORWARD ? lig_indexer(ws, (uint64_t)size, oi->executor, NULL)
                                           : lig_indexer_kl_grad(ws, (uint64_t)size, oi->executor, NULL);
    oi->executor = NULL; /* consumed, success or not */
    if (st != LIG_SUCCESS) {
        save_message(oi);
    }
    free(ws);
    return st;
}

int op_all_unchanged(const op_inst *oi)
{
    for (int i = 0; i < oi->nbuf; i++) {
        if (oi->present[i] && !tbuf_unchanged(&oi->buf[i])) {
            return 0;
        }
    }
    for (int i = 0; i < oi->n_extra_mem; i++) {
        const unsigned char *m = oi->extra_mem[i];
        for (size_t j = 0; j < oi->extra_mem_bytes[i]; j++) {
            if (m[j] != TB_OUTPUT_FILL) {
                return 0;
            }
        }
    }
    return 1;
}

int op_gaps_ok(const op_inst *oi)
{
    for (int i = 0; i < oi->nbuf; i++) {
        if (!oi->present[i]) {
            continue;
        }
        if (i < oi->first_output ? !tbuf_unchanged(&oi->buf[i]) : !tbuf_gaps_unchanged(&oi->buf[i])) {
            return 0;
        }
    }
    return 1;
}

void op_teardown(op_inst *oi)
{
    if (oi->executor != NULL) {
        lig_destroy_executor(oi->executor);
        oi->executor = NULL;
    }
    for (int i = 0; i < oi->nbuf; i++) {
        if (oi->present[i]) {
            tbuf_free(&oi->buf[i]);
        }
    }
    for (int i = 0; i < oi->n_extra; i++) {
        lig_destroy_tensor(oi->extra[i]);
    }
    for (int i = 0; i < oi->n_extra_mem; i++) {
        free(oi->extra_mem[i]);
    }
    oi->n_extra = oi->n_extra_mem = 0;
}

lig_tensor *op_adopt(op_inst *oi, lig_tensor *t)
{
    if (t != NULL) {
        if (oi->n_extra >= OP_MAX_EXTRA) {
            abort();
        }
        oi->extra[oi->n_extra++] = t;
    }
    return t;
}

void *op_alloc(op_inst *oi, size_t bytes)
{
    if (oi->n_extra_mem >= OP_MAX_EXTRA) {
        abort();
    }
    void *m = th_xmalloc(bytes);
    memset(m, TB_OUTPUT_FILL, bytes);
    oi->extra_mem_bytes[oi->n_extra_mem] = bytes;
    oi->extra_mem[oi->n_extra_mem++] = m;
    return m;
}

lig_tensor *op_new_tensor(op_inst *oi, lig_dtype dtype, int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        n *= shape[i] > 0 ? shape[i] : 0;
    }
    void *mem = op_alloc(oi, (size_t)(n > 0 ? n : 1) * th_dtype_size(dtype));
    return op_adopt(oi, lig_create_tensor(mem, dtype, ndim, shape, NULL));
}

void fwd_read(const op_inst *oi, int64_t *idx, double *val)
{
    const tbuf *bi = &oi->buf[FW_IDX];
    const int64_t n = tbuf_numel(bi);
    for (int64_t i = 0; i < n; i++) {
        idx[i] = tbuf_read_int(bi, i);
    }
    if (val != NULL && oi->present[FW_VAL]) {
        read_doubles(&oi->buf[FW_VAL], val);
    }
}

void kl_read(const op_inst *oi, double *loss, double *dy)
{
    *loss = tbuf_read(&oi->buf[KL_LOSS], 0);
    read_doubles(&oi->buf[KL_DY], dy);
}

static void keep_failure(op_inst *oi, op_result *res)
{
    memcpy(res->message, oi->message, sizeof res->message);
    res->unchanged = op_all_unchanged(oi);
}

static void keep_raw(const op_inst *oi, op_result *res, int first, int second)
{
    const int which[2] = {first, second};
    for (int i = 0; i < 2; i++) {
        if (which[i] < 0 || !oi->present[which[i]]) {
            continue;
        }
        const tbuf *b = &oi->buf[which[i]];
        res->raw_bytes[i] = b->bytes;
        res->raw[i] = th_xmalloc(b->bytes);
        memcpy(res->raw[i], b->base, b->bytes);
    }
}

void fwd_run(tcase *tc, int with_values, lig_dtype val_dtype, op_result *res)
{
    memset(res, 0, sizeof *res);
    op_inst oi;
    fwd_setup(tc, with_values, val_dtype, &oi);
    res->st1 = op_phase1(&oi);
    res->workspace_size = oi.workspace_size;
    if (res->st1 != LIG_SUCCESS) {
        res->executor_null_after_failure = oi.executor == NULL;
        oi.executor = NULL;
        keep_failure(&oi, res);
        op_teardown(&oi);
        return;
    }
    res->phase2_ran = 1;
    res->st2 = op_phase2(&oi, 0);
    if (res->st2 != LIG_SUCCESS) {
        keep_failure(&oi, res);
        op_teardown(&oi);
        return;
    }
    res->gaps_ok = op_gaps_ok(&oi);
    const int64_t slots = tc_numel_slots(tc);
    res->idx = th_xmalloc((size_t)slots * sizeof(int64_t));
    if (with_values) {
        res->val = th_xmalloc((size_t)slots * sizeof(double));
    }
    fwd_read(&oi, res->idx, res->val);
    keep_raw(&oi, res, FW_IDX, with_values ? FW_VAL : -1);
    op_teardown(&oi);
}

void kl_run(klcase *kc, op_result *res)
{
    memset(res, 0, sizeof *res);
    op_inst oi;
    kl_setup(kc, &oi);
    res->st1 = op_phase1(&oi);
    res->workspace_size = oi.workspace_size;
    if (res->st1 != LIG_SUCCESS) {
        res->executor_null_after_failure = oi.executor == NULL;
        oi.executor = NULL;
        keep_failure(&oi, res);
        op_teardown(&oi);
        return;
    }
    res->phase2_ran = 1;
    res->st2 = op_phase2(&oi, 0);
    if (res->st2 != LIG_SUCCESS) {
        keep_failure(&oi, res);
        op_teardown(&oi);
        return;
    }
    res->gaps_ok = op_gaps_ok(&oi);
    res->dy = th_xmalloc((size_t)(kl_rows(kc) * kl_K(kc)) * sizeof(double));
    kl_read(&oi, &res->loss, res->dy);
    keep_raw(&oi, res, KL_LOSS, KL_DY);
    op_teardown(&oi);
}

void op_result_free(op_result *res)
{
    free(res->idx);
    free(res->val);
    free(res->dy);
    for (int i = 0; i < 2; i++) {
        free(res->raw[i]);
    }
    memset(res, 0, sizeof *res);
}

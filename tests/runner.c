#include "runner.h"

#include <stdlib.h>
#include <string.h>

#include "half.h"

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

/* Broadcast strides would make dy/indices of one batch alias another's, which breaks the
 * generator's poison bookkeeping: they apply to q, k, w only. */
static tc_strides input_kind(const tcase *tc, int which)
{
    if (tc->in_strides == TC_BROADCAST && (which == RB_DY || which == RB_IDX)) {
        return TC_PADDED;
    }
    return tc->in_strides;
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

void run_setup(tcase *tc, run_inst *ri)
{
    memset(ri, 0, sizeof *ri);
    int64_t s[LIG_MAX_DIMS];
    int n;
    const ref_problem *p = &tc->p;

    n = shape_q(tc, s);
    tbuf_make(&ri->buf[RB_Q], tc->dtype, n, s, input_kind(tc, RB_Q), TB_FLOAT_GAP_FILL);
    tbuf_make(&ri->buf[RB_DQ], tc->dtype, n, s, tc->out_strides, TB_OUTPUT_FILL);
    n = shape_k(tc, s);
    tbuf_make(&ri->buf[RB_K], tc->dtype, n, s, input_kind(tc, RB_K), TB_FLOAT_GAP_FILL);
    tbuf_make(&ri->buf[RB_DK], tc->dtype, n, s, tc->out_strides, TB_OUTPUT_FILL);
    n = shape_slots(tc, s);
    tbuf_make(&ri->buf[RB_DY], tc->dtype, n, s, input_kind(tc, RB_DY), TB_FLOAT_GAP_FILL);
    tbuf_make(&ri->buf[RB_IDX], tc->idx_dtype, n, s, input_kind(tc, RB_IDX), TB_INT_GAP_FILL);
    n = shape_w(tc, s);
    tbuf_make(&ri->buf[RB_W], tc->dtype, n, s, input_kind(tc, RB_W), TB_FLOAT_GAP_FILL);
    tbuf_make(&ri->buf[RB_DW], tc->dw_dtype, n, s, tc->out_strides, TB_OUTPUT_FILL);
    for (int i = 0; i < RB_COUNT; i++) {
        ri->present[i] = 1;
    }
    s[0] = p->B;
    tc_strides seq_kind = tc->in_strides == TC_CONTIGUOUS ? TC_CONTIGUOUS : TC_PADDED;
    if (tc->has_seq_q) {
        tbuf_make(&ri->buf[RB_SQ], tc->seq_dtype, 1, s, seq_kind, TB_INT_GAP_FILL);
        for (int64_t b = 0; b < p->B; b++) {
            tbuf_write_int(&ri->buf[RB_SQ], b, tc->seq_q[b]);
        }
    } else {
        ri->present[RB_SQ] = 0;
    }
    if (tc->has_seq_k) {
        tbuf_make(&ri->buf[RB_SK], tc->seq_dtype, 1, s, seq_kind, TB_INT_GAP_FILL);
        for (int64_t b = 0; b < p->B; b++) {
            tbuf_write_int(&ri->buf[RB_SK], b, tc->seq_k[b]);
        }
    } else {
        ri->present[RB_SK] = 0;
    }

    write_doubles(&ri->buf[RB_Q], tc->q);
    write_doubles(&ri->buf[RB_K], tc->k);
    write_doubles(&ri->buf[RB_W], tc->w);
    write_doubles(&ri->buf[RB_DY], tc->dy);
    int64_t ns = tbuf_numel(&ri->buf[RB_IDX]);
    for (int64_t i = 0; i < ns; i++) {
        tbuf_write_int(&ri->buf[RB_IDX], i, tc->idx[i]);
    }
    /* Re-read: with stride-0 views, later writes replaced earlier ones. */
    read_doubles(&ri->buf[RB_Q], tc->q);
    read_doubles(&ri->buf[RB_K], tc->k);
    read_doubles(&ri->buf[RB_W], tc->w);

    for (int i = 0; i < RB_COUNT; i++) {
        if (ri->present[i]) {
            tbuf_snapshot(&ri->buf[i]);
            ri->arg[i] = ri->buf[i].t;
        }
    }
    ri->head_num = tc->head_num;
    ri->sparse_mode = p->sparse_mode;
    ri->pre_tokens = p->pre_tokens;
    ri->next_tokens = p->next_tokens;
    ri->layout = p->layout == REF_BSND ? "BSND" : "TND";
    ri->deterministic = tc->deterministic != 0;
    ri->workspace_size_arg = &ri->workspace_size;
    ri->executor_arg = &ri->executor;
}

static void save_message(run_inst *ri)
{
    const char *m = lig_get_last_error();
    if (m == NULL) {
        m = "(lig_get_last_error returned NULL)";
    }
    strncpy(ri->message, m, sizeof ri->message - 1);
    ri->message[sizeof ri->message - 1] = '\0';
}

lig_status run_phase1(run_inst *ri)
{
    ri->executor = NULL;
    ri->workspace_size = 0;
    lig_status st = lig_indexer_grad_get_workspace_size(
        ri->arg[RB_Q], ri->arg[RB_K], ri->arg[RB_DY], ri->arg[RB_IDX], ri->arg[RB_W], ri->arg[RB_SQ],
        ri->arg[RB_SK], ri->head_num, ri->layout, ri->sparse_mode, ri->pre_tokens, ri->next_tokens,
        ri->deterministic, ri->arg[RB_DQ], ri->arg[RB_DK], ri->arg[RB_DW], ri->workspace_size_arg,
        ri->executor_arg);
    if (st != LIG_SUCCESS) {
        save_message(ri);
    }
    return st;
}

lig_status run_phase2(run_inst *ri, int64_t delta)
{
    int64_t size = (int64_t)ri->workspace_size + delta;
    if (size < 0) {
        size = 0;
    }
    void *ws = NULL;
    if (size > 0) {
        ws = th_xmalloc((size_t)size);
        /* The library must not rely on a zeroed workspace. */
        memset(ws, 0xAB, (size_t)size);
    }
    lig_status st = lig_indexer_grad(ws, (uint64_t)size, ri->executor, NULL);
    ri->executor = NULL; /* consumed, success or not */
    if (st != LIG_SUCCESS) {
        save_message(ri);
    }
    free(ws);
    return st;
}

int run_all_unchanged(const run_inst *ri)
{
    for (int i = 0; i < RB_COUNT; i++) {
        if (ri->present[i] && !tbuf_unchanged(&ri->buf[i])) {
            return 0;
        }
    }
    for (int i = 0; i < ri->n_extra_mem; i++) {
        const unsigned char *m = ri->extra_mem[i];
        for (size_t j = 0; j < ri->extra_mem_bytes[i]; j++) {
            if (m[j] != TB_OUTPUT_FILL) {
                return 0;
            }
        }
    }
    return 1;
}

int run_gaps_ok(const run_inst *ri)
{
    for (int i = 0; i < RB_COUNT; i++) {
        if (!ri->present[i]) {
            continue;
        }
        if (i < RB_FIRST_OUTPUT ? !tbuf_unchanged(&ri->buf[i]) : !tbuf_gaps_unchanged(&ri->buf[i])) {
            return 0;
        }
    }
    return 1;
}

void run_read_outputs(const run_inst *ri, double *dq, double *dk, double *dw)
{
    read_doubles(&ri->buf[RB_DQ], dq);
    read_doubles(&ri->buf[RB_DK], dk);
    read_doubles(&ri->buf[RB_DW], dw);
}

void run_teardown(run_inst *ri)
{
    if (ri->executor != NULL) {
        lig_destroy_executor(ri->executor);
        ri->executor = NULL;
    }
    for (int i = 0; i < RB_COUNT; i++) {
        if (ri->present[i]) {
            tbuf_free(&ri->buf[i]);
        }
    }
    for (int i = 0; i < ri->n_extra; i++) {
        lig_destroy_tensor(ri->extra[i]);
    }
    for (int i = 0; i < ri->n_extra_mem; i++) {
        free(ri->extra_mem[i]);
    }
    ri->n_extra = ri->n_extra_mem = 0;
}

lig_tensor *run_adopt(run_inst *ri, lig_tensor *t)
{
    if (t != NULL) {
        if (ri->n_extra >= RUN_MAX_EXTRA) {
            abort();
        }
        ri->extra[ri->n_extra++] = t;
    }
    return t;
}

void *run_alloc(run_inst *ri, size_t bytes)
{
    if (ri->n_extra_mem >= RUN_MAX_EXTRA) {
        abort();
    }
    void *m = th_xmalloc(bytes);
    memset(m, TB_OUTPUT_FILL, bytes);
    ri->extra_mem_bytes[ri->n_extra_mem] = bytes;
    ri->extra_mem[ri->n_extra_mem++] = m;
    return m;
}

lig_tensor *run_new_tensor(run_inst *ri, lig_dtype dtype, int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        n *= shape[i] > 0 ? shape[i] : 0;
    }
    void *mem = run_alloc(ri, (size_t)(n > 0 ? n : 1) * th_dtype_size(dtype));
    return run_adopt(ri, lig_create_tensor(mem, dtype, ndim, shape, NULL));
}

void run_case(tcase *tc, run_result *res)
{
    memset(res, 0, sizeof *res);
    run_inst ri;
    run_setup(tc, &ri);
    res->st1 = run_phase1(&ri);
    res->workspace_size = ri.workspace_size;
    if (res->st1 != LIG_SUCCESS) {
        res->executor_null_after_failure = ri.executor == NULL;
        ri.executor = NULL; /* never destroy what a failed phase 1 may have left there */
        memcpy(res->message, ri.message, sizeof res->message);
        res->unchanged = run_all_unchanged(&ri);
        run_teardown(&ri);
        return;
    }
    res->phase2_ran = 1;
    res->st2 = run_phase2(&ri, 0);
    if (res->st2 != LIG_SUCCESS) {
        memcpy(res->message, ri.message, sizeof res->message);
        res->unchanged = run_all_unchanged(&ri);
        run_teardown(&ri);
        return;
    }
    res->gaps_ok = run_gaps_ok(&ri);
    res->dq = th_xmalloc((size_t)tc_numel_q(tc) * sizeof(double));
    res->dk = th_xmalloc((size_t)tc_numel_k(tc) * sizeof(double));
    res->dw = th_xmalloc((size_t)tc_numel_w(tc) * sizeof(double));
    run_read_outputs(&ri, res->dq, res->dk, res->dw);
    for (int i = 0; i < 3; i++) {
        const tbuf *b = &ri.buf[RB_DQ + i];
        res->raw_bytes[i] = b->bytes;
        res->raw[i] = th_xmalloc(b->bytes);
        memcpy(res->raw[i], b->base, b->bytes);
    }
    run_teardown(&ri);
}

void run_result_free(run_result *res)
{
    free(res->dq);
    free(res->dk);
    free(res->dw);
    for (int i = 0; i < 3; i++) {
        free(res->raw[i]);
    }
    memset(res, 0, sizeof *res);
}

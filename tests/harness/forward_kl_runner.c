#include "forward_kl_runner.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "float_formats.h"

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

void kl_set_shape(klcase *kc, int ndim, const int64_t *shape)
{
    kc->ndim = ndim;
    memcpy(kc->shape, shape, (size_t)ndim * sizeof *shape);
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

/* ---- setup ---- */

static lig_status fwd_phase1(inst *oi)
{
    return lig_indexer_get_workspace_size(oi->arg[FW_Q], oi->arg[FW_K], oi->arg[FW_W], oi->arg[FW_SQ], oi->arg[FW_SK],
                                          oi->layout, oi->sparse_count, oi->sparse_mode, oi->pre_tokens,
                                          oi->next_tokens, oi->arg[FW_IDX], oi->arg[FW_VAL], oi->workspace_size_arg,
                                          oi->executor_arg);
}

static lig_status kl_phase1(inst *oi)
{
    return lig_kl_loss_and_dy_get_workspace_size(oi->arg[KL_VAL], oi->arg[KL_IDX], oi->arg[KL_TGT],
                                                  oi->arg[KL_LOSS], oi->arg[KL_DY], oi->workspace_size_arg,
                                                  oi->executor_arg);
}

void fwd_setup(tcase *tc, int with_values, lig_dtype val_dtype, op_inst *oi)
{
    inst_init(oi, OP_FORWARD, FW_COUNT, FW_FIRST_OUTPUT, fwd_phase1, lig_indexer);
    const ref_problem *p = &tc->p;
    int64_t s[LIG_MAX_DIMS];
    int n;
    n = inst_shape_q(tc, s);
    tbuf_make(&oi->buf[FW_Q], tc->dtype, n, s, tc->in_strides, TB_FLOAT_GAP_FILL);
    n = inst_shape_k(tc, s);
    tbuf_make(&oi->buf[FW_K], tc->dtype, n, s, tc->in_strides, TB_FLOAT_GAP_FILL);
    n = inst_shape_w(tc, s);
    tbuf_make(&oi->buf[FW_W], tc->dtype, n, s, tc->in_strides, TB_FLOAT_GAP_FILL);
    n = inst_shape_slots(tc, s);
    tbuf_make(&oi->buf[FW_IDX], tc->idx_dtype, n, s, tc->out_strides, TB_OUTPUT_FILL);
    oi->present[FW_Q] = oi->present[FW_K] = oi->present[FW_W] = oi->present[FW_IDX] = 1;
    if (with_values) {
        tbuf_make(&oi->buf[FW_VAL], val_dtype, n, s, tc->out_strides, TB_OUTPUT_FILL);
        oi->present[FW_VAL] = 1;
    }
    inst_make_seq(oi, tc, FW_SQ, FW_SK);
    inst_load_qkw(oi, tc, FW_Q, FW_K, FW_W);
    inst_snapshot_all(oi);
    oi->layout = p->layout == REF_BSND ? "BSND" : "TND";
    oi->sparse_count = p->K;
    oi->sparse_mode = p->sparse_mode;
    oi->pre_tokens = p->pre_tokens;
    oi->next_tokens = p->next_tokens;
}

void kl_setup(klcase *kc, op_inst *oi)
{
    inst_init(oi, OP_KL, KL_COUNT, KL_FIRST_OUTPUT, kl_phase1, lig_kl_loss_and_dy);
    tbuf_make(&oi->buf[KL_VAL], kc->v_dtype, kc->ndim, kc->shape, kc->in_strides, TB_FLOAT_GAP_FILL);
    tbuf_make(&oi->buf[KL_TGT], kc->t_dtype, kc->ndim, kc->shape, kc->in_strides, TB_FLOAT_GAP_FILL);
    tbuf_make(&oi->buf[KL_DY], kc->dy_dtype, kc->ndim, kc->shape, kc->out_strides, TB_OUTPUT_FILL);
    const int64_t one[2] = {1, 1};
    tbuf_make(&oi->buf[KL_LOSS], LIG_FLOAT32, kc->loss_ndim, one, kc->out_strides, TB_OUTPUT_FILL);
    oi->present[KL_VAL] = oi->present[KL_TGT] = oi->present[KL_DY] = oi->present[KL_LOSS] = 1;
    tbuf_write_doubles(&oi->buf[KL_VAL], kc->values);
    tbuf_write_doubles(&oi->buf[KL_TGT], kc->target);
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
    tbuf_read_doubles(&oi->buf[KL_VAL], kc->values);
    tbuf_read_doubles(&oi->buf[KL_TGT], kc->target);
    inst_snapshot_all(oi);
}

void fwd_read(const op_inst *oi, int64_t *idx, double *val)
{
    const tbuf *bi = &oi->buf[FW_IDX];
    const int64_t n = tbuf_numel(bi);
    for (int64_t i = 0; i < n; i++) {
        idx[i] = tbuf_read_int(bi, i);
    }
    if (val != NULL && oi->present[FW_VAL]) {
        tbuf_read_doubles(&oi->buf[FW_VAL], val);
    }
}

void kl_read(const op_inst *oi, double *loss, double *dy)
{
    *loss = tbuf_read(&oi->buf[KL_LOSS], 0);
    tbuf_read_doubles(&oi->buf[KL_DY], dy);
}

void fwd_run(tcase *tc, int with_values, lig_dtype val_dtype, op_result *res)
{
    op_inst oi;
    fwd_setup(tc, with_values, val_dtype, &oi);
    if (!inst_run(&oi, res)) {
        return;
    }
    const int64_t slots = tc_numel_slots(tc);
    res->idx = th_xmalloc((size_t)slots * sizeof(int64_t));
    if (with_values) {
        res->val = th_xmalloc((size_t)slots * sizeof(double));
    }
    fwd_read(&oi, res->idx, res->val);
    inst_finish(&oi, res, (const int[2]){FW_IDX, with_values ? FW_VAL : -1}, 2);
}

void kl_run(klcase *kc, op_result *res)
{
    op_inst oi;
    kl_setup(kc, &oi);
    if (!inst_run(&oi, res)) {
        return;
    }
    res->dy = th_xmalloc((size_t)(kl_rows(kc) * kl_K(kc)) * sizeof(double));
    kl_read(&oi, &res->loss, res->dy);
    inst_finish(&oi, res, (const int[2]){KL_LOSS, KL_DY}, 2);
}

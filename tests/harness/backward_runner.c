#include "backward_runner.h"

#include <string.h>

#include "float_formats.h"

/* Broadcast strides would make dy/indices of one batch alias another's, which breaks the
 * generator's poison bookkeeping: they apply to q, k, w only. */
static tc_strides input_kind(const tcase *tc, int which)
{
    if (tc->in_strides == TC_BROADCAST && (which == RB_DY || which == RB_IDX)) {
        return TC_PADDED;
    }
    return tc->in_strides;
}

static lig_status grad_phase1(inst *ri)
{
    return lig_indexer_grad_get_workspace_size(
        ri->arg[RB_Q], ri->arg[RB_K], ri->arg[RB_DY], ri->arg[RB_IDX], ri->arg[RB_W], ri->arg[RB_SQ],
        ri->arg[RB_SK], ri->head_num, ri->layout, ri->sparse_mode, ri->pre_tokens, ri->next_tokens,
        ri->deterministic, ri->arg[RB_DQ], ri->arg[RB_DK], ri->arg[RB_DW], ri->workspace_size_arg,
        ri->executor_arg);
}

void run_setup(tcase *tc, run_inst *ri)
{
    inst_init(ri, 0, RB_COUNT, RB_FIRST_OUTPUT, grad_phase1, lig_indexer_grad);
    int64_t s[LIG_MAX_DIMS];
    int n;
    const ref_problem *p = &tc->p;

    n = inst_shape_q(tc, s);
    tbuf_make(&ri->buf[RB_Q], tc->dtype, n, s, input_kind(tc, RB_Q), TB_FLOAT_GAP_FILL);
    tbuf_make(&ri->buf[RB_DQ], tc->dtype, n, s, tc->out_strides, TB_OUTPUT_FILL);
    n = inst_shape_k(tc, s);
    tbuf_make(&ri->buf[RB_K], tc->dtype, n, s, input_kind(tc, RB_K), TB_FLOAT_GAP_FILL);
    tbuf_make(&ri->buf[RB_DK], tc->dtype, n, s, tc->out_strides, TB_OUTPUT_FILL);
    n = inst_shape_slots(tc, s);
    tbuf_make(&ri->buf[RB_DY], tc->dtype, n, s, input_kind(tc, RB_DY), TB_FLOAT_GAP_FILL);
    tbuf_make(&ri->buf[RB_IDX], tc->idx_dtype, n, s, input_kind(tc, RB_IDX), TB_INT_GAP_FILL);
    n = inst_shape_w(tc, s);
    tbuf_make(&ri->buf[RB_W], tc->dtype, n, s, input_kind(tc, RB_W), TB_FLOAT_GAP_FILL);
    tbuf_make(&ri->buf[RB_DW], tc->dw_dtype, n, s, tc->out_strides, TB_OUTPUT_FILL);
    for (int i = 0; i < RB_COUNT; i++) {
        ri->present[i] = 1;
    }
    inst_make_seq(ri, tc, RB_SQ, RB_SK);

    inst_load_qkw(ri, tc, RB_Q, RB_K, RB_W);
    tbuf_write_doubles(&ri->buf[RB_DY], tc->dy);
    int64_t ns = tbuf_numel(&ri->buf[RB_IDX]);
    for (int64_t i = 0; i < ns; i++) {
        tbuf_write_int(&ri->buf[RB_IDX], i, tc->idx[i]);
    }

    inst_snapshot_all(ri);
    ri->head_num = tc->head_num;
    ri->sparse_mode = p->sparse_mode;
    ri->pre_tokens = p->pre_tokens;
    ri->next_tokens = p->next_tokens;
    ri->layout = p->layout == REF_BSND ? "BSND" : "TND";
    ri->deterministic = tc->deterministic != 0;
}

void run_read_outputs(const run_inst *ri, double *dq, double *dk, double *dw)
{
    tbuf_read_doubles(&ri->buf[RB_DQ], dq);
    tbuf_read_doubles(&ri->buf[RB_DK], dk);
    tbuf_read_doubles(&ri->buf[RB_DW], dw);
}

void run_case(tcase *tc, run_result *res)
{
    run_inst ri;
    run_setup(tc, &ri);
    if (!inst_run(&ri, res)) {
        return;
    }
    res->dq = th_xmalloc((size_t)tc_numel_q(tc) * sizeof(double));
    res->dk = th_xmalloc((size_t)tc_numel_k(tc) * sizeof(double));
    res->dw = th_xmalloc((size_t)tc_numel_w(tc) * sizeof(double));
    run_read_outputs(&ri, res->dq, res->dk, res->dw);
    inst_finish(&ri, res, (const int[3]){RB_DQ, RB_DK, RB_DW}, 3);
}

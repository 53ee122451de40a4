/* The error cases of lig_dense_indexer_kl_loss_grad (docs/contract.md 2.9, 6.3): each row of the
 * table breaks one argument of a valid call; phase 1 must fail with the status given and a
 * message naming the parameter, no output may change, and no executor may come back. */
#include <stdlib.h>
#include <string.h>

#include "error_cases.h"
#include "framework.h"
#include "lig.h"
#include "tensor_buffers.h"

/* A valid BSND call: B = 2, S1 = 4, S2 = 6, N1 = 4, N2 = 1, D = 8, BFLOAT16, FLOAT32 weights, ratio 4. */
typedef struct call_args {
    tbuf q, k, w, target, lse, aq, ak, res, dq, dk, dw, sm, loss;
    const char *layout;
    int64_t mask_mode, ratio;
    bool no_ws_size, no_executor, no_loss;
} call_args;

static const int64_t QS[4] = {2, 4, 4, 8}, KS[4] = {2, 6, 1, 8}, WS[3] = {2, 4, 4}, TS[4] = {2, 4, 1, 6};

static void make_valid(call_args *a) {
    memset(a, 0, sizeof *a);
    const int64_t ls[3] = {2, 1, 4}, bs[1] = {2}, one[1] = {1};
    tbuf_make(&a->q, LIG_BFLOAT16, 4, QS, TC_CONTIGUOUS, 0);
    tbuf_make(&a->k, LIG_BFLOAT16, 4, KS, TC_CONTIGUOUS, 0);
    tbuf_make(&a->w, LIG_FLOAT32, 3, WS, TC_CONTIGUOUS, 0);
    tbuf_make(&a->target, LIG_FLOAT32, 4, TS, TC_CONTIGUOUS, 0);
    tbuf_make(&a->lse, LIG_FLOAT32, 3, ls, TC_CONTIGUOUS, 0);
    tbuf_make(&a->aq, LIG_INT64, 1, bs, TC_CONTIGUOUS, 0);
    tbuf_make(&a->ak, LIG_INT32, 1, bs, TC_CONTIGUOUS, 0);
    tbuf_make(&a->res, LIG_INT32, 1, bs, TC_CONTIGUOUS, 0);
    tbuf_make(&a->dq, LIG_BFLOAT16, 4, QS, TC_CONTIGUOUS, TB_OUTPUT_FILL);
    tbuf_make(&a->dk, LIG_BFLOAT16, 4, KS, TC_CONTIGUOUS, TB_OUTPUT_FILL);
    tbuf_make(&a->dw, LIG_FLOAT32, 3, WS, TC_CONTIGUOUS, TB_OUTPUT_FILL);
    tbuf_make(&a->sm, LIG_FLOAT32, 4, TS, TC_CONTIGUOUS, TB_OUTPUT_FILL);
    tbuf_make(&a->loss, LIG_FLOAT32, 1, one, TC_CONTIGUOUS, TB_OUTPUT_FILL);
    for (int64_t b = 0; b < 2; b++) {
        tbuf_write_int(&a->aq, b, 4);
        tbuf_write_int(&a->ak, b, 6);
        tbuf_write_int(&a->res, b, 3);
    }
    a->layout = "BSND";
    a->mask_mode = 3;
    a->ratio = 4;
}

static tbuf *all_of(call_args *a, size_t i) {
    tbuf *all[] = {&a->q, &a->k, &a->w, &a->target, &a->lse, &a->aq, &a->ak, &a->res, &a->dq, &a->dk, &a->dw, &a->sm, &a->loss};
    return i < sizeof all / sizeof all[0] ? all[i] : NULL;
}

static void free_args(call_args *a) {
    for (size_t i = 0; all_of(a, i); i++)
        if (all_of(a, i)->base) tbuf_free(all_of(a, i));
}

static void remake(tbuf *b, lig_dtype dtype, int ndim, const int64_t *shape, unsigned char fill) {
    tbuf_free(b);
    tbuf_make(b, dtype, ndim, shape, TC_CONTIGUOUS, fill);
}

static void drop(tbuf *b) { tbuf_free(b); memset(b, 0, sizeof *b); }
static void null_query(call_args *a) { drop(&a->q); }
static void null_target(call_args *a) { drop(&a->target); }
static void null_lse(call_args *a) { drop(&a->lse); }
static void null_dk(call_args *a) { drop(&a->dk); }
static void null_softmax_out(call_args *a) { drop(&a->sm); }
static void no_ws_size(call_args *a) { a->no_ws_size = true; }
static void no_executor(call_args *a) { a->no_executor = true; }
static void bad_layout(call_args *a) { a->layout = "TNDX"; }
static void weights_fp16(call_args *a) { remake(&a->w, LIG_FLOAT16, 3, WS, 0); }
static void key_heads(call_args *a) { const int64_t s[4] = {2, 6, 3, 8}; remake(&a->k, LIG_BFLOAT16, 4, s, 0); }
static void target_fp16(call_args *a) { remake(&a->target, LIG_FLOAT16, 4, TS, 0); }
static void target_rank(call_args *a) { const int64_t s[3] = {2, 4, 6}; remake(&a->target, LIG_FLOAT32, 3, s, 0); }
static void target_rows(call_args *a) { const int64_t s[4] = {2, 5, 1, 6}; remake(&a->target, LIG_FLOAT32, 4, s, 0); }
static void target_narrow(call_args *a) {
    const int64_t s[4] = {2, 4, 1, 5};
    remake(&a->target, LIG_FLOAT32, 4, s, 0);
    remake(&a->sm, LIG_FLOAT32, 4, s, TB_OUTPUT_FILL);
}
static void lse_shape(call_args *a) { const int64_t s[3] = {2, 4, 1}; remake(&a->lse, LIG_FLOAT32, 3, s, 0); }
static void lse_bf16(call_args *a) { const int64_t s[3] = {2, 1, 4}; remake(&a->lse, LIG_BFLOAT16, 3, s, 0); }
static void dq_dtype(call_args *a) { remake(&a->dq, LIG_FLOAT32, 4, QS, TB_OUTPUT_FILL); }
static void dk_shape(call_args *a) { const int64_t s[4] = {2, 5, 1, 8}; remake(&a->dk, LIG_BFLOAT16, 4, s, TB_OUTPUT_FILL); }
static void dw_dtype(call_args *a) { remake(&a->dw, LIG_BFLOAT16, 3, WS, TB_OUTPUT_FILL); }
static void softmax_out_shape(call_args *a) { const int64_t s[4] = {2, 4, 1, 7}; remake(&a->sm, LIG_FLOAT32, 4, s, TB_OUTPUT_FILL); }
static void softmax_out_dtype(call_args *a) { remake(&a->sm, LIG_FLOAT16, 4, TS, TB_OUTPUT_FILL); }
static void loss_two(call_args *a) { const int64_t s[1] = {2}; remake(&a->loss, LIG_FLOAT32, 1, s, TB_OUTPUT_FILL); }
static void mask_2(call_args *a) { a->mask_mode = 2; }
static void ratio_0(call_args *a) { a->ratio = 0; }
static void res_at_ratio(call_args *a) { tbuf_write_int(&a->res, 1, 4); }
static void res_with_ratio_1(call_args *a) { a->ratio = 1; }
static void key_length_long(call_args *a) { tbuf_write_int(&a->ak, 0, 7); }
static void dq_over_query(call_args *a) {
    lig_destroy_tensor(a->dq.t);
    a->dq.t = lig_create_tensor(a->q.base, LIG_BFLOAT16, 4, QS, NULL);
}
static void softmax_out_over_target(call_args *a) {
    lig_destroy_tensor(a->sm.t);
    a->sm.t = lig_create_tensor(a->target.base, LIG_FLOAT32, 4, TS, NULL);
}

static const struct {
    const char *name;
    void (*edit)(call_args *a);
    lig_status want;
    const char *names; /* the parameter the message must name */
} cases[] = {
    {"query NULL", null_query, LIG_ERR_PARAM_NULLPTR, "query"},
    {"attn_softmax_l1_norm NULL", null_target, LIG_ERR_PARAM_NULLPTR, "attn_softmax_l1_norm"},
    {"softmax_lse NULL", null_lse, LIG_ERR_PARAM_NULLPTR, "softmax_lse"},
    {"d_key NULL", null_dk, LIG_ERR_PARAM_NULLPTR, "d_key"},
    {"softmax_out NULL", null_softmax_out, LIG_ERR_PARAM_NULLPTR, "softmax_out"},
    {"workspace_size NULL", no_ws_size, LIG_ERR_PARAM_NULLPTR, "workspace_size"},
    {"executor NULL", no_executor, LIG_ERR_PARAM_NULLPTR, "executor"},
    {"layout TNDX", bad_layout, LIG_ERR_PARAM_INVALID, "layout"},
    {"weights FLOAT16 with BFLOAT16 query", weights_fp16, LIG_ERR_PARAM_INVALID, "weights"},
    {"key N2 3 of N1 4", key_heads, LIG_ERR_PARAM_INVALID, "key"},
    {"attn_softmax_l1_norm FLOAT16", target_fp16, LIG_ERR_PARAM_INVALID, "attn_softmax_l1_norm"},
    {"attn_softmax_l1_norm rank 3", target_rank, LIG_ERR_PARAM_INVALID, "attn_softmax_l1_norm"},
    {"attn_softmax_l1_norm S1 5", target_rows, LIG_ERR_PARAM_INVALID, "attn_softmax_l1_norm"},
    {"attn_softmax_l1_norm W 5 < 6 entries", target_narrow, LIG_ERR_PARAM_INVALID, "attn_softmax_l1_norm"},
    {"softmax_lse [B,S1,N2]", lse_shape, LIG_ERR_PARAM_INVALID, "softmax_lse"},
    {"softmax_lse BFLOAT16", lse_bf16, LIG_ERR_PARAM_INVALID, "softmax_lse"},
    {"d_query FLOAT32", dq_dtype, LIG_ERR_PARAM_INVALID, "d_query"},
    {"d_key S2 5", dk_shape, LIG_ERR_PARAM_INVALID, "d_key"},
    {"d_weights BFLOAT16 with FLOAT32 weights", dw_dtype, LIG_ERR_PARAM_INVALID, "d_weights"},
    {"softmax_out W 7", softmax_out_shape, LIG_ERR_PARAM_INVALID, "softmax_out"},
    {"softmax_out FLOAT16", softmax_out_dtype, LIG_ERR_PARAM_INVALID, "softmax_out"},
    {"loss [2]", loss_two, LIG_ERR_PARAM_INVALID, "loss"},
    {"mask_mode 2", mask_2, LIG_ERR_PARAM_INVALID, "mask_mode"},
    {"cmp_ratio 0", ratio_0, LIG_ERR_PARAM_INVALID, "cmp_ratio"},
    {"cmp_residual_k = cmp_ratio", res_at_ratio, LIG_ERR_PARAM_INVALID, "cmp_residual_k"},
    {"cmp_residual_k 3 with cmp_ratio 1", res_with_ratio_1, LIG_ERR_PARAM_INVALID, "cmp_residual_k"},
    {"key length past S2", key_length_long, LIG_ERR_PARAM_INVALID, "actual_seq_lengths_key"},
    {"d_query over query", dq_over_query, LIG_ERR_PARAM_INVALID, "d_query"},
    {"softmax_out over attn_softmax_l1_norm", softmax_out_over_target, LIG_ERR_PARAM_INVALID, "softmax_out"},
};

static lig_status plan(call_args *a, uint64_t *ws, lig_executor **e) {
    *e = NULL;
    return lig_dense_indexer_kl_loss_grad_get_workspace_size(
        a->q.t, a->k.t, a->w.t, a->target.t, a->lse.t, a->aq.t, a->ak.t, a->res.t, a->layout, a->mask_mode, a->ratio,
        true, a->dq.t, a->dk.t, a->dw.t, a->sm.t, a->no_loss ? NULL : a->loss.t, a->no_ws_size ? NULL : ws,
        a->no_executor ? NULL : e);
}

static void snapshot_all(call_args *a) {
    for (size_t i = 0; all_of(a, i); i++)
        if (all_of(a, i)->base) tbuf_snapshot(all_of(a, i));
}

static int changed(call_args *a) {
    for (size_t i = 0; all_of(a, i); i++)
        if (all_of(a, i)->base && !tbuf_unchanged(all_of(a, i))) return (int)i;
    return -1;
}

LIG_TEST(dense_kl_grad_errors) {
    call_args a;
    make_valid(&a);
    uint64_t ws = 0;
    lig_executor *e = NULL;
    lig_status st = plan(&a, &ws, &e);
    CHECK(st == LIG_SUCCESS, "valid call: %s", lig_get_last_error());
    lig_destroy_executor(e);
    a.no_loss = true; /* loss is optional */
    st = plan(&a, &ws, &e);
    CHECK(st == LIG_SUCCESS, "valid call without loss: %s", lig_get_last_error());
    lig_destroy_executor(e);
    free_args(&a);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        make_valid(&a);
        cases[i].edit(&a);
        snapshot_all(&a);
        st = plan(&a, &ws, &e);
        errtest_call_verdict(cases[i].name, st, cases[i].want, lig_get_last_error(), cases[i].names, e);
        CHECK(changed(&a) < 0, "%s: tensor %d was written", cases[i].name, changed(&a));
        free_args(&a);
    }
}

/* Phase 2: a short workspace and an executor of another operator, refused by name, nothing written. */
LIG_TEST(dense_kl_grad_phase2_errors) {
    call_args a;
    make_valid(&a);
    uint64_t ws = 0;
    lig_executor *e1 = NULL, *e2 = NULL;
    const lig_status st1 = plan(&a, &ws, &e1), st2 = plan(&a, &ws, &e2);
    CHECK(ws > 0, "the workspace of a problem with work is not empty");
    if (CHECK(st1 == LIG_SUCCESS && st2 == LIG_SUCCESS, "plan: %s", lig_get_last_error())) {
        snapshot_all(&a);
        errtest_phase2_refusals(lig_dense_indexer_kl_loss_grad, e1, ws, lig_dense_indexer_softmax_lse, e2,
                                "lig_dense_indexer_kl_loss_grad_get_workspace_size");
        CHECK(changed(&a) < 0, "phase 2 refused: tensor %d was written", changed(&a));
    }
    free_args(&a);
}

/* CUDA tensors: refused by name in phase 1 (no CUDA form yet), nothing written. */
LIG_TEST(devices_dense_kl_grad_refused_on_cuda) {
    call_args a;
    make_valid(&a);
    tbuf *const on_device[] = {&a.q, &a.k, &a.w, &a.target, &a.lse, &a.dq, &a.dk, &a.dw, &a.sm, &a.loss};
    errtest_describe_on_cuda(on_device, sizeof on_device / sizeof on_device[0]);
    snapshot_all(&a);
    uint64_t ws = 0;
    lig_executor *e = NULL;
    const lig_status st = plan(&a, &ws, &e);
    errtest_refused_on_cuda("lig_dense_indexer_kl_loss_grad", st, e);
    CHECK(changed(&a) < 0, "CUDA tensors: tensor %d was written", changed(&a));
    free_args(&a);
}

/* The error cases of lig_dense_indexer_softmax_lse (docs/contract.md 2.7, 6.3): each row of the
 * table breaks one argument of a valid call; phase 1 must fail with the status given and a
 * message naming the parameter, the output must keep every byte, and no executor may come back. */
#include <stdlib.h>
#include <string.h>

#include "error_cases.h"
#include "framework.h"
#include "lig.h"
#include "tensor_buffers.h"

/* A valid BSND call: B = 2, S1 = 4, S2 = 6, N1 = 4, N2 = 1, D = 8, BFLOAT16, ratio 4. */
typedef struct call_args {
    tbuf q, k, w, lse, aq, ak, res;
    const char *layout;
    int64_t mask_mode, ratio;
    bool no_ws_size, no_executor;
} call_args;

static void make_valid(call_args *a) {
    memset(a, 0, sizeof *a);
    const int64_t qs[4] = {2, 4, 4, 8}, ks[4] = {2, 6, 1, 8}, ws[3] = {2, 4, 4}, ls[3] = {2, 1, 4}, bs[1] = {2};
    tbuf_make(&a->q, LIG_BFLOAT16, 4, qs, TC_CONTIGUOUS, 0);
    tbuf_make(&a->k, LIG_BFLOAT16, 4, ks, TC_CONTIGUOUS, 0);
    tbuf_make(&a->w, LIG_FLOAT32, 3, ws, TC_CONTIGUOUS, 0);
    tbuf_make(&a->lse, LIG_FLOAT32, 3, ls, TC_CONTIGUOUS, TB_OUTPUT_FILL);
    tbuf_make(&a->aq, LIG_INT64, 1, bs, TC_CONTIGUOUS, 0);
    tbuf_make(&a->ak, LIG_INT32, 1, bs, TC_CONTIGUOUS, 0);
    tbuf_make(&a->res, LIG_INT32, 1, bs, TC_CONTIGUOUS, 0);
    for (int64_t b = 0; b < 2; b++) {
        tbuf_write_int(&a->aq, b, 4);
        tbuf_write_int(&a->ak, b, 6);
        tbuf_write_int(&a->res, b, 3);
    }
    a->layout = "BSND";
    a->mask_mode = 3;
    a->ratio = 4;
}

static void free_args(call_args *a) {
    tbuf *all[] = {&a->q, &a->k, &a->w, &a->lse, &a->aq, &a->ak, &a->res};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->base) tbuf_free(all[i]);
}

static void remake(tbuf *b, lig_dtype dtype, int ndim, const int64_t *shape, unsigned char fill) {
    tbuf_free(b);
    tbuf_make(b, dtype, ndim, shape, TC_CONTIGUOUS, fill);
}

static void null_query(call_args *a) { tbuf_free(&a->q); memset(&a->q, 0, sizeof a->q); }
static void null_output(call_args *a) { tbuf_free(&a->lse); memset(&a->lse, 0, sizeof a->lse); }
static void no_ws_size(call_args *a) { a->no_ws_size = true; }
static void no_executor(call_args *a) { a->no_executor = true; }
static void bad_layout(call_args *a) { a->layout = "bsnd"; }
static void query_int(call_args *a) { const int64_t s[4] = {2, 4, 4, 8}; remake(&a->q, LIG_INT32, 4, s, 0); }
static void key_other_dtype(call_args *a) { const int64_t s[4] = {2, 6, 1, 8}; remake(&a->k, LIG_FLOAT16, 4, s, 0); }
static void weights_fp16(call_args *a) { const int64_t s[3] = {2, 4, 4}; remake(&a->w, LIG_FLOAT16, 3, s, 0); }
static void key_d(call_args *a) { const int64_t s[4] = {2, 6, 1, 9}; remake(&a->k, LIG_BFLOAT16, 4, s, 0); }
static void key_heads(call_args *a) { const int64_t s[4] = {2, 6, 3, 8}; remake(&a->k, LIG_BFLOAT16, 4, s, 0); }
static void weights_shape(call_args *a) { const int64_t s[3] = {2, 4, 5}; remake(&a->w, LIG_FLOAT32, 3, s, 0); }
static void lse_dtype(call_args *a) { const int64_t s[3] = {2, 1, 4}; remake(&a->lse, LIG_FLOAT16, 3, s, TB_OUTPUT_FILL); }
static void lse_shape(call_args *a) { const int64_t s[3] = {2, 4, 1}; remake(&a->lse, LIG_FLOAT32, 3, s, TB_OUTPUT_FILL); }
static void lse_rank(call_args *a) { const int64_t s[4] = {2, 1, 4, 1}; remake(&a->lse, LIG_FLOAT32, 4, s, TB_OUTPUT_FILL); }
static void mask_1(call_args *a) { a->mask_mode = 1; }
static void ratio_0(call_args *a) { a->ratio = 0; }
static void ratio_129(call_args *a) { a->ratio = 129; }
static void res_at_ratio(call_args *a) { tbuf_write_int(&a->res, 1, 4); }
static void res_negative(call_args *a) { tbuf_write_int(&a->res, 0, -1); }
static void res_with_ratio_1(call_args *a) { a->ratio = 1; }
static void res_shape(call_args *a) { const int64_t s[1] = {3}; remake(&a->res, LIG_INT32, 1, s, 0); }
static void res_float(call_args *a) { const int64_t s[1] = {2}; remake(&a->res, LIG_FLOAT32, 1, s, 0); }
static void key_length_long(call_args *a) { tbuf_write_int(&a->ak, 0, 7); }
static void query_length_negative(call_args *a) { tbuf_write_int(&a->aq, 1, -1); }
static void lse_overlaps_weights(call_args *a) {
    /* the output's descriptor over the weights' bytes */
    lig_destroy_tensor(a->lse.t);
    const int64_t s[3] = {2, 1, 4};
    a->lse.t = lig_create_tensor(a->w.base, LIG_FLOAT32, 3, s, NULL);
}

static const struct {
    const char *name;
    void (*edit)(call_args *a);
    lig_status want;
    const char *names; /* the parameter the message must name */
} cases[] = {
    {"query NULL", null_query, LIG_ERR_PARAM_NULLPTR, "query"},
    {"softmax_lse NULL", null_output, LIG_ERR_PARAM_NULLPTR, "softmax_lse"},
    {"workspace_size NULL", no_ws_size, LIG_ERR_PARAM_NULLPTR, "workspace_size"},
    {"executor NULL", no_executor, LIG_ERR_PARAM_NULLPTR, "executor"},
    {"layout lower case", bad_layout, LIG_ERR_PARAM_INVALID, "layout"},
    {"query INT32", query_int, LIG_ERR_PARAM_INVALID, "query"},
    {"key FLOAT16 with BFLOAT16 query", key_other_dtype, LIG_ERR_PARAM_INVALID, "key"},
    {"weights FLOAT16 with BFLOAT16 query", weights_fp16, LIG_ERR_PARAM_INVALID, "weights"},
    {"key D 9", key_d, LIG_ERR_PARAM_INVALID, "key"},
    {"key N2 3 of N1 4", key_heads, LIG_ERR_PARAM_INVALID, "key"},
    {"weights N1 5", weights_shape, LIG_ERR_PARAM_INVALID, "weights"},
    {"softmax_lse FLOAT16", lse_dtype, LIG_ERR_PARAM_INVALID, "softmax_lse"},
    {"softmax_lse [B,S1,N2]", lse_shape, LIG_ERR_PARAM_INVALID, "softmax_lse"},
    {"softmax_lse rank 4", lse_rank, LIG_ERR_PARAM_INVALID, "softmax_lse"},
    {"mask_mode 1", mask_1, LIG_ERR_PARAM_INVALID, "mask_mode"},
    {"cmp_ratio 0", ratio_0, LIG_ERR_PARAM_INVALID, "cmp_ratio"},
    {"cmp_ratio 129", ratio_129, LIG_ERR_PARAM_INVALID, "cmp_ratio"},
    {"cmp_residual_k = cmp_ratio", res_at_ratio, LIG_ERR_PARAM_INVALID, "cmp_residual_k"},
    {"cmp_residual_k -1", res_negative, LIG_ERR_PARAM_INVALID, "cmp_residual_k"},
    {"cmp_residual_k 3 with cmp_ratio 1", res_with_ratio_1, LIG_ERR_PARAM_INVALID, "cmp_residual_k"},
    {"cmp_residual_k [3]", res_shape, LIG_ERR_PARAM_INVALID, "cmp_residual_k"},
    {"cmp_residual_k FLOAT32", res_float, LIG_ERR_PARAM_INVALID, "cmp_residual_k"},
    {"key length past S2", key_length_long, LIG_ERR_PARAM_INVALID, "actual_seq_lengths_key"},
    {"query length -1", query_length_negative, LIG_ERR_PARAM_INVALID, "actual_seq_lengths_query"},
    {"softmax_lse over weights", lse_overlaps_weights, LIG_ERR_PARAM_INVALID, "softmax_lse"},
};

/* Phase 1 with the arguments as they are. */
static lig_status plan(call_args *a, uint64_t *ws, lig_executor **e) {
    *e = NULL;
    return lig_dense_indexer_softmax_lse_get_workspace_size(a->q.t, a->k.t, a->w.t, a->aq.t, a->ak.t, a->res.t,
                                                            a->layout, a->mask_mode, a->ratio, a->lse.t,
                                                            a->no_ws_size ? NULL : ws, a->no_executor ? NULL : e);
}

LIG_TEST(dense_lse_errors) {
    /* the valid call first: the table's failures are the edits' */
    call_args a;
    make_valid(&a);
    uint64_t ws = 0;
    lig_executor *e = NULL;
    lig_status st = plan(&a, &ws, &e);
    CHECK(st == LIG_SUCCESS, "valid call: %s", lig_get_last_error());
    lig_destroy_executor(e);
    free_args(&a);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        make_valid(&a);
        cases[i].edit(&a);
        if (a.lse.base) tbuf_snapshot(&a.lse);
        tbuf_snapshot(&a.w);
        st = plan(&a, &ws, &e);
        const char *msg = lig_get_last_error();
        CHECK(st == cases[i].want, "%s: status %d, want %d (%s)", cases[i].name, (int)st, (int)cases[i].want, msg);
        CHECK(strstr(msg, cases[i].names) != NULL && strstr(msg, "expected") != NULL,
              "%s: the message does not name %s with what it expected: %s", cases[i].name, cases[i].names, msg);
        CHECK(e == NULL, "%s: an executor came back", cases[i].name);
        if (a.lse.base) CHECK(tbuf_unchanged(&a.lse), "%s: softmax_lse was written", cases[i].name);
        CHECK(tbuf_unchanged(&a.w), "%s: weights were written", cases[i].name);
        if (st == LIG_SUCCESS) lig_destroy_executor(e);
        free_args(&a);
    }
}

/* Phase 2: an executor of another operator, and a short workspace, refused by name. */
LIG_TEST(dense_lse_phase2_errors) {
    call_args a;
    make_valid(&a);
    uint64_t ws = 0;
    lig_executor *e1 = NULL, *e2 = NULL;
    const lig_status st1 = plan(&a, &ws, &e1), st2 = plan(&a, &ws, &e2);
    if (CHECK(st1 == LIG_SUCCESS && st2 == LIG_SUCCESS, "plan: %s", lig_get_last_error())) {
        tbuf_snapshot(&a.lse);
        errtest_phase2_refusals(lig_dense_indexer_softmax_lse, e1, ws, lig_kl_loss_and_dy, e2,
                                "lig_dense_indexer_softmax_lse_get_workspace_size");
        CHECK(tbuf_unchanged(&a.lse), "phase 2 refused: softmax_lse was written");
    }
    free_args(&a);
}

/* CUDA tensors: a build with the CUDA backend refuses the operator by name in phase 1 (its slot is
 * NULL: no CUDA form yet); a build without refuses the device. Phase 1 reads no tensor data, so
 * host memory described as CUDA memory is enough. The lengths stay on the host. */
LIG_TEST(devices_dense_lse_refused_on_cuda) {
    call_args a;
    make_valid(&a);
    tbuf *const on_device[] = {&a.q, &a.k, &a.w, &a.lse};
    errtest_describe_on_cuda(on_device, sizeof on_device / sizeof on_device[0]);
    tbuf_snapshot(&a.lse);
    uint64_t ws = 0;
    lig_executor *e = NULL;
    const lig_status st = plan(&a, &ws, &e);
    errtest_refused_on_cuda("lig_dense_indexer_softmax_lse", st, e);
    CHECK(tbuf_unchanged(&a.lse), "CUDA tensors: softmax_lse was written");
    free_args(&a);
}

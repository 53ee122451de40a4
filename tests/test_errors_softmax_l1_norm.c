/* The error cases of lig_sparse_flash_mla_softmax_l1_norm (docs/contract.md 2.10, 6.3): each row of
 * the table breaks one argument of a valid call (sparse or dense); phase 1 must fail with the status
 * given and a message naming the parameter, the output must keep every byte, and no executor may
 * come back. Phase 2 refuses bad indices (the lowest, before anything is written), a short
 * workspace and a foreign executor. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error_cases.h"
#include "framework.h"
#include "lig.h"
#include "tensor_buffers.h"

/* A valid BSND call: B = 2, S1 = 4, S2 = 6, N1 = 4, D = 8, BFLOAT16, ratio 4 with residuals 3;
 * sparse: K = 3 slots ([B,S1,1,K]); dense: W = 6 columns. */
typedef struct call_args {
    bool dense;
    tbuf q, k, lse, idx, out, aq, ak, res;
    const char *layout;
    double scale;
    int64_t mask_mode, ratio;
    bool no_ws_size, no_executor;
} call_args;

static void make_valid(call_args *a, bool dense) {
    memset(a, 0, sizeof *a);
    a->dense = dense;
    const int64_t qs[4] = {2, 4, 4, 8}, ks[4] = {2, 6, 1, 8}, ls[4] = {2, 1, 4, 4}, bs[1] = {2};
    const int64_t is[4] = {2, 4, 1, 3}, os[4] = {2, 4, 1, dense ? 6 : 3};
    tbuf_make(&a->q, LIG_BFLOAT16, 4, qs, TC_CONTIGUOUS, 0);
    tbuf_make(&a->k, LIG_BFLOAT16, 4, ks, TC_CONTIGUOUS, 0);
    tbuf_make(&a->lse, LIG_FLOAT32, 4, ls, TC_CONTIGUOUS, 0);
    if (!dense) {
        tbuf_make(&a->idx, LIG_INT32, 4, is, TC_CONTIGUOUS, 0);
        for (int64_t i = 0; i < tbuf_numel(&a->idx); i++) tbuf_write_int(&a->idx, i, i % 3 == 2 ? -1 : i % 3);
    }
    tbuf_make(&a->out, LIG_FLOAT32, 4, os, TC_CONTIGUOUS, TB_OUTPUT_FILL);
    tbuf_make(&a->aq, LIG_INT64, 1, bs, TC_CONTIGUOUS, 0);
    tbuf_make(&a->ak, LIG_INT32, 1, bs, TC_CONTIGUOUS, 0);
    tbuf_make(&a->res, LIG_INT32, 1, bs, TC_CONTIGUOUS, 0);
    for (int64_t b = 0; b < 2; b++) {
        tbuf_write_int(&a->aq, b, 4);
        tbuf_write_int(&a->ak, b, 6);
        tbuf_write_int(&a->res, b, 3);
    }
    a->layout = "BSND";
    a->scale = 0.125;
    a->mask_mode = 3;
    a->ratio = 4;
}

static void free_args(call_args *a) {
    tbuf *all[] = {&a->q, &a->k, &a->lse, &a->idx, &a->out, &a->aq, &a->ak, &a->res};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->base) tbuf_free(all[i]);
}

static void remake(tbuf *b, lig_dtype dtype, int ndim, const int64_t *shape, unsigned char fill) {
    tbuf_free(b);
    tbuf_make(b, dtype, ndim, shape, TC_CONTIGUOUS, fill);
}

static void drop(tbuf *b) { tbuf_free(b); memset(b, 0, sizeof *b); }
static void null_query(call_args *a) { drop(&a->q); }
static void null_key(call_args *a) { drop(&a->k); }
static void null_lse(call_args *a) { drop(&a->lse); }
static void null_output(call_args *a) { drop(&a->out); }
static void no_ws_size(call_args *a) { a->no_ws_size = true; }
static void no_executor(call_args *a) { a->no_executor = true; }
static void bad_layout(call_args *a) { a->layout = "TND "; }
static void query_int(call_args *a) { const int64_t s[4] = {2, 4, 4, 8}; remake(&a->q, LIG_INT32, 4, s, 0); }
static void query_rank(call_args *a) { const int64_t s[3] = {2, 4, 32}; remake(&a->q, LIG_BFLOAT16, 3, s, 0); }
static void key_other_dtype(call_args *a) { const int64_t s[4] = {2, 6, 1, 8}; remake(&a->k, LIG_FLOAT16, 4, s, 0); }
static void key_d(call_args *a) { const int64_t s[4] = {2, 6, 1, 9}; remake(&a->k, LIG_BFLOAT16, 4, s, 0); }
static void key_heads(call_args *a) { const int64_t s[4] = {2, 6, 2, 8}; remake(&a->k, LIG_BFLOAT16, 4, s, 0); }
static void key_batch(call_args *a) { const int64_t s[4] = {3, 6, 1, 8}; remake(&a->k, LIG_BFLOAT16, 4, s, 0); }
static void lse_dtype(call_args *a) { const int64_t s[4] = {2, 1, 4, 4}; remake(&a->lse, LIG_BFLOAT16, 4, s, 0); }
static void lse_heads(call_args *a) { const int64_t s[4] = {2, 1, 4, 3}; remake(&a->lse, LIG_FLOAT32, 4, s, 0); }
static void lse_rows_first(call_args *a) { const int64_t s[4] = {2, 4, 1, 4}; remake(&a->lse, LIG_FLOAT32, 4, s, 0); }
static void lse_rank(call_args *a) { const int64_t s[3] = {2, 4, 4}; remake(&a->lse, LIG_FLOAT32, 3, s, 0); }
static void idx_float(call_args *a) { const int64_t s[4] = {2, 4, 1, 3}; remake(&a->idx, LIG_FLOAT32, 4, s, 0); }
static void idx_heads(call_args *a) { const int64_t s[4] = {2, 4, 2, 3}; remake(&a->idx, LIG_INT32, 4, s, 0); }
static void idx_rows(call_args *a) { const int64_t s[4] = {2, 5, 1, 3}; remake(&a->idx, LIG_INT32, 4, s, 0); }
static void out_dtype(call_args *a) {
    const int64_t s[4] = {2, 4, 1, a->dense ? 6 : 3};
    remake(&a->out, LIG_FLOAT16, 4, s, TB_OUTPUT_FILL);
}
static void out_slots(call_args *a) { const int64_t s[4] = {2, 4, 1, 4}; remake(&a->out, LIG_FLOAT32, 4, s, TB_OUTPUT_FILL); }
static void out_narrow(call_args *a) { const int64_t s[4] = {2, 4, 1, 5}; remake(&a->out, LIG_FLOAT32, 4, s, TB_OUTPUT_FILL); }
static void out_rows(call_args *a) {
    const int64_t s[4] = {2, 3, 1, a->dense ? 6 : 3};
    remake(&a->out, LIG_FLOAT32, 4, s, TB_OUTPUT_FILL);
}
static void scale_nan(call_args *a) { a->scale = NAN; }
static void scale_huge(call_args *a) { a->scale = 1e300; }
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
static void out_overlaps_query(call_args *a) {
    lig_destroy_tensor(a->out.t);
    const int64_t s[4] = {2, 4, 1, a->dense ? 6 : 3};
    a->out.t = lig_create_tensor(a->q.base, LIG_FLOAT32, 4, s, NULL);
}

typedef enum { BOTH, SPARSE, DENSE } which;

static const struct {
    const char *name;
    void (*edit)(call_args *a);
    which forms;
    lig_status want;
    const char *names; /* the parameter the message must name */
} cases[] = {
    {"query NULL", null_query, BOTH, LIG_ERR_PARAM_NULLPTR, "query"},
    {"key NULL", null_key, BOTH, LIG_ERR_PARAM_NULLPTR, "key"},
    {"softmax_lse NULL", null_lse, BOTH, LIG_ERR_PARAM_NULLPTR, "softmax_lse"},
    {"softmax_l1_norm NULL", null_output, BOTH, LIG_ERR_PARAM_NULLPTR, "softmax_l1_norm"},
    {"workspace_size NULL", no_ws_size, BOTH, LIG_ERR_PARAM_NULLPTR, "workspace_size"},
    {"executor NULL", no_executor, BOTH, LIG_ERR_PARAM_NULLPTR, "executor"},
    {"layout with a space", bad_layout, BOTH, LIG_ERR_PARAM_INVALID, "layout"},
    {"query INT32", query_int, BOTH, LIG_ERR_PARAM_INVALID, "query"},
    {"query rank 3 in BSND", query_rank, BOTH, LIG_ERR_PARAM_INVALID, "query"},
    {"key FLOAT16 with BFLOAT16 query", key_other_dtype, BOTH, LIG_ERR_PARAM_INVALID, "key"},
    {"key D 9", key_d, BOTH, LIG_ERR_PARAM_INVALID, "key"},
    {"key with 2 heads", key_heads, BOTH, LIG_ERR_PARAM_INVALID, "key"},
    {"key B 3", key_batch, BOTH, LIG_ERR_PARAM_INVALID, "key"},
    {"softmax_lse BFLOAT16", lse_dtype, BOTH, LIG_ERR_PARAM_INVALID, "softmax_lse"},
    {"softmax_lse N1 3", lse_heads, BOTH, LIG_ERR_PARAM_INVALID, "softmax_lse"},
    {"softmax_lse [B,S1,1,N1]", lse_rows_first, BOTH, LIG_ERR_PARAM_INVALID, "softmax_lse"},
    {"softmax_lse rank 3", lse_rank, BOTH, LIG_ERR_PARAM_INVALID, "softmax_lse"},
    {"sparse_indices FLOAT32", idx_float, SPARSE, LIG_ERR_PARAM_INVALID, "sparse_indices"},
    {"sparse_indices 2 heads", idx_heads, SPARSE, LIG_ERR_PARAM_INVALID, "sparse_indices"},
    {"sparse_indices S1 5", idx_rows, SPARSE, LIG_ERR_PARAM_INVALID, "sparse_indices"},
    {"softmax_l1_norm FLOAT16", out_dtype, BOTH, LIG_ERR_PARAM_INVALID, "softmax_l1_norm"},
    {"softmax_l1_norm K 4 of 3 slots", out_slots, SPARSE, LIG_ERR_PARAM_INVALID, "softmax_l1_norm"},
    {"softmax_l1_norm W 5 < 6 entries", out_narrow, DENSE, LIG_ERR_PARAM_INVALID, "softmax_l1_norm"},
    {"softmax_l1_norm S1 3", out_rows, BOTH, LIG_ERR_PARAM_INVALID, "softmax_l1_norm"},
    {"softmax_scale NaN", scale_nan, BOTH, LIG_ERR_PARAM_INVALID, "softmax_scale"},
    {"softmax_scale past fp32", scale_huge, BOTH, LIG_ERR_PARAM_INVALID, "softmax_scale"},
    {"mask_mode 1", mask_1, BOTH, LIG_ERR_PARAM_INVALID, "mask_mode"},
    {"cmp_ratio 0", ratio_0, BOTH, LIG_ERR_PARAM_INVALID, "cmp_ratio"},
    {"cmp_ratio 129", ratio_129, BOTH, LIG_ERR_PARAM_INVALID, "cmp_ratio"},
    {"cmp_residual_k = cmp_ratio", res_at_ratio, BOTH, LIG_ERR_PARAM_INVALID, "cmp_residual_k"},
    {"cmp_residual_k -1", res_negative, BOTH, LIG_ERR_PARAM_INVALID, "cmp_residual_k"},
    {"cmp_residual_k 3 with cmp_ratio 1", res_with_ratio_1, BOTH, LIG_ERR_PARAM_INVALID, "cmp_residual_k"},
    {"cmp_residual_k [3]", res_shape, BOTH, LIG_ERR_PARAM_INVALID, "cmp_residual_k"},
    {"cmp_residual_k FLOAT32", res_float, BOTH, LIG_ERR_PARAM_INVALID, "cmp_residual_k"},
    {"key length past S2", key_length_long, BOTH, LIG_ERR_PARAM_INVALID, "actual_seq_lengths_key"},
    {"query length -1", query_length_negative, BOTH, LIG_ERR_PARAM_INVALID, "actual_seq_lengths_query"},
    {"softmax_l1_norm over query", out_overlaps_query, BOTH, LIG_ERR_PARAM_INVALID, "softmax_l1_norm"},
};

/* Phase 1 with the arguments as they are. */
static lig_status plan(call_args *a, uint64_t *ws, lig_executor **e) {
    *e = NULL;
    return lig_sparse_flash_mla_softmax_l1_norm_get_workspace_size(
        a->q.t, a->k.t, a->lse.t, a->dense ? NULL : a->idx.t, a->aq.t, a->ak.t, a->res.t, a->scale, a->ratio,
        a->mask_mode, a->layout, a->out.t, a->no_ws_size ? NULL : ws, a->no_executor ? NULL : e);
}

/* Both phases; the status of the first that fails. */
static lig_status call(call_args *a) {
    uint64_t ws = 0;
    lig_executor *e = NULL;
    lig_status st = plan(a, &ws, &e);
    if (st != LIG_SUCCESS) return st;
    void *buf = ws ? malloc((size_t)ws) : NULL;
    st = lig_sparse_flash_mla_softmax_l1_norm(buf, ws, e, NULL);
    free(buf);
    return st;
}

LIG_TEST(l1_norm_errors) {
    for (int dense = 0; dense < 2; dense++) {
        /* the valid call first: the table's failures are the edits' */
        call_args a;
        make_valid(&a, dense);
        CHECK(call(&a) == LIG_SUCCESS, "valid %s call: %s", dense ? "dense" : "sparse", lig_get_last_error());
        free_args(&a);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            if (cases[i].forms == (dense ? SPARSE : DENSE)) continue;
            make_valid(&a, dense);
            cases[i].edit(&a);
            if (a.out.base) tbuf_snapshot(&a.out);
            if (a.q.base) tbuf_snapshot(&a.q);
            uint64_t ws = 0;
            lig_executor *e = NULL;
            const lig_status st = plan(&a, &ws, &e);
            char name[96];
            snprintf(name, sizeof name, "%s (%s)", cases[i].name, dense ? "dense" : "sparse");
            errtest_call_verdict(name, st, cases[i].want, lig_get_last_error(), cases[i].names, e);
            if (a.out.base) CHECK(tbuf_unchanged(&a.out), "%s: softmax_l1_norm was written", name);
            if (a.q.base) CHECK(tbuf_unchanged(&a.q), "%s: query was written", name);
            free_args(&a);
        }
    }
}

/* Phase 2: an index below -1 or past its batch's entries in a valid row fails, naming the lowest
 * (batch, row, slot), before anything is written; the same values in a row past the valid length
 * are not read. */
LIG_TEST(l1_norm_index_errors) {
    const struct { int64_t at, value; const char *where; } bad[] = {
        {5, -2, "[0,1,2]"}, {13, 6, "[1,0,1]"}, {22, 7, "[1,3,1]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        call_args a;
        make_valid(&a, false);
        tbuf_write_int(&a.idx, bad[i].at, bad[i].value);
        tbuf_write_int(&a.idx, 23, -5); /* a later bad slot: the lower one is named */
        tbuf_snapshot(&a.out);
        const lig_status st = call(&a);
        const char *msg = lig_get_last_error();
        CHECK(st == LIG_ERR_PARAM_INVALID && strstr(msg, "sparse_indices") && strstr(msg, bad[i].where),
              "index %lld at %s: status %d (%s)", (long long)bad[i].value, bad[i].where, (int)st, msg);
        CHECK(tbuf_unchanged(&a.out), "index %lld at %s: softmax_l1_norm was written", (long long)bad[i].value, bad[i].where);
        free_args(&a);
    }
    call_args a;
    make_valid(&a, false);
    tbuf_write_int(&a.aq, 1, 2); /* batch 1 keeps rows 0, 1: rows 2, 3 are not read */
    tbuf_write_int(&a.idx, 20, -9);
    tbuf_write_int(&a.idx, 23, 99);
    CHECK(call(&a) == LIG_SUCCESS, "bad indices in rows past the valid length: %s", lig_get_last_error());
    for (int64_t i = 18; i < 24; i++) CHECK(tbuf_read(&a.out, i) == 0.0, "row past the valid length: element %lld not 0", (long long)i);
    free_args(&a);
}

/* Phase 2 refuses, by name and with nothing written, a workspace one byte short and an executor run
 * by another operator's phase 2. */
LIG_TEST(l1_norm_phase2_errors) {
    for (int foreign = 0; foreign < 2; foreign++) {
        call_args a;
        make_valid(&a, true);
        uint64_t ws = 0;
        lig_executor *e = NULL;
        if (CHECK(plan(&a, &ws, &e) == LIG_SUCCESS && ws > 0, "plan (a workspace expected): %s", lig_get_last_error())) {
            tbuf_snapshot(&a.out);
            const lig_status st = foreign ? lig_kl_loss_and_dy(NULL, ws, e, NULL)
                                          : lig_sparse_flash_mla_softmax_l1_norm(NULL, ws - 1, e, NULL);
            const char *names = foreign ? "lig_sparse_flash_mla_softmax_l1_norm_get_workspace_size" : "workspace_size";
            CHECK(st == LIG_ERR_PARAM_INVALID && strstr(lig_get_last_error(), names), "%s: %d %s",
                  foreign ? "foreign executor" : "short workspace", (int)st, lig_get_last_error());
            CHECK(tbuf_unchanged(&a.out), "phase 2 refused: softmax_l1_norm was written");
        }
        free_args(&a);
    }
}

/* CUDA tensors: refused by name in phase 1 (the CUDA slot is NULL), or the device refused in a
 * build without CUDA. The lengths stay on the host. */
LIG_TEST(devices_l1_norm_refused_on_cuda) {
    call_args a;
    make_valid(&a, false);
    tbuf *on_device[] = {&a.q, &a.k, &a.lse, &a.idx, &a.out};
    for (size_t i = 0; i < sizeof on_device / sizeof on_device[0]; i++) {
        tbuf *b = on_device[i];
        lig_destroy_tensor(b->t);
        b->t = lig_create_tensor_on(b->base, b->dtype, b->ndim, b->shape, NULL, LIG_DEVICE_CUDA, 0);
    }
    tbuf_snapshot(&a.out);
    uint64_t ws = 0;
    lig_executor *e = NULL;
    const lig_status st = plan(&a, &ws, &e);
    errtest_refused_on_cuda("lig_sparse_flash_mla_softmax_l1_norm", st, e);
    CHECK(tbuf_unchanged(&a.out), "CUDA tensors: softmax_l1_norm was written");
    free_args(&a);
}

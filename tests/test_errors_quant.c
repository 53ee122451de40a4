/* The quantized forward's failures (contract 6.3), table-driven as harness/error_cases.h's: a
 * valid base problem, one thing broken, the status, a message that names the parameter and says
 * what was expected and what was received, no executor, and every byte of every tensor unchanged. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error_cases.h"
#include "framework.h"
#include "lig.h"
#include "quant_case.h"
#include "rng.h"

typedef enum qe_base { QE_BSND = 0, QE_TND, QE_PAGED } qe_base;

typedef struct qe_case {
    const char *name;
    qe_base base;
    void (*edit)(qcall *call, const qcase *c);
    int phase; /* 1, or 2: phase 1 succeeds and phase 2 must fail */
    lig_status want;
    const char *names;
} qe_case;

/* A tensor of `dtype` and shape over fresh zeroed memory the call keeps alive. */
static void *g_mem[16];
static int g_nmem;
static lig_tensor *fresh(qcall *call, lig_dtype dtype, int64_t ndim, const int64_t *shape)
{
    size_t n = 1;
    for (int64_t i = 0; i < ndim; i++) {
        n *= (size_t)(shape[i] > 0 ? shape[i] : 1);
    }
    void *m = calloc(n, 8);
    if (g_nmem < 16) {
        g_mem[g_nmem++] = m;
    }
    return qcall_adopt(call, lig_create_tensor(m, dtype, ndim, shape, NULL));
}

/* the base problem (BSND): B = 2, S1 = 3, S2 = 5, N1 = 4, N2 = 2, D = 8, K = 3; its query is
 * {2, 3, 4, 8}, key {2, 5, 2, 8}, weights and query scale {2, 3, 4}, key scale {2, 5, 2}, outputs OS */
static const int64_t OS[4] = {2, 3, 2, 3};

static void e_null_query(qcall *c, const qcase *q) { (void)q; c->query = NULL; }
static void e_null_key(qcall *c, const qcase *q) { (void)q; c->key = NULL; }
static void e_null_weights(qcall *c, const qcase *q) { (void)q; c->weights = NULL; }
static void e_null_sk(qcall *c, const qcase *q) { (void)q; c->sk = NULL; }
static void e_null_idx(qcall *c, const qcase *q) { (void)q; c->idx = NULL; }
static void e_null_layout_query(qcall *c, const qcase *q) { (void)q; c->layout_query = NULL; }
static void e_null_layout_key(qcall *c, const qcase *q) { (void)q; c->layout_key = NULL; }
static void e_layout_query(qcall *c, const qcase *q) { (void)q; c->layout_query = "bsnd"; }
static void e_layout_key_other(qcall *c, const qcase *q) { (void)q; c->layout_key = "TND"; }
static void e_layout_key_bad(qcall *c, const qcase *q) { (void)q; c->layout_key = "PA_TND"; }
static void e_paged_without_table(qcall *c, const qcase *q) { (void)q; c->layout_key = "PA_BSND"; }
static void e_query_mode(qcall *c, const qcase *q) { (void)q; c->query_quant_mode = 1; }
static void e_key_mode(qcall *c, const qcase *q) { (void)q; c->key_quant_mode = -1; }
static void e_key_heads(qcall *c, const qcase *q)
{
    (void)q;
    const int64_t s[4] = {2, 5, 3, 8}, t[3] = {2, 5, 3};
    c->key = fresh(c, LIG_FLOAT8_E4M3FN, 4, s);
    c->sk = fresh(c, LIG_FLOAT32, 3, t);
}
static void e_count(qcall *c, const qcase *q) { (void)q; c->sparse_count = 0; }
static void e_mode(qcall *c, const qcase *q) { (void)q; c->sparse_mode = 1; }
static void e_pre(qcall *c, const qcase *q) { (void)q; c->pre_tokens = -1; }
static void e_next(qcall *c, const qcase *q) { (void)q; c->next_tokens = -2; }
static void e_val_aliases_sk(qcall *c, const qcase *q)
{
    (void)q;
    c->val = qcall_adopt(c, lig_create_tensor(c->buf[QB_SK], LIG_FLOAT32, 4, OS, NULL));
}
static void e_idx_aliases_sq(qcall *c, const qcase *q)
{
    (void)q;
    c->idx = qcall_adopt(c, lig_create_tensor(c->buf[QB_SQ], LIG_INT32, 4, OS, NULL));
}
static void e_tnd_no_lengths(qcall *c, const qcase *q) { (void)q; c->aq = NULL; }
static void e_paged_no_key_lengths(qcall *c, const qcase *q) { (void)q; c->ak = NULL; }
static void e_paged_sk_shape(qcall *c, const qcase *q)
{
    const int64_t s[3] = {q->num_blocks, q->s.block_size + 1, 2};
    c->sk = fresh(c, LIG_FLOAT32, 3, s);
}
static void e_paged_table_dtype(qcall *c, const qcase *q)
{
    const int64_t s[2] = {2, q->max_blocks};
    c->table = fresh(c, LIG_FLOAT32, 2, s);
}
static void e_paged_table_entry(qcall *c, const qcase *q)
{
    (void)q;
    /* the first block of batch 0 holds keys whenever batch 0 has any; the base gives both batches keys */
    const lig_dtype dt = q->s.idx_dtype;
    if (dt == LIG_INT32) {
        const int32_t v = (int32_t)q->num_blocks;
        memcpy(c->buf[QB_TABLE], &v, sizeof v);
    } else {
        const int64_t v = q->num_blocks;
        memcpy(c->buf[QB_TABLE], &v, sizeof v);
    }
    memcpy(c->snapshot[QB_TABLE], c->buf[QB_TABLE], c->bytes[QB_TABLE]); /* the edit is the input */
}

static const qe_case cases[] = {
    {"query NULL", QE_BSND, e_null_query, 1, LIG_ERR_PARAM_NULLPTR, "query"},
    {"key NULL", QE_BSND, e_null_key, 1, LIG_ERR_PARAM_NULLPTR, "key"},
    {"weights NULL", QE_BSND, e_null_weights, 1, LIG_ERR_PARAM_NULLPTR, "weights"},
    {"key_dequant_scale NULL", QE_BSND, e_null_sk, 1, LIG_ERR_PARAM_NULLPTR, "key_dequant_scale"},
    {"sparse_indices NULL", QE_BSND, e_null_idx, 1, LIG_ERR_PARAM_NULLPTR, "sparse_indices"},
    {"layout_query NULL", QE_BSND, e_null_layout_query, 1, LIG_ERR_PARAM_NULLPTR, "layout_query"},
    {"layout_key NULL", QE_BSND, e_null_layout_key, 1, LIG_ERR_PARAM_NULLPTR, "layout_key"},
    {"layout_query lower case", QE_BSND, e_layout_query, 1, LIG_ERR_PARAM_INVALID, "layout_query"},
    {"layout_key unlike the query's", QE_BSND, e_layout_key_other, 1, LIG_ERR_PARAM_INVALID, "layout_key"},
    {"layout_key unknown", QE_BSND, e_layout_key_bad, 1, LIG_ERR_PARAM_INVALID, "layout_key"},
    {"PA_BSND without a table", QE_BSND, e_paged_without_table, 1, LIG_ERR_PARAM_NULLPTR, "block_table"},
    {"query_quant_mode 1", QE_BSND, e_query_mode, 1, LIG_ERR_PARAM_INVALID, "query_quant_mode"},
    {"key_quant_mode -1", QE_BSND, e_key_mode, 1, LIG_ERR_PARAM_INVALID, "key_quant_mode"},
    {"N2 that does not divide N1", QE_BSND, e_key_heads, 1, LIG_ERR_PARAM_INVALID, "key"},
    {"sparse_count 0", QE_BSND, e_count, 1, LIG_ERR_PARAM_INVALID, "sparse_count"},
    {"sparse_mode 1", QE_BSND, e_mode, 1, LIG_ERR_PARAM_INVALID, "sparse_mode"},
    {"pre_tokens -1", QE_BSND, e_pre, 1, LIG_ERR_PARAM_INVALID, "pre_tokens"},
    {"next_tokens -2", QE_BSND, e_next, 1, LIG_ERR_PARAM_INVALID, "next_tokens"},
    {"sparse_values over key_dequant_scale", QE_BSND, e_val_aliases_sk, 1, LIG_ERR_PARAM_INVALID, "sparse_values"},
    {"sparse_indices over query_dequant_scale", QE_BSND, e_idx_aliases_sq, 1, LIG_ERR_PARAM_INVALID,
     "sparse_indices"},
    {"TND without query lengths", QE_TND, e_tnd_no_lengths, 1, LIG_ERR_PARAM_INVALID, "actual_seq_lengths_query"},
    {"PA_BSND without key lengths", QE_PAGED, e_paged_no_key_lengths, 1, LIG_ERR_PARAM_INVALID,
     "actual_seq_lengths_key"},
    {"PA_BSND key_dequant_scale block_size wrong", QE_PAGED, e_paged_sk_shape, 1, LIG_ERR_PARAM_INVALID,
     "key_dequant_scale"},
    {"PA_BSND block_table FLOAT32", QE_PAGED, e_paged_table_dtype, 1, LIG_ERR_PARAM_INVALID, "block_table"},
    {"PA_BSND block number out of range", QE_PAGED, e_paged_table_entry, 2, LIG_ERR_PARAM_INVALID, "block_table"},
};

/* The BSND base with one tensor replaced by a fresh one of a wrong dtype, shape or rank: phase 1
 * must refuse it with LIG_ERR_PARAM_INVALID, naming `names`. */
typedef struct qe_replace_case {
    const char *name;
    size_t at; /* offsetof(qcall, the tensor replaced) */
    lig_dtype dtype;
    int64_t ndim;
    int64_t shape[4];
    const char *names;
} qe_replace_case;

static const qe_replace_case replace_cases[] = {
    {"query FLOAT16", offsetof(qcall, query), LIG_FLOAT16, 4, {2, 3, 4, 8}, "query"},
    {"query UINT8", offsetof(qcall, query), LIG_UINT8, 4, {2, 3, 4, 8}, "query"},
    {"key INT8 with an FP8 query", offsetof(qcall, key), LIG_INT8, 4, {2, 5, 2, 8}, "key"},
    {"weights INT8", offsetof(qcall, weights), LIG_INT8, 3, {2, 3, 4}, "weights"},
    {"weights FLOAT8_E4M3FN", offsetof(qcall, weights), LIG_FLOAT8_E4M3FN, 3, {2, 3, 4}, "weights"},
    {"key_dequant_scale BFLOAT16", offsetof(qcall, sk), LIG_BFLOAT16, 3, {2, 5, 2}, "key_dequant_scale"},
    {"query_dequant_scale INT32", offsetof(qcall, sq), LIG_INT32, 3, {2, 3, 4}, "query_dequant_scale"},
    {"sparse_values FLOAT8_E4M3FN", offsetof(qcall, val), LIG_FLOAT8_E4M3FN, 4, {2, 3, 2, 3}, "sparse_values"},
    {"sparse_indices FLOAT32", offsetof(qcall, idx), LIG_FLOAT32, 4, {2, 3, 2, 3}, "sparse_indices"},
    {"a table without PA_BSND", offsetof(qcall, table), LIG_INT32, 2, {2, 3}, "block_table"},
    {"key_dequant_scale N2 wrong", offsetof(qcall, sk), LIG_FLOAT32, 3, {2, 5, 3}, "key_dequant_scale"},
    {"key_dequant_scale with a D axis", offsetof(qcall, sk), LIG_FLOAT32, 4, {2, 5, 2, 1}, "key_dequant_scale"},
    {"query_dequant_scale N1 wrong", offsetof(qcall, sq), LIG_FLOAT32, 3, {2, 3, 2}, "query_dequant_scale"},
    {"key D unlike the query's", offsetof(qcall, key), LIG_FLOAT8_E4M3FN, 4, {2, 5, 2, 7}, "key"},
    {"weights N1 wrong", offsetof(qcall, weights), LIG_FLOAT32, 3, {2, 3, 5}, "weights"},
    {"sparse_indices K unlike sparse_count", offsetof(qcall, idx), LIG_INT32, 4, {2, 3, 2, 4}, "sparse_indices"},
};

static void base_case(qe_base base, qcase *c)
{
    for (uint64_t seed = 0xe55u;; seed++) {
    th_rng r = th_rng_make(seed);
    qspec s;
    qspec_default(&s);
    s.B = 2;
    qspec_dims(&s, 3, 5, 2, 2, 8, 3);
    s.layout = base == QE_TND ? REF_TND : REF_BSND;
    s.paged = base == QE_PAGED;
    s.block_size = 2;
    qcase_make(&r, &s, c);
    if (!s.paged || c->lk[0] > 0) {
        return;
    }
    qcase_free(c); /* paged: batch 0 must have keys, so that its first table entry is read */
    }
}

/* Runs case e (sc: e's edit is sc's replacement instead); returns 1 when a check failed. */
static int run_case(const qe_case *e, const qe_replace_case *sc)
{
    const int before = th_current_failures();
    qcase c;
    base_case(e->base, &c);
    qcall call;
    qcall_make(&c, &call);
    g_nmem = 0;
    if (sc != NULL) {
        *(lig_tensor **)((char *)&call + sc->at) = fresh(&call, sc->dtype, sc->ndim, sc->shape);
    } else {
        e->edit(&call, &c);
    }
    uint64_t ws = 0;
    lig_executor *exec = NULL;
    lig_status st = qcall_phase1(&call, &ws, &exec);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", lig_get_last_error());
    if (e->phase == 2) {
        if (CHECK(st == LIG_SUCCESS, "%s: phase 1 must succeed, got %d: %s", e->name, (int)st, msg)) {
            void *mem = ws ? malloc((size_t)ws) : NULL;
            st = lig_quant_indexer(mem, ws, exec, NULL);
            snprintf(msg, sizeof msg, "%s", lig_get_last_error());
            free(mem);
            exec = NULL; /* consumed */
        }
    }
    errtest_call_verdict(e->name, st, e->want, msg, e->names, exec);
    CHECK(qcall_unchanged(&call), "%s: a byte changed", e->name);
    qcall_free(&call);
    for (int m = 0; m < g_nmem; m++) {
        free(g_mem[m]);
    }
    qcase_free(&c);
    if (th_current_failures() != before) {
        th_note("failed case: %s", e->name);
        return 1;
    }
    return 0;
}

LIG_TEST(errors_quant_table)
{
    int failures = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        failures += run_case(&cases[i], NULL);
    }
    for (size_t i = 0; i < sizeof replace_cases / sizeof replace_cases[0]; i++) {
        const qe_replace_case *sc = &replace_cases[i];
        const qe_case e = {sc->name, QE_BSND, NULL, 1, LIG_ERR_PARAM_INVALID, sc->names};
        failures += run_case(&e, sc);
    }
    th_note("%zu error cases, %d failed", sizeof cases / sizeof cases[0] + sizeof replace_cases / sizeof replace_cases[0],
            failures);
}

/* Phase 2 checks: an executor of the quantized forward is not the plain forward's (and the other
 * way round), a short workspace, a stream on the CPU. */
LIG_TEST(errors_quant_phase2)
{
    qcase c;
    base_case(QE_BSND, &c);
    for (int v = 0; v < 4; v++) {
        qcall call;
        qcall_make(&c, &call);
        uint64_t ws = 0;
        lig_executor *exec = NULL;
        REQUIRE(qcall_phase1(&call, &ws, &exec) == LIG_SUCCESS, "base phase 1: %s", lig_get_last_error());
        CHECK(strlen(lig_executor_kernel_set(exec)) > 0, "the plan names its kernels");
        void *mem = malloc((size_t)ws + 1);
        lig_status st;
        const char *names;
        int dummy_stream;
        switch (v) {
        case 0: st = lig_indexer(mem, ws, exec, NULL); names = "executor"; break;
        case 1: st = lig_quant_indexer(mem, ws ? ws - 1 : 0, exec, NULL); names = "workspace_size|workspace"; break;
        case 2: st = lig_quant_indexer(mem, ws, exec, &dummy_stream); names = "stream"; break;
        default: st = lig_quant_indexer(NULL, ws, NULL, NULL); names = "executor"; lig_destroy_executor(exec); break;
        }
        const char *msg = lig_get_last_error();
        if (v == 1 && !CHECK(ws > 0, "phase 2 case 1 cannot run: the base problem needs no workspace, so it "
                                     "cannot be given a short one (the case needs a problem that needs one)")) {
            CHECK(st == LIG_SUCCESS, "an empty workspace cannot be short");
        } else {
            CHECK(st == (v == 3 ? LIG_ERR_PARAM_NULLPTR : LIG_ERR_PARAM_INVALID), "phase 2 case %d: status %d (%s)", v,
                  (int)st, msg);
            check_error_message("phase 2", msg, names);
        }
        CHECK(qcall_unchanged(&call), "phase 2 case %d: a byte changed", v);
        free(mem);
        qcall_free(&call);
    }
    /* a plain forward's executor run as the quantized one */
    {
        float q[8] = {0}, k[8] = {0}, w[1] = {1};
        int32_t idx[1];
        const int64_t qs[4] = {1, 1, 1, 8}, ws3[3] = {1, 1, 1}, os[3] = {1, 1, 1};
        lig_tensor *tq = lig_create_tensor(q, LIG_FLOAT32, 4, qs, NULL), *tk = lig_create_tensor(k, LIG_FLOAT32, 4, qs, NULL);
        lig_tensor *tw = lig_create_tensor(w, LIG_FLOAT32, 3, ws3, NULL), *ti = lig_create_tensor(idx, LIG_INT32, 3, os, NULL);
        uint64_t ws = 0;
        lig_executor *e = NULL;
        REQUIRE(lig_indexer_get_workspace_size(tq, tk, tw, NULL, NULL, "BSND", 1, 3, INT64_MAX, INT64_MAX, ti, NULL, &ws,
                                               &e) == LIG_SUCCESS, "plain phase 1: %s", lig_get_last_error());
        void *mem = malloc((size_t)ws + 1);
        const lig_status st = lig_quant_indexer(mem, ws, e, NULL);
        CHECK(st == LIG_ERR_PARAM_INVALID, "a plain executor in lig_quant_indexer: status %d", (int)st);
        check_error_message("plain executor", lig_get_last_error(), "executor");
        free(mem);
        lig_destroy_tensor(tq);
        lig_destroy_tensor(tk);
        lig_destroy_tensor(tw);
        lig_destroy_tensor(ti);
    }
    qcase_free(&c);
}

/* CUDA tensors: refused by name, whether the build has no CUDA backend or the CUDA backend has no
 * quantized forward (contract 2.4); phase 1 touches no device memory either way. */
LIG_TEST(errors_quant_cuda_refused)
{
    static unsigned char mem[4096]; /* never dereferenced as device memory: phase 1 reads no tensor data */
    const int64_t qs[4] = {1, 2, 4, 8}, ks[4] = {1, 3, 1, 8}, ws[3] = {1, 2, 4}, sks[3] = {1, 3, 1}, os[4] = {1, 2, 1, 2};
    lig_tensor *q = lig_create_tensor_on(mem, LIG_FLOAT8_E4M3FN, 4, qs, NULL, LIG_DEVICE_CUDA, 0);
    lig_tensor *k = lig_create_tensor_on(mem + 512, LIG_FLOAT8_E4M3FN, 4, ks, NULL, LIG_DEVICE_CUDA, 0);
    lig_tensor *w = lig_create_tensor_on(mem + 1024, LIG_FLOAT32, 3, ws, NULL, LIG_DEVICE_CUDA, 0);
    lig_tensor *sk = lig_create_tensor_on(mem + 1536, LIG_FLOAT32, 3, sks, NULL, LIG_DEVICE_CUDA, 0);
    lig_tensor *idx = lig_create_tensor_on(mem + 2048, LIG_INT32, 4, os, NULL, LIG_DEVICE_CUDA, 0);
    REQUIRE(q && k && w && sk && idx, "CUDA descriptors: %s", lig_get_last_error());
    uint64_t size = 0;
    lig_executor *e = NULL;
    const lig_status st = lig_quant_indexer_get_workspace_size(q, k, w, NULL, sk, NULL, NULL, NULL, 0, 0, "BSND", "BSND",
                                                               2, 3, INT64_MAX, INT64_MAX, idx, NULL, &size, &e);
    CHECK(st == LIG_ERR_PARAM_INVALID, "CUDA tensors: status %d (%s)", (int)st, lig_get_last_error());
    check_error_message("CUDA tensors", lig_get_last_error(), "query");
    th_note("%s", lig_get_last_error());
    CHECK(e == NULL, "no executor");
    lig_destroy_tensor(q);
    lig_destroy_tensor(k);
    lig_destroy_tensor(w);
    lig_destroy_tensor(sk);
    lig_destroy_tensor(idx);
}

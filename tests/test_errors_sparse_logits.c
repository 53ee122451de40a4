/* The sparse logits' failures (contracts 2.8 and 6.3): a valid base case (logits_case.h and a block
 * list), one argument broken, the status, a message that starts with the parameter's name and says
 * what was expected and what was received, no executor, and every byte of every input and output
 * unchanged; phase 2's block-table check over the chosen blocks before anything is written; the
 * executors of lig_quant_logits and lig_sparse_logits refused by each other's phase 2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error_cases.h"
#include "framework.h"
#include "lig.h"
#include "logits_case.h"
#include "quant_case.h"
#include "rng.h"
#include "tensor_buffers.h"

enum { SE_BK = 4, SE_M = 3 };

/* A base case with its block list and output: FP8, B = 2, S1 = 3, N2 = 2, G = 4, D = 16, every
 * row's range its batch's keys (BSND S2 = 20, or a paged cache of blocks of 4), each row choosing
 * its first blocks. */
typedef struct sbase {
    lcase L;
    int64_t ids[2 * 3 * SE_M];
    lig_tensor *idt, *out;
    float *obuf;
    size_t obytes;
    unsigned char *osnap;
} sbase;

static void base_make(sbase *s, int paged) {
    for (uint64_t seed = 0x5e77u + (uint64_t)paged;; seed += 16) {
        th_rng r = th_rng_make(seed);
        lspec sp;
        lspec_default(&sp);
        sp.q.paged = paged;
        qspec_dims(&sp.q, 3, 20, 2, 4, 16, 3);
        sp.q.B = 2;
        sp.full = 1;
        sp.with_topk = 0;
        lcase_make(&r, &sp, &s->L);
        int enough = 1; /* every batch holds two cache blocks of keys */
        for (int64_t b = 0; b < 2; b++) enough &= s->L.c.lk[b] >= 2 * sp.q.block_size && s->L.ke[b * 3] >= 2 * SE_BK;
        if (enough) break;
        lcase_free(&s->L);
    }
    for (int64_t r = 0; r < 6; r++)
        for (int64_t j = 0; j < SE_M; j++) s->ids[r * SE_M + j] = s->L.ks[r] / SE_BK + j;
    const int64_t ishape[3] = {2, 3, SE_M}, oshape[4] = {2, 3, 2, SE_M * SE_BK};
    s->idt = lig_create_tensor(s->ids, LIG_INT64, 3, ishape, NULL);
    s->obytes = sizeof(float) * 2 * 3 * 2 * SE_M * SE_BK;
    s->obuf = malloc(s->obytes);
    memset(s->obuf, 0x5a, s->obytes);
    s->osnap = malloc(s->obytes);
    memcpy(s->osnap, s->obuf, s->obytes);
    s->out = lig_create_tensor(s->obuf, LIG_FLOAT32, 4, oshape, NULL);
}

static void base_free(sbase *s) {
    lig_destroy_tensor(s->idt);
    lig_destroy_tensor(s->out);
    free(s->obuf);
    free(s->osnap);
    lcase_free(&s->L);
}

/* Every argument of phase 1, as a case may edit it. */
typedef struct sargs {
    const lig_tensor *query, *key, *weights, *sq, *sk, *table, *ks, *ke;
    const char *layout_query, *layout_key;
    const lig_tensor *ids;
    int64_t bk;
    bool unaligned;
    const lig_tensor *out;
} sargs;

static sargs base_args(const sbase *s) {
    const qcall *k = &s->L.call;
    return (sargs){k->query, k->key, k->weights, k->sq, k->sk, k->table, s->L.key_start, s->L.key_end,
                   k->layout_query, k->layout_key, s->idt, SE_BK, false, s->out};
}

static lig_status phase1(const sargs *a, uint64_t *ws, lig_executor **exec) {
    return lig_sparse_logits_get_workspace_size(a->query, a->key, a->weights, a->sq, a->sk, a->table, a->ks, a->ke,
                                                a->layout_query, a->layout_key, a->ids, a->bk, a->unaligned, a->out, ws,
                                                exec);
}

/* Tensors a case made (destroyed after it). */
typedef struct made {
    lig_tensor *t[4];
    void *m[4];
    int n;
} made;

static lig_tensor *keep(made *mk, void *mem, lig_tensor *t) {
    mk->t[mk->n] = t;
    mk->m[mk->n++] = mem;
    return t;
}

/* The base's ids with entry (row 1, slot j) replaced by v. */
static void ids_with(sargs *a, sbase *s, made *mk, int64_t j, int64_t v) {
    int64_t *m = malloc(sizeof s->ids);
    memcpy(m, s->ids, sizeof s->ids);
    m[SE_M + j] = v;
    const int64_t shape[3] = {2, 3, SE_M};
    a->ids = keep(mk, m, lig_create_tensor(m, LIG_INT64, 3, shape, NULL));
}

static void e_ids_null(sargs *a, sbase *s, made *mk) { (void)s, (void)mk, a->ids = NULL; }
static void e_out_null(sargs *a, sbase *s, made *mk) { (void)s, (void)mk, a->out = NULL; }
static void e_bk_zero(sargs *a, sbase *s, made *mk) { (void)s, (void)mk, a->bk = 0; }
static void e_ids_float(sargs *a, sbase *s, made *mk) {
    (void)s;
    const int64_t shape[3] = {2, 3, SE_M};
    void *m = calloc(2 * 3 * SE_M, 4);
    a->ids = keep(mk, m, lig_create_tensor(m, LIG_FLOAT32, 3, shape, NULL));
}
static void e_ids_rows(sargs *a, sbase *s, made *mk) {
    (void)s;
    const int64_t shape[3] = {2, 4, SE_M};
    void *m = calloc(2 * 4 * SE_M, 8);
    a->ids = keep(mk, m, lig_create_tensor(m, LIG_INT64, 3, shape, NULL));
}
static void out_shaped(sargs *a, made *mk, lig_dtype dt, int64_t cols) {
    const int64_t shape[4] = {2, 3, 2, cols};
    void *m = calloc((size_t)(2 * 3 * 2 * cols + 1), 4);
    a->out = keep(mk, m, lig_create_tensor(m, dt, 4, shape, NULL));
}
static void e_out_int(sargs *a, sbase *s, made *mk) { (void)s, out_shaped(a, mk, LIG_INT32, SE_M * SE_BK); }
static void e_out_cols(sargs *a, sbase *s, made *mk) { (void)s, out_shaped(a, mk, LIG_FLOAT32, SE_M * SE_BK + 1); }
static void e_out_over_key(sargs *a, sbase *s, made *mk) {
    const int64_t shape[4] = {2, 3, 2, SE_M * SE_BK};
    a->out = keep(mk, NULL, lig_create_tensor(s->L.call.buf[QB_K], LIG_FLOAT32, 4, shape, NULL));
}
static void e_id_past(sargs *a, sbase *s, made *mk) { ids_with(a, s, mk, 0, 1000); }
static void e_id_negative(sargs *a, sbase *s, made *mk) { ids_with(a, s, mk, 1, -1); }
static void e_id_repeated(sargs *a, sbase *s, made *mk) { ids_with(a, s, mk, 1, s->ids[SE_M]); }
static void e_ids_on_cuda(sargs *a, sbase *s, made *mk) {
    const int64_t shape[3] = {2, 3, SE_M};
    a->ids = keep(mk, NULL, lig_create_tensor_on(s->ids, LIG_INT64, 3, shape, NULL, LIG_DEVICE_CUDA, 0));
}
/* e8m0 block scales with FP8 codes: DeepGEMM's MXFP8, refused by name */
static void e_mxfp8(sargs *a, sbase *s, made *mk) {
    const int64_t shape[3] = {s->L.c.p.B, s->L.c.p.S2, s->L.c.p.N2};
    void *m = calloc((size_t)(shape[0] * shape[1] * shape[2] + 1), 4);
    a->sk = keep(mk, m, lig_create_tensor(m, LIG_INT32, 3, shape, NULL));
}

typedef struct se_case {
    const char *name;
    int paged;
    void (*edit)(sargs *a, sbase *s, made *mk);
    lig_status want;
    const char *first;
} se_case;

static const se_case cases[] = {
    {"sparse_kv_block_indices NULL", 0, e_ids_null, LIG_ERR_PARAM_NULLPTR, "sparse_kv_block_indices"},
    {"sparse_logits NULL", 1, e_out_null, LIG_ERR_PARAM_NULLPTR, "sparse_logits"},
    {"sparse_block_kv 0", 0, e_bk_zero, LIG_ERR_PARAM_INVALID, "sparse_block_kv"},
    {"block ids FLOAT32", 0, e_ids_float, LIG_ERR_PARAM_INVALID, "sparse_kv_block_indices"},
    {"block ids rows", 1, e_ids_rows, LIG_ERR_PARAM_INVALID, "sparse_kv_block_indices"},
    {"sparse_logits INT32", 0, e_out_int, LIG_ERR_PARAM_INVALID, "sparse_logits"},
    {"sparse_logits columns", 1, e_out_cols, LIG_ERR_PARAM_INVALID, "sparse_logits"},
    {"sparse_logits over the keys", 0, e_out_over_key, LIG_ERR_PARAM_INVALID, "sparse_logits"},
    {"a block id past the range", 0, e_id_past, LIG_ERR_PARAM_INVALID, "sparse_kv_block_indices"},
    {"a block id -1 among the counted", 1, e_id_negative, LIG_ERR_PARAM_INVALID, "sparse_kv_block_indices"},
    {"a block id repeated", 0, e_id_repeated, LIG_ERR_PARAM_INVALID, "sparse_kv_block_indices"},
    {"block ids on a device", 0, e_ids_on_cuda, LIG_ERR_PARAM_INVALID, "sparse_kv_block_indices"},
    {"MXFP8 scales", 0, e_mxfp8, LIG_ERR_PARAM_INVALID, "key_dequant_scale"},
};

static int outputs_unchanged(const sbase *s) { return memcmp(s->obuf, s->osnap, s->obytes) == 0; }

LIG_TEST(errors_sparse_logits_phase1) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const se_case *e = &cases[i];
        sbase s;
        base_make(&s, e->paged);
        sargs a = base_args(&s);
        made mk = {0};
        e->edit(&a, &s, &mk);
        uint64_t ws = 0;
        lig_executor *exec = NULL;
        const lig_status st = phase1(&a, &ws, &exec);
        errtest_named_verdict(e->name, st, e->want, e->first, exec);
        CHECK(lcase_inputs_unchanged(&s.L) && outputs_unchanged(&s), "%s: a byte changed", e->name);
        for (int j = 0; j < mk.n; j++) {
            lig_destroy_tensor(mk.t[j]);
            free(mk.m[j]);
        }
        base_free(&s);
    }
    th_note("%zu error cases", sizeof cases / sizeof cases[0]);
}

/* Phase 2: a bad table entry in a chosen block fails before anything is written; the same entry
 * in a block no row chose is never read; each operator's phase 2 refuses the other's executors. */
LIG_TEST(errors_sparse_logits_phase2) {
    sbase s;
    base_make(&s, 1);
    const int64_t mb = s.L.c.max_blocks, bs = s.L.c.s.block_size;
    void *table = s.L.call.buf[QB_TABLE];
    const lig_dtype tdt = s.L.c.s.idx_dtype;
    /* batch 1's rows choose keys 0 .. SE_M * SE_BK - 1: the cache block of key 0 broken */
    const int64_t old = th_load_int(table, tdt, mb);
    th_store_int(table, tdt, mb, s.L.c.num_blocks);
    sargs a = base_args(&s);
    uint64_t ws = 0;
    lig_executor *exec = NULL;
    REQUIRE(phase1(&a, &ws, &exec) == LIG_SUCCESS, "phase 1: %s", lig_get_last_error());
    void *mem = malloc((size_t)ws + 1);
    lig_status st = lig_sparse_logits(mem, ws, exec, NULL);
    CHECK(st == LIG_ERR_PARAM_INVALID, "a bad chosen block: status %d", (int)st);
    check_error_message("bad table entry", lig_get_last_error(), "block_table");
    CHECK(outputs_unchanged(&s), "a bad table entry: an output was written");
    /* the last block of batch 1's keys holds a key past every chosen block (SE_M * SE_BK < 2 * bs) */
    th_store_int(table, tdt, mb, old);
    const int64_t last = (s.L.c.lk[1] - 1) / bs;
    REQUIRE(last * bs >= SE_M * SE_BK, "the base case's batch 1 holds %lld keys", (long long)s.L.c.lk[1]);
    const int64_t old_last = th_load_int(table, tdt, mb + last);
    th_store_int(table, tdt, mb + last, -7);
    exec = NULL;
    REQUIRE(phase1(&a, &ws, &exec) == LIG_SUCCESS, "phase 1: %s", lig_get_last_error());
    mem = realloc(mem, (size_t)ws + 1);
    st = lig_sparse_logits(mem, ws, exec, NULL);
    CHECK(st == LIG_SUCCESS, "an unread bad entry: status %d (%s)", (int)st, lig_get_last_error());
    th_store_int(table, tdt, mb + last, old_last);
    /* each other's executors */
    memcpy(s.obuf, s.osnap, s.obytes);
    exec = NULL;
    REQUIRE(phase1(&a, &ws, &exec) == LIG_SUCCESS, "phase 1: %s", lig_get_last_error());
    mem = realloc(mem, (size_t)ws + 1);
    st = lig_quant_logits(mem, ws, exec, NULL);
    CHECK(st == LIG_ERR_PARAM_INVALID, "a sparse executor in lig_quant_logits: status %d", (int)st);
    check_error_message("sparse executor", lig_get_last_error(), "executor");
    CHECK(outputs_unchanged(&s), "a refused executor: an output was written");
    exec = NULL;
    REQUIRE(lcase_phase1(&s.L, NULL, &ws, &exec) == LIG_SUCCESS, "lig_quant_logits phase 1: %s", lig_get_last_error());
    mem = realloc(mem, (size_t)ws + 1);
    st = lig_sparse_logits(mem, ws, exec, NULL);
    CHECK(st == LIG_ERR_PARAM_INVALID, "a logits executor in lig_sparse_logits: status %d", (int)st);
    check_error_message("logits executor", lig_get_last_error(), "executor");
    free(mem);
    base_free(&s);
}

/* The logits operator's failures (contracts 2.6 and 6.3): a valid base case (logits_case.h), one
 * argument broken, the status, a message that starts with the parameter's name and says what was
 * expected and what was received, no executor, and every byte of every input and output unchanged;
 * phase 2's block-table check before anything is written; executors of the other operators
 * refused; lig_quant_logits_schedule's own arguments. */
#include <math.h>
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

typedef enum le_base { LE_BSND = 0, LE_TND, LE_PAGED } le_base;

/* Every argument of phase 1, as a case may edit it. */
typedef struct largs {
    const lig_tensor *query, *key, *weights, *sq, *sk, *table, *ks, *ke;
    const char *layout_query, *layout_key;
    bool clean, compressed;
    const lig_tensor *logits;
    int64_t K;
    const lig_tensor *idx, *val, *schedule;
} largs;

/* Tensors a case made, over memory it filled (destroyed after the case). */
typedef struct made {
    lig_tensor *t[8];
    void *m[8];
    int n;
} made;

static lig_tensor *keep(made *mk, void *mem, lig_tensor *t)
{
    mk->t[mk->n] = t;
    mk->m[mk->n++] = mem;
    return t;
}

/* An index tensor of `dtype` and shape holding v[0 ..) (or zeros when v is NULL). */
static lig_tensor *ints(made *mk, lig_dtype dtype, int64_t ndim, const int64_t *shape, const int64_t *v)
{
    int64_t n = 1;
    for (int64_t i = 0; i < ndim; i++) {
        n *= shape[i];
    }
    void *mem = calloc((size_t)(n + 1), 8);
    for (int64_t i = 0; v && i < n; i++) {
        th_store_int(mem, dtype, i, v[i]);
    }
    return keep(mk, mem, lig_create_tensor(mem, dtype, ndim, shape, NULL));
}

/* The base case: B = 2, S1 = 3, N2 = 2, G = 4, D = 16, every row's range [0, its keys) (at least
 * one longer than one key), keys S2 = 20 (BSND), one sequence (TND), a paged cache of blocks of 4. */
static void base_case(le_base base, lcase *L)
{
    for (uint64_t seed = 0xe770u + (uint64_t)base;; seed += 16) {
        th_rng r = th_rng_make(seed);
        lspec s;
        lspec_default(&s);
        s.q.layout = base == LE_TND ? REF_TND : REF_BSND;
        s.q.paged = base == LE_PAGED;
        qspec_dims(&s.q, 3, 20, 2, 4, 16, 3);
        s.q.B = 2;
        s.full = 1;
        lcase_make(&r, &s, L);
        /* every batch (TND: the sequence) holds two blocks of keys and a row: the cases below reach
         * a scored block and a range longer than one key */
        int enough = 1;
        for (int64_t b = 0; b < L->c.p.B; b++) {
            enough &= L->c.lk[b] >= 2 * s.q.block_size && (base != LE_TND || L->c.seq_q[0] >= 2);
        }
        if (enough) {
            return;
        }
        lcase_free(L);
    }
}

static largs base_args(const lcase *L)
{
    const qcall *k = &L->call;
    return (largs){k->query, k->key, k->weights, k->sq, k->sk, k->table, L->key_start, L->key_end, k->layout_query,
                   k->layout_key, true, false, L->logits, k->sparse_count, k->idx, k->val, NULL};
}

static lig_status phase1(const largs *a, uint64_t *ws, lig_executor **exec)
{
    return lig_quant_logits_get_workspace_size(a->query, a->key, a->weights, a->sq, a->sk, a->table, a->ks, a->ke,
                                               a->layout_query, a->layout_key, a->clean, a->compressed, a->logits, a->K,
                                               a->idx, a->val, a->schedule, ws, exec);
}

typedef struct le_case {
    const char *name;
    le_base base;
    void (*edit)(largs *a, lcase *L, made *mk);
    lig_status want;
    const char *first; /* the parameter the message starts with */
} le_case;

static int64_t rows_of(const lcase *L) { return L->rows; }

/* key_start / key_end over the base's rows with row 1's value replaced by v. */
static lig_tensor *ranges_with(lcase *L, made *mk, const int64_t *base, int64_t v)
{
    int64_t *vals = malloc(sizeof(int64_t) * (size_t)rows_of(L));
    memcpy(vals, base, sizeof(int64_t) * (size_t)rows_of(L));
    vals[1] = v;
    const int64_t shape[2] = {L->c.p.B, L->c.p.S1};
    lig_tensor *t = L->c.p.layout == REF_TND ? ints(mk, LIG_INT64, 1, shape + 1, vals) : ints(mk, LIG_INT64, 2, shape, vals);
    free(vals);
    return t;
}

static void e_null_key_end(largs *a, lcase *L, made *mk) { (void)L; (void)mk; a->ke = NULL; }
static void e_no_outputs(largs *a, lcase *L, made *mk) { (void)L; (void)mk; a->logits = a->idx = a->val = NULL; }
static void e_values_alone(largs *a, lcase *L, made *mk) { (void)L; (void)mk; a->idx = NULL; }
static void e_null_query(largs *a, lcase *L, made *mk) { (void)L; (void)mk; a->query = NULL; }
static void e_null_sk(largs *a, lcase *L, made *mk) { (void)L; (void)mk; a->sk = NULL; }
static void e_null_layout(largs *a, lcase *L, made *mk) { (void)L; (void)mk; a->layout_key = NULL; }
static void e_layout_key(largs *a, lcase *L, made *mk) { (void)L; (void)mk; a->layout_key = "TND"; }
static void e_paged_no_table(largs *a, lcase *L, made *mk) { (void)L; (void)mk; a->layout_key = "PA_BSND"; }
static void e_count(largs *a, lcase *L, made *mk) { (void)L; (void)mk; a->K = 0; }
static void logits_shaped(largs *a, lcase *L, made *mk, lig_dtype dt, int64_t rows, int64_t W)
{
    const int64_t shape[4] = {L->c.p.B, rows, L->c.p.N2, W};
    void *mem = calloc((size_t)(L->c.p.B * rows * L->c.p.N2 * W + 1), 4);
    a->logits = keep(mk, mem, lig_create_tensor(mem, dt, 4, shape, NULL));
}
static void e_logits_dtype(largs *a, lcase *L, made *mk) { logits_shaped(a, L, mk, LIG_FLOAT16, L->c.p.S1, L->W); }
static void e_logits_rows(largs *a, lcase *L, made *mk) { logits_shaped(a, L, mk, LIG_FLOAT32, L->c.p.S1 + 1, L->W); }
static void e_logits_columns(largs *a, lcase *L, made *mk) { logits_shaped(a, L, mk, LIG_FLOAT32, L->c.p.S1, L->W - 1); }
static void e_logits_compressed(largs *a, lcase *L, made *mk)
{
    a->compressed = true;
    logits_shaped(a, L, mk, LIG_FLOAT32, L->c.p.S1, 1);
}
static void e_logits_over_key(largs *a, lcase *L, made *mk)
{
    (void)mk;
    const int64_t shape[4] = {L->c.p.B, L->c.p.S1, L->c.p.N2, 1};
    a->logits = keep(mk, NULL, lig_create_tensor(L->call.buf[QB_K], LIG_FLOAT32, 4, shape, NULL));
    a->idx = a->val = NULL;
}
static void e_start_after_end(largs *a, lcase *L, made *mk)
{
    a->ks = ranges_with(L, mk, L->ks, 5);
    a->ke = ranges_with(L, mk, L->ke, 3);
}
static void e_end_past_keys(largs *a, lcase *L, made *mk) { a->ke = ranges_with(L, mk, L->ke, L->c.p.S2 + 1); }
static void e_start_negative(largs *a, lcase *L, made *mk) { a->ks = ranges_with(L, mk, L->ks, -1); }
static void e_end_dtype(largs *a, lcase *L, made *mk)
{
    const int64_t shape[2] = {L->c.p.B, L->c.p.S1};
    void *mem = calloc((size_t)rows_of(L), 4);
    a->ke = keep(mk, mem, lig_create_tensor(mem, LIG_FLOAT32, 2, shape, NULL));
}
static void e_end_shape(largs *a, lcase *L, made *mk) { a->ke = ints(mk, LIG_INT32, 1, &L->c.p.B, NULL); }
static void e_start_shape(largs *a, lcase *L, made *mk)
{
    const int64_t shape[2] = {L->c.p.B, L->c.p.S1 + 1};
    a->ks = ints(mk, LIG_INT64, 2, shape, NULL);
}
static void e_end_on_cuda(largs *a, lcase *L, made *mk)
{
    const int64_t shape[2] = {L->c.p.B, L->c.p.S1};
    a->ke = keep(mk, NULL, lig_create_tensor_on(L->rbuf[1], LIG_INT64, 2, shape, NULL, LIG_DEVICE_CUDA, 0));
}
static void e_table_on_bsnd(largs *a, lcase *L, made *mk)
{
    const int64_t shape[2] = {L->c.p.B, 5};
    a->table = ints(mk, LIG_INT32, 2, shape, NULL);
}
/* schedules: the paged base's, logits only, entries edited */
static void schedule_of(largs *a, lcase *L, made *mk, int64_t W, const int64_t *entries)
{
    const int64_t shape[2] = {W + 1, 2};
    a->schedule = ints(mk, LIG_INT32, 2, shape, entries);
    a->idx = a->val = NULL;
    (void)L;
}
static void e_schedule_not_paged(largs *a, lcase *L, made *mk)
{
    const int64_t e[4] = {0, 0, 2, 0};
    schedule_of(a, L, mk, 1, e);
}
static void e_schedule_with_topk(largs *a, lcase *L, made *mk)
{
    const int64_t e[4] = {0, 0, 2, 0};
    schedule_of(a, L, mk, 1, e);
    a->idx = L->call.idx;
}
static void e_schedule_dtype(largs *a, lcase *L, made *mk)
{
    const int64_t shape[2] = {2, 2}, e[4] = {0, 0, 2, 0};
    a->schedule = ints(mk, LIG_INT64, 2, shape, e);
    a->idx = a->val = NULL;
    (void)L;
}
static void e_schedule_shape(largs *a, lcase *L, made *mk)
{
    const int64_t e[2] = {2, 0};
    schedule_of(a, L, mk, 0, e);
}
static void e_schedule_first(largs *a, lcase *L, made *mk)
{
    const int64_t e[4] = {0, 1, 2, 0};
    schedule_of(a, L, mk, 1, e);
}
static void e_schedule_order(largs *a, lcase *L, made *mk)
{
    const int64_t e[8] = {0, 0, 1, 1, 1, 0, 2, 0};
    schedule_of(a, L, mk, 3, e);
}
static void e_schedule_last(largs *a, lcase *L, made *mk)
{
    const int64_t e[6] = {0, 0, 1, 0, 1, 1};
    schedule_of(a, L, mk, 2, e);
}
static void e_schedule_block(largs *a, lcase *L, made *mk)
{
    const int64_t e[6] = {0, 0, 1, 99, 2, 0};
    schedule_of(a, L, mk, 2, e);
}
static void e_schedule_batch(largs *a, lcase *L, made *mk)
{
    const int64_t e[6] = {0, 0, 3, 0, 2, 0};
    schedule_of(a, L, mk, 2, e);
}

static const le_case cases[] = {
    {"key_end NULL", LE_BSND, e_null_key_end, LIG_ERR_PARAM_NULLPTR, "key_end"},
    {"no output", LE_BSND, e_no_outputs, LIG_ERR_PARAM_NULLPTR, "logits, sparse_indices"},
    {"values without indices", LE_BSND, e_values_alone, LIG_ERR_PARAM_INVALID, "sparse_values"},
    {"query NULL", LE_BSND, e_null_query, LIG_ERR_PARAM_NULLPTR, "query"},
    {"key scale NULL", LE_PAGED, e_null_sk, LIG_ERR_PARAM_NULLPTR, "key_dequant_scale"},
    {"layout_key NULL", LE_TND, e_null_layout, LIG_ERR_PARAM_NULLPTR, "layout_key"},
    {"layout_key unlike the query's", LE_BSND, e_layout_key, LIG_ERR_PARAM_INVALID, "layout_key"},
    {"PA_BSND without a table", LE_BSND, e_paged_no_table, LIG_ERR_PARAM_NULLPTR, "block_table"},
    {"a table without PA_BSND", LE_BSND, e_table_on_bsnd, LIG_ERR_PARAM_INVALID, "block_table"},
    {"sparse_count 0", LE_PAGED, e_count, LIG_ERR_PARAM_INVALID, "sparse_count"},
    {"logits FLOAT16", LE_BSND, e_logits_dtype, LIG_ERR_PARAM_INVALID, "logits"},
    {"logits rows", LE_PAGED, e_logits_rows, LIG_ERR_PARAM_INVALID, "logits"},
    {"logits one column short", LE_BSND, e_logits_columns, LIG_ERR_PARAM_INVALID, "logits"},
    {"compressed logits too narrow", LE_PAGED, e_logits_compressed, LIG_ERR_PARAM_INVALID, "logits"},
    {"logits over the keys", LE_BSND, e_logits_over_key, LIG_ERR_PARAM_INVALID, "logits"},
    {"key_start after key_end", LE_BSND, e_start_after_end, LIG_ERR_PARAM_INVALID, "key_end"},
    {"key_end past the keys", LE_BSND, e_end_past_keys, LIG_ERR_PARAM_INVALID, "key_end"},
    {"key_end past the cache", LE_PAGED, e_end_past_keys, LIG_ERR_PARAM_INVALID, "key_end"},
    {"key_end past T2", LE_TND, e_end_past_keys, LIG_ERR_PARAM_INVALID, "key_end"},
    {"key_start negative", LE_PAGED, e_start_negative, LIG_ERR_PARAM_INVALID, "key_start"},
    {"key_end FLOAT32", LE_BSND, e_end_dtype, LIG_ERR_PARAM_INVALID, "key_end"},
    {"key_end shape", LE_BSND, e_end_shape, LIG_ERR_PARAM_INVALID, "key_end"},
    {"key_end shape TND", LE_TND, e_end_shape, LIG_ERR_PARAM_INVALID, "key_end"},
    {"key_start shape", LE_BSND, e_start_shape, LIG_ERR_PARAM_INVALID, "key_start"},
    {"key_end on a device", LE_BSND, e_end_on_cuda, LIG_ERR_PARAM_INVALID, "key_end"},
    {"schedule without a paged cache", LE_BSND, e_schedule_not_paged, LIG_ERR_PARAM_INVALID, "schedule"},
    {"schedule with the top-k", LE_PAGED, e_schedule_with_topk, LIG_ERR_PARAM_INVALID, "schedule"},
    {"schedule INT64", LE_PAGED, e_schedule_dtype, LIG_ERR_PARAM_INVALID, "schedule"},
    {"schedule of no worker", LE_PAGED, e_schedule_shape, LIG_ERR_PARAM_INVALID, "schedule"},
    {"schedule not from the first block", LE_PAGED, e_schedule_first, LIG_ERR_PARAM_INVALID, "schedule"},
    {"schedule out of order", LE_PAGED, e_schedule_order, LIG_ERR_PARAM_INVALID, "schedule"},
    {"schedule not ending at (B, 0)", LE_PAGED, e_schedule_last, LIG_ERR_PARAM_INVALID, "schedule"},
    {"schedule block past its batch", LE_PAGED, e_schedule_block, LIG_ERR_PARAM_INVALID, "schedule"},
    {"schedule batch past B", LE_PAGED, e_schedule_batch, LIG_ERR_PARAM_INVALID, "schedule"},
};

/* The message starts with the parameter it names, as "first: ...". */
static void expect_message_start(const char *label, const char *msg, const char *first)
{
    const size_t n = strlen(first);
    CHECK(strncmp(msg, first, n) == 0 && msg[n] == ':', "%s: message does not start with \"%s:\": \"%s\"", label, first,
          msg);
}

static void expect_message(const char *label, const char *msg, const char *first)
{
    check_error_message(label, msg, first);
    expect_message_start(label, msg, first);
}

static void run_case(const le_case *e)
{
    lcase L;
    base_case(e->base, &L);
    largs a = base_args(&L);
    made mk = {0};
    e->edit(&a, &L, &mk);
    uint64_t ws = 0;
    lig_executor *exec = NULL;
    const lig_status st = phase1(&a, &ws, &exec);
    errtest_named_verdict(e->name, st, e->want, e->first, exec);
    CHECK(lcase_inputs_unchanged(&L) && lcase_outputs_unchanged(&L), "%s: a byte changed", e->name);
    for (int i = 0; i < mk.n; i++) {
        lig_destroy_tensor(mk.t[i]);
        free(mk.m[i]);
    }
    lcase_free(&L);
}

LIG_TEST(errors_logits_phase1)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_case(&cases[i]);
    }
    th_note("%zu error cases", sizeof cases / sizeof cases[0]);
}

/* Phase 2: a bad table entry in a block a row scores fails before anything is written; one in a
 * block before every row's start is never read; executors of the two quantized operators are
 * refused by each other's phase 2. */
LIG_TEST(errors_logits_phase2)
{
    lcase L;
    base_case(LE_PAGED, &L);
    const int64_t mb = L.c.max_blocks, bs = L.c.s.block_size;
    int64_t *table = L.call.buf[QB_TABLE];
    const lig_dtype tdt = L.c.s.idx_dtype;
    /* row 0 of batch 1 scores key lk[1] - 1: its block's entry broken */
    const int64_t last = L.c.lk[1] - 1, j = last / bs, old = th_load_int(table, tdt, mb + j);
    REQUIRE(last >= bs, "the base case's batch 1 holds %lld keys", (long long)L.c.lk[1]);
    th_store_int(table, tdt, mb + j, L.c.num_blocks);
    uint64_t ws = 0;
    lig_executor *exec = NULL;
    largs a = base_args(&L);
    REQUIRE(phase1(&a, &ws, &exec) == LIG_SUCCESS, "phase 1: %s", lig_get_last_error());
    void *mem = malloc((size_t)ws + 1);
    lig_status st = lig_quant_logits(mem, ws, exec, NULL);
    CHECK(st == LIG_ERR_PARAM_INVALID, "a bad scored block: status %d", (int)st);
    expect_message("bad table entry", lig_get_last_error(), "block_table");
    CHECK(lcase_outputs_unchanged(&L), "a bad table entry: an output was written");
    /* the same entry outside every row's range: ranges start past the block */
    int64_t *starts = malloc(sizeof(int64_t) * (size_t)L.rows);
    for (int64_t r = 0; r < L.rows; r++) {
        starts[r] = r / L.c.p.S1 == 1 ? L.ke[r] : 0; /* batch 1's rows score nothing */
    }
    made mk = {0};
    const int64_t shape[2] = {L.c.p.B, L.c.p.S1};
    a.ks = ints(&mk, LIG_INT64, 2, shape, starts);
    exec = NULL;
    REQUIRE(phase1(&a, &ws, &exec) == LIG_SUCCESS, "phase 1: %s", lig_get_last_error());
    mem = realloc(mem, (size_t)ws + 1);
    st = lig_quant_logits(mem, ws, exec, NULL);
    CHECK(st == LIG_SUCCESS, "an unread bad entry: status %d (%s)", (int)st, lig_get_last_error());
    th_store_int(table, tdt, mb + j, old);
    /* executors of the other operator */
    exec = NULL;
    a = base_args(&L);
    REQUIRE(phase1(&a, &ws, &exec) == LIG_SUCCESS, "phase 1: %s", lig_get_last_error());
    mem = realloc(mem, (size_t)ws + 1);
    lcase_reset_outputs(&L);
    st = lig_quant_indexer(mem, ws, exec, NULL);
    CHECK(st == LIG_ERR_PARAM_INVALID, "a logits executor in lig_quant_indexer: status %d", (int)st);
    expect_message("logits executor", lig_get_last_error(), "executor");
    CHECK(lcase_outputs_unchanged(&L), "a refused executor: an output was written");
    exec = NULL;
    REQUIRE(qcall_phase1(&L.call, &ws, &exec) == LIG_SUCCESS, "lig_quant_indexer phase 1: %s", lig_get_last_error());
    mem = realloc(mem, (size_t)ws + 1);
    st = lig_quant_logits(mem, ws, exec, NULL);
    CHECK(st == LIG_ERR_PARAM_INVALID, "a quantized forward's executor in lig_quant_logits: status %d", (int)st);
    expect_message("indexer executor", lig_get_last_error(), "executor");
    CHECK(lcase_outputs_unchanged(&L), "a refused executor: an output was written");
    free(mem);
    free(starts);
    lig_destroy_tensor(mk.t[0]);
    free(mk.m[0]);
    lcase_free(&L);
}

/* lig_quant_logits_schedule's arguments, nothing written on an error. */
LIG_TEST(errors_logits_schedule)
{
    int64_t ends[4] = {3, 9, 0, 4};
    int32_t out[6] = {-5, -5, -5, -5, -5, -5};
    float fends[4] = {0};
    const int64_t es[2] = {2, 2}, ss[2] = {3, 2}, bad_s[2] = {2, 2};
    lig_tensor *ke = lig_create_tensor(ends, LIG_INT64, 2, es, NULL), *sc = lig_create_tensor(out, LIG_INT32, 2, ss, NULL);
    lig_tensor *fke = lig_create_tensor(fends, LIG_FLOAT32, 2, es, NULL);
    lig_tensor *short_sc = lig_create_tensor(out, LIG_INT32, 2, bad_s, NULL);
    lig_tensor *wide_sc = lig_create_tensor(ends, LIG_INT64, 2, ss, NULL);
    struct {
        const char *name;
        const lig_tensor *ke;
        int64_t bs, workers;
        const lig_tensor *sc;
        const char *first;
    } calls[] = {
        {"key_end NULL", NULL, 4, 2, sc, "key_end"},       {"schedule NULL", ke, 4, 2, NULL, "schedule"},
        {"key_end FLOAT32", fke, 4, 2, sc, "key_end"},     {"block_size 0", ke, 0, 2, sc, "block_size"},
        {"workers 0", ke, 4, 0, sc, "workers"},            {"schedule rows", ke, 4, 2, short_sc, "schedule"},
        {"schedule INT64", ke, 4, 2, wide_sc, "schedule"},
    };
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        const lig_status st = lig_quant_logits_schedule(calls[i].ke, calls[i].bs, calls[i].workers, calls[i].sc);
        CHECK(st != LIG_SUCCESS, "%s: accepted", calls[i].name);
        expect_message(calls[i].name, lig_get_last_error(), calls[i].first);
    }
    ends[2] = -1;
    CHECK(lig_quant_logits_schedule(ke, 4, 2, sc) == LIG_ERR_PARAM_INVALID, "a negative key_end: accepted");
    expect_message("negative key_end", lig_get_last_error(), "key_end");
    for (int i = 0; i < 6; i++) {
        CHECK(out[i] == -5, "schedule entry %d written on an error", i);
    }
    ends[2] = 0;
    REQUIRE(lig_quant_logits_schedule(ke, 4, 2, sc) == LIG_SUCCESS, "%s", lig_get_last_error());
    /* longest ends 9 and 4: 3 + 1 blocks; 2 workers start at blocks 0 and 2 */
    const int32_t expect[6] = {0, 0, 0, 2, 2, 0};
    CHECK(memcmp(out, expect, sizeof out) == 0, "got (%d,%d) (%d,%d) (%d,%d)", out[0], out[1], out[2], out[3], out[4],
          out[5]);
    lig_destroy_tensor(ke);
    lig_destroy_tensor(sc);
    lig_destroy_tensor(fke);
    lig_destroy_tensor(short_sc);
    lig_destroy_tensor(wide_sc);
}

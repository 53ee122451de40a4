/*
 * The forward over a paged key cache (lig_indexer_paged_get_workspace_size): keys
 * [num_blocks, block_size, N2, D] read through a block table [B, max_blocks_per_seq]. Every
 * case is a forward test case (grid data: exact scores) whose keys are scattered over the
 * cache's blocks in a random order, with spare blocks and the unused tails of the last blocks
 * full of NaN and the unused table entries full of garbage, none of which may be read; the
 * output is checked against the float64 reference of the same keys, contiguous, as the plain
 * forward is. Then the errors: each bad argument in turn, with nothing written.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_generators.h"
#include "float_formats.h"
#include "framework.h"
#include "lig.h"
#include "forward_kl_checks.h"
#include "rng.h"
#include "problem_case.h"
#include "tensor_buffers.h"

/* A forward case with its keys in a paged cache, and every tensor of the paged call. */
typedef struct paged_case {
    tcase tc;
    int64_t bs, blocks_per_seq, num_blocks;
    lig_dtype table_dtype, val_dtype;
    int with_values;
    int64_t *lk;       /* [B] per-batch key lengths */
    void *q, *w, *cache, *table, *seq_q, *seq_k, *idx, *val;
    size_t idx_bytes, val_bytes;
    lig_tensor *t_q, *t_w, *t_cache, *t_table, *t_seq_q, *t_seq_k, *t_idx, *t_val;
} paged_case;

static void paged_make(paged_case *c, th_rng *r, int tnd, lig_dtype dtype, int64_t bs, lig_dtype table_dtype, int v) {
    tcase *tc = &c->tc;
    tc_init(tc);
    tc->dtype = dtype;
    tc->idx_dtype = v % 2 ? LIG_INT64 : LIG_INT32;
    tc->p.sparse_mode = v % 3 == 0 ? 0 : 3;
    if (tc->p.sparse_mode == 0) {
        tc->p.pre_tokens = 5 + v % 7;
        tc->p.next_tokens = v % 4;
    }
    tc->p.N2 = 1 + v % 2;
    tc->p.N1 = tc->p.N2 * (1 + v % 3);
    tc->p.D = 8 + 4 * (v % 5);
    tc->p.K = 3 + v % 9;
    tc->p.B = 2 + v % 3;
    if (tnd) {
        gen_tnd(r, tc, 20, 26, 2, 0);
    } else {
        tc->p.S1 = 18;
        tc->p.S2 = 23;
        tc->has_seq_q = v % 2;
        tc->has_seq_k = 1;
        gen_bsnd(r, tc);
    }
    fwd_gen_opts o;
    fwd_gen_opts_default(&o);
    o.poison = 0; /* the paged layout has its own poison */
    o.tie_heavy = v % 4 == 1;
    fwd_gen_data(r, tc, &o);

    const ref_problem *p = &tc->p;
    const int64_t B = p->B, N1 = p->N1, N2 = p->N2, D = p->D, K = p->K;
    c->bs = bs;
    c->table_dtype = table_dtype;
    c->with_values = v % 3 != 2;
    c->val_dtype = v % 2 ? LIG_FLOAT32 : dtype;
    c->lk = th_xcalloc((size_t)B, sizeof(int64_t));
    int64_t longest = 0, used = 0;
    for (int64_t b = 0; b < B; b++) {
        c->lk[b] = tnd ? tc->seq_k[b] - (b ? tc->seq_k[b - 1] : 0) : tc->seq_k[b];
        if (c->lk[b] > longest) longest = c->lk[b];
        used += (c->lk[b] + bs - 1) / bs;
    }
    c->blocks_per_seq = (longest + bs - 1) / bs + 1 + v % 2; /* room to spare */
    c->num_blocks = used + 3;                                  /* spare blocks full of NaN */
    /* the used blocks, in a random order over the cache */
    int64_t *order = th_xmalloc(sizeof(int64_t) * (size_t)c->num_blocks);
    for (int64_t i = 0; i < c->num_blocks; i++) order[i] = i;
    for (int64_t i = c->num_blocks - 1; i > 0; i--) {
        const int64_t j = th_rng_range(r, 0, i), x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    const int64_t row = N2 * D, cache_n = c->num_blocks * bs * row;
    c->cache = th_xmalloc(th_dtype_size(dtype) * (size_t)cache_n);
    for (int64_t i = 0; i < cache_n; i++) th_store(c->cache, dtype, i, NAN);
    c->table = th_xmalloc(th_dtype_size(table_dtype) * (size_t)(B * c->blocks_per_seq));
    int64_t next = 0;
    for (int64_t b = 0; b < B; b++) {
        const int64_t key_base = tnd ? (b ? tc->seq_k[b - 1] : 0) : b * p->S2;
        for (int64_t j = 0; j < c->blocks_per_seq; j++) {
            const int64_t first = j * bs;
            /* never read: garbage, sometimes far out of range */
            int64_t block = j % 2 ? -12345 : c->num_blocks + 77;
            if (first < c->lk[b]) block = order[next++];
            th_store(c->table, table_dtype, b * c->blocks_per_seq + j, (double)block);
            for (int64_t i = 0; first < c->lk[b] && i < bs && first + i < c->lk[b]; i++)
                for (int64_t e = 0; e < row; e++)
                    th_store(c->cache, dtype, (block * bs + i) * row + e, tc->k[(key_base + first + i) * row + e]);
        }
    }
    free(order);

    const int64_t nq = tc_numel_q(tc), nw = tc_numel_w(tc), nslots = tc_numel_slots(tc);
    c->q = th_xmalloc(th_dtype_size(dtype) * (size_t)nq);
    c->w = th_xmalloc(th_dtype_size(dtype) * (size_t)nw);
    for (int64_t i = 0; i < nq; i++) th_store(c->q, dtype, i, tc->q[i]);
    for (int64_t i = 0; i < nw; i++) th_store(c->w, dtype, i, tc->w[i]);
    c->seq_q = th_xmalloc(8 * (size_t)B);
    c->seq_k = th_xmalloc(8 * (size_t)B);
    for (int64_t b = 0; b < B; b++) {
        th_store(c->seq_q, LIG_INT64, b, (double)(tc->seq_q ? tc->seq_q[b] : p->S1));
        th_store(c->seq_k, LIG_INT64, b, (double)c->lk[b]);
    }
    c->idx_bytes = th_dtype_size(tc->idx_dtype) * (size_t)nslots;
    c->val_bytes = th_dtype_size(c->val_dtype) * (size_t)nslots;
    c->idx = th_xmalloc(c->idx_bytes);
    c->val = th_xmalloc(c->val_bytes);
    memset(c->idx, 0xCD, c->idx_bytes);
    memset(c->val, 0xCD, c->val_bytes);

    const int64_t rows = tnd ? p->S1 : B * p->S1;
    const int64_t qs4[] = {B, p->S1, N1, D}, qs3[] = {p->S1, N1, D}, ws3[] = {B, p->S1, N1}, ws2[] = {p->S1, N1};
    const int64_t cs[] = {c->num_blocks, bs, N2, D}, ts[] = {B, c->blocks_per_seq}, ls[] = {B};
    const int64_t ss4[] = {B, p->S1, N2, K}, ss3[] = {p->S1, N2, K};
    (void)rows;
    c->t_q = lig_create_tensor(c->q, dtype, tnd ? 3 : 4, tnd ? qs3 : qs4, NULL);
    c->t_w = lig_create_tensor(c->w, dtype, tnd ? 2 : 3, tnd ? ws2 : ws3, NULL);
    c->t_cache = lig_create_tensor(c->cache, dtype, 4, cs, NULL);
    c->t_table = lig_create_tensor(c->table, table_dtype, 2, ts, NULL);
    c->t_seq_q = tnd || tc->has_seq_q ? lig_create_tensor(c->seq_q, LIG_INT64, 1, ls, NULL) : NULL;
    c->t_seq_k = lig_create_tensor(c->seq_k, LIG_INT64, 1, ls, NULL);
    c->t_idx = lig_create_tensor(c->idx, tc->idx_dtype, tnd ? 3 : 4, tnd ? ss3 : ss4, NULL);
    c->t_val = lig_create_tensor(c->val, c->val_dtype, tnd ? 3 : 4, tnd ? ss3 : ss4, NULL);
}

static void paged_free(paged_case *c) {
    lig_tensor *t[] = {c->t_q, c->t_w, c->t_cache, c->t_table, c->t_seq_q, c->t_seq_k, c->t_idx, c->t_val};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) lig_destroy_tensor(t[i]);
    void *m[] = {c->lk, c->q, c->w, c->cache, c->table, c->seq_q, c->seq_k, c->idx, c->val};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) free(m[i]);
    tc_free(&c->tc);
}

/* Both phases with the case's tensors (table may be replaced); the status of the first failure. */
static lig_status paged_run(paged_case *c, const lig_tensor *table, const lig_tensor *seq_k, const char *layout) {
    uint64_t size = 0;
    lig_executor *e = NULL;
    const ref_problem *p = &c->tc.p;
    lig_status st = lig_indexer_paged_get_workspace_size(
        c->t_q, c->t_cache, table, c->t_w, c->t_seq_q, seq_k, layout, p->K, p->sparse_mode, p->pre_tokens,
        p->next_tokens, c->t_idx, c->with_values ? c->t_val : NULL, &size, &e);
    if (st != LIG_SUCCESS) return st;
    void *ws = size ? th_xmalloc((size_t)size) : NULL;
    if (ws) memset(ws, 0xAB, (size_t)size);
    st = lig_indexer(ws, size, e, NULL);
    free(ws);
    return st;
}

LIG_TEST(fwd_paged_keys) {
    static const lig_dtype dtypes[] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    static const int64_t block_sizes[] = {1, 3, 16};
    th_rng r = th_rng_make(0x70616765u);
    int cases = 0;
    fwd_check_stats_reset();
    for (int tnd = 0; tnd < 2; tnd++)
        for (int d = 0; d < 3; d++)
            for (int b = 0; b < 3; b++)
                for (int v = 0; v < 4; v++) {
                    paged_case c;
                    paged_make(&c, &r, tnd, dtypes[d], block_sizes[b], (v + b) % 2 ? LIG_INT64 : LIG_INT32, v);
                    char label[128];
                    snprintf(label, sizeof label, "paged %s %s block_size %lld variant %d", tnd ? "TND" : "BSND",
                             d == 0 ? "fp32" : d == 1 ? "fp16" : "bf16", (long long)block_sizes[b], v);
                    const lig_status st = paged_run(&c, c.t_table, c.t_seq_k, tnd ? "TND" : "BSND");
                    if (CHECK(st == LIG_SUCCESS, "%s: %s", label, lig_get_last_error())) {
                        const int64_t n = tc_numel_slots(&c.tc);
                        int64_t *idx = th_xmalloc(sizeof(int64_t) * (size_t)n);
                        double *val = c.with_values ? th_xmalloc(sizeof(double) * (size_t)n) : NULL;
                        for (int64_t i = 0; i < n; i++) {
                            idx[i] = (int64_t)th_load(c.idx, c.tc.idx_dtype, i);
                            if (val) val[i] = th_load(c.val, c.val_dtype, i);
                        }
                        fwd_check_outputs(&c.tc, c.val_dtype, idx, val, label);
                        free(idx);
                        free(val);
                        cases++;
                    }
                    paged_free(&c);
                }
    th_note("%d paged cases against the reference", cases);
    fwd_check_stats_note("paged forward");
}

LIG_TEST(errors_fwd_paged_keys) {
    th_rng r = th_rng_make(0x70657272u);
    paged_case c;
    paged_make(&c, &r, 0, LIG_BFLOAT16, 4, LIG_INT32, 1);
    const ref_problem *p = &c.tc.p;
    unsigned char *idx0 = th_xmalloc(c.idx_bytes), *val0 = th_xmalloc(c.val_bytes);
    memcpy(idx0, c.idx, c.idx_bytes);
    memcpy(val0, c.val, c.val_bytes);
    const int untouched_check = 1;
#define EXPECT_ERROR(call, status, needle)                                                                         \
    do {                                                                                                           \
        const lig_status st_ = (call);                                                                             \
        CHECK(st_ == (status) && strstr(lig_get_last_error(), (needle)) != NULL, "%s: status %d, message \"%s\"", \
              (needle), (int)st_, lig_get_last_error());                                                         \
        CHECK(!untouched_check || (memcmp(c.idx, idx0, c.idx_bytes) == 0 && memcmp(c.val, val0, c.val_bytes) == 0),  \
              "%s: an output was written", (needle));                                                              \
    } while (0)

    /* a block that holds keys points outside the cache: found in phase 2, before any write */
    int64_t b_bad = 0;
    while (b_bad < p->B && c.lk[b_bad] == 0) b_bad++;
    if (CHECK(b_bad < p->B, "no batch with keys")) {
        const int64_t at = b_bad * c.blocks_per_seq + (c.lk[b_bad] - 1) / c.bs;
        const double saved = th_load(c.table, LIG_INT32, at);
        th_store(c.table, LIG_INT32, at, (double)c.num_blocks);
        EXPECT_ERROR(paged_run(&c, c.t_table, c.t_seq_k, "BSND"), LIG_ERR_PARAM_INVALID, "block_table: expected block numbers");
        th_store(c.table, LIG_INT32, at, -1.0);
        EXPECT_ERROR(paged_run(&c, c.t_table, c.t_seq_k, "BSND"), LIG_ERR_PARAM_INVALID, "block_table: expected block numbers");
        th_store(c.table, LIG_INT32, at, saved);
    }
    /* phase-1 errors */
    EXPECT_ERROR(paged_run(&c, c.t_table, NULL, "BSND"), LIG_ERR_PARAM_INVALID, "actual_seq_lengths_key: expected a [B] tensor of key lengths");
    EXPECT_ERROR(paged_run(&c, NULL, c.t_seq_k, "BSND"), LIG_ERR_PARAM_NULLPTR, "block_table: expected a tensor");
    const int64_t too_long[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t lens[8];
    memcpy(lens, too_long, sizeof lens);
    for (int64_t b = 0; b < p->B; b++) lens[b] = c.lk[b];
    lens[0] = c.blocks_per_seq * c.bs + 1;
    const int64_t ls[] = {p->B};
    lig_tensor *t_long = lig_create_tensor(lens, LIG_INT64, 1, ls, NULL);
    EXPECT_ERROR(paged_run(&c, c.t_table, t_long, "BSND"), LIG_ERR_PARAM_INVALID, "actual_seq_lengths_key: expected values in [0,");
    lig_destroy_tensor(t_long);
    const int64_t bad_b[] = {p->B + 1, c.blocks_per_seq};
    lig_tensor *t_bad_b = lig_create_tensor(c.table, LIG_INT32, 2, bad_b, NULL);
    EXPECT_ERROR(paged_run(&c, t_bad_b, c.t_seq_k, "BSND"), LIG_ERR_PARAM_INVALID, "block_table: expected shape");
    lig_destroy_tensor(t_bad_b);
    const int64_t ts[] = {p->B, c.blocks_per_seq};
    lig_tensor *t_float = lig_create_tensor(c.table, LIG_FLOAT32, 2, ts, NULL);
    EXPECT_ERROR(paged_run(&c, t_float, c.t_seq_k, "BSND"), LIG_ERR_PARAM_INVALID, "block_table: expected dtype INT32 or INT64");
    lig_destroy_tensor(t_float);
    const int64_t rank1[] = {p->B * c.blocks_per_seq};
    lig_tensor *t_rank1 = lig_create_tensor(c.table, LIG_INT32, 1, rank1, NULL);
    EXPECT_ERROR(paged_run(&c, t_rank1, c.t_seq_k, "BSND"), LIG_ERR_PARAM_INVALID, "block_table: expected rank 2");
    lig_destroy_tensor(t_rank1);
    /* a cache whose D differs from the query's, then one with the wrong dtype */
    lig_tensor *saved_cache = c.t_cache;
    const int64_t cs_bad[] = {c.num_blocks, c.bs, p->N2, p->D + 1};
    c.t_cache = lig_create_tensor(c.cache, LIG_BFLOAT16, 4, cs_bad, NULL);
    EXPECT_ERROR(paged_run(&c, c.t_table, c.t_seq_k, "BSND"), LIG_ERR_PARAM_INVALID, "key_cache: expected shape");
    lig_destroy_tensor(c.t_cache);
    const int64_t cs[] = {c.num_blocks, c.bs, p->N2, p->D};
    c.t_cache = lig_create_tensor(c.cache, LIG_FLOAT16, 4, cs, NULL);
    EXPECT_ERROR(paged_run(&c, c.t_table, c.t_seq_k, "BSND"), LIG_ERR_PARAM_INVALID, "key_cache: expected dtype BFLOAT16");
    lig_destroy_tensor(c.t_cache);
    c.t_cache = saved_cache;
#undef EXPECT_ERROR
    /* and the untouched case still runs */
    CHECK(paged_run(&c, c.t_table, c.t_seq_k, "BSND") == LIG_SUCCESS, "the valid case: %s", lig_get_last_error());
    free(idx0);
    free(val0);
    paged_free(&c);
}

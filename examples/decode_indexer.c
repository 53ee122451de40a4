/* A decode loop as an inference engine runs DeepSeek-V3.2's lightning indexer on lig's quantized
 * forward: prompts, then generated tokens, the indexer's keys kept in DeepGEMM's fused FP8 paged
 * cache (fused_cache.h) and read in place by lig_quant_indexer, each selection checked against
 * lig's bf16 forward on the unquantized data. The data: decode_data.h.
 *
 * Prefill. Each prompt goes through the cache in chunks of --chunk tokens, as an engine's chunked
 * prefill: the chunk's keys are quantized (act_quant, one scale per token) and written at their
 * slots, then one lig_quant_indexer call selects the top-K of every row of the chunk against all
 * keys so far (sparse_mode 3: the rows sit at the end of the keys). The prompt's selection is what
 * the prompt's own sparse attention needs, so it is run (--no-prefill-select skips it); its recall
 * against the bf16 forward is measured on the last --check-rows rows of each prompt.
 *
 * Decode. Each step, every sequence adds next_n tokens (next_n = 2: the token and one speculative
 * draft, as DeepSeek's MTP; each draft is accepted with probability --accept, else the next step
 * writes its slot again): their keys are quantized and written into the fused cache, the rows'
 * queries are quantized per (token, head) with act_quant and the q scale folded into the weights
 * (w * sq and query_dequant_scale NULL, as DeepSeek's inference and DeepGEMM do; --q-scales passes
 * sq as query_dequant_scale instead), and lig_quant_indexer (layout_key "PA_BSND", the two
 * strided views of the fused pool, the engine's block table) selects the top-K of each row, row i
 * seeing the keys < context - next_n + i + 1. Timed: the key write, the query quantization and
 * both phases of the call (phase 1 reads the new lengths, so an engine pays it every step). The
 * bf16 forward (lig_indexer_paged_get_workspace_size over a bf16 paged cache with the same table,
 * bf16 queries and weights, nothing quantized) selects from the same data; recall =
 * |FP8 selection and bf16 selection| / |bf16 selection|, per row. The INT8 variant (its own fused
 * cache of int8 codes with amax / 127 scales, the same table) runs the same steps (--no-int8
 * skips it); its prompts' selection is not run. At the last step the FP8 call runs again on a
 * contiguous copy of the cache and must give the same bytes (the views are read as meant).
 *
 * Exits non-zero when the FP8 recall's mean (prefill rows and decode rows) falls below
 * --min-recall, the INT8 one's below --min-recall-int8, or the view check differs.
 *
 *   lig-decode-indexer [--prompt P] [--steps N] [--next-n n] [--batch B] [--heads N1] [--dim D]
 *                      [--topk K] [--block-kv 64] [--rank r] [--anchors A] [--chunk C]
 *                      [--check-rows R] [--accept p] [--every E] [--threads T] [--seed X]
 *                      [--min-recall x] [--min-recall-int8 x] [--q-scales] [--no-int8]
 *                      [--no-prefill-select]
 */
#include <lig.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_data.h"
#include "demo_common.h"
#include "fused_cache.h"

typedef struct config {
    int64_t P, steps, next_n, B, N1, D, K, block_kv, r, anchors, chunk, check_rows, every, threads, seed;
    double accept, min_recall, min_recall_int8;
    int q_scales, int8, prefill_select;
} config;

/* in [0, i]: the allocator's shuffle */
static int64_t shuffle_pick(int64_t i) {
    const int64_t j = (int64_t)(uniform01() * (double)(i + 1));
    return j > i ? i : j;
}

static lig_tensor *tensor(void *data, lig_dtype dtype, int64_t ndim, const int64_t *shape, const int64_t *strides) {
    lig_tensor *t = lig_create_tensor(data, dtype, ndim, shape, strides);
    if (!t) {
        fprintf(stderr, "lig_create_tensor failed: %s\n", lig_get_last_error());
        exit(1);
    }
    return t;
}

static int by_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
/* the q-quantile of n >= 1 values (nearest rank) */
static double quantile(const double *v, int64_t n, double q) {
    double *s = xcalloc((size_t)n, sizeof(double));
    memcpy(s, v, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof(double), by_double);
    const int64_t i = (int64_t)ceil(q * (double)n) - 1;
    const double r = s[i < 0 ? 0 : i];
    free(s);
    return r;
}

static void to_bf16(const float *x, int64_t n, uint16_t *out) {
    for (int64_t i = 0; i < n; i++) out[i] = lig_float_to_bfloat16(x[i]);
}

/* ---- recall -------------------------------------------------------------------------------- */

typedef struct recall_stats {
    double sum, min;
    int64_t rows;
    int32_t *mark, stamp; /* mark[s] == stamp: key s is in the reference selection (own array) */
} recall_stats;

/* Adds |a and ref| / |ref| over the indices >= 0 of two selections of K slots. */
static double recall_add(recall_stats *st, const int32_t *a, const int32_t *ref, int64_t K) {
    st->stamp++;
    int64_t n = 0, hit = 0;
    for (int64_t j = 0; j < K; j++)
        if (ref[j] >= 0) {
            st->mark[ref[j]] = st->stamp;
            n++;
        }
    for (int64_t j = 0; j < K; j++)
        if (a[j] >= 0 && st->mark[a[j]] == st->stamp) hit++;
    const double r = n ? (double)hit / (double)n : 1.0;
    if (st->rows == 0 || r < st->min) st->min = r;
    st->sum += r;
    st->rows++;
    return r;
}
static double recall_mean(const recall_stats *s) { return s->rows ? s->sum / (double)s->rows : 1.0; }

/* ---- the engine: caches, block table, the model's keys ---------------------------------- */

typedef struct engine {
    config c;
    decode_data data;
    int64_t cap, max_blocks; /* positions and blocks per sequence */
    block_allocator alloc;
    int32_t *table;     /* [B, max_blocks], -1 where no block is assigned (never read) */
    int64_t *blocks_of; /* [B]: blocks assigned */
    fused_cache fp8, i8;
    uint16_t *bf16_pool; /* [num_blocks, block_kv, 1, D]: the bf16 forward's paged cache */
    float *keys, *inv_norm; /* [B, cap, D], [B, cap]: the unquantized keys and 1 / |k| */
    lig_tensor *fp8_codes, *fp8_scales, *i8_codes, *i8_scales, *bf16_cache;
} engine;

static void engine_init(engine *e, const config *c) {
    e->c = *c;
    const int64_t bkv = c->block_kv, D = c->D;
    decode_data_init(&e->data, D, c->r, c->N1, c->anchors);
    e->cap = c->P + (c->steps + 1) * c->next_n;
    e->max_blocks = (e->cap + bkv - 1) / bkv;
    const int64_t num_blocks = c->B * e->max_blocks + 7; /* spares: the allocator serves others too */
    block_allocator_init(&e->alloc, num_blocks, shuffle_pick);
    e->table = xcalloc((size_t)(c->B * e->max_blocks), sizeof(int32_t));
    for (int64_t i = 0; i < c->B * e->max_blocks; i++) e->table[i] = -1;
    e->blocks_of = xcalloc((size_t)c->B, sizeof(int64_t));
    fused_cache_init(&e->fp8, LIG_FLOAT8_E4M3FN, num_blocks, bkv, D);
    fused_cache_init(&e->i8, LIG_INT8, c->int8 ? num_blocks : 1, bkv, D);
    e->bf16_pool = xcalloc((size_t)(num_blocks * bkv * D), sizeof(uint16_t));
    e->keys = xcalloc((size_t)(c->B * e->cap * D), sizeof(float));
    e->inv_norm = xcalloc((size_t)(c->B * e->cap), sizeof(float));
    e->fp8_codes = fused_cache_code_view(&e->fp8);
    e->fp8_scales = fused_cache_scale_view(&e->fp8);
    e->i8_codes = fused_cache_code_view(&e->i8);
    e->i8_scales = fused_cache_scale_view(&e->i8);
    if (!e->fp8_codes || !e->fp8_scales || !e->i8_codes || !e->i8_scales) check(LIG_ERR_INNER, "the cache views");
    const int64_t shape[4] = {num_blocks, bkv, 1, D};
    e->bf16_cache = tensor(e->bf16_pool, LIG_BFLOAT16, 4, shape, NULL);
}

static void engine_free(engine *e) {
    lig_tensor *views[] = {e->fp8_codes, e->fp8_scales, e->i8_codes, e->i8_scales, e->bf16_cache};
    for (size_t i = 0; i < sizeof views / sizeof *views; i++) lig_destroy_tensor(views[i]);
    void *buffers[] = {e->table, e->blocks_of, e->bf16_pool, e->keys, e->inv_norm};
    for (size_t i = 0; i < sizeof buffers / sizeof *buffers; i++) free(buffers[i]);
    fused_cache_free(&e->fp8);
    fused_cache_free(&e->i8);
    block_allocator_free(&e->alloc);
    decode_data_free(&e->data);
}

/* The model's key of sequence b's token at pos (not timed: the model computes it). */
static void make_key(engine *e, int64_t b, int64_t pos) {
    e->inv_norm[b * e->cap + pos] = decode_data_key(&e->data, e->keys + (b * e->cap + pos) * e->c.D);
}

/* Writes the key of (b, pos) into a fused cache (act_quant) or, fc NULL, the bf16 pool; the slot's
 * block is taken from the allocator when pos starts a new one. */
static void write_key(engine *e, fused_cache *fc, int64_t b, int64_t pos) {
    const int64_t bi = pos / e->c.block_kv, row = pos % e->c.block_kv;
    while (e->blocks_of[b] <= bi) e->table[b * e->max_blocks + e->blocks_of[b]++] = block_allocator_take(&e->alloc);
    const int32_t block = e->table[b * e->max_blocks + bi];
    const float *k = e->keys + (b * e->cap + pos) * e->c.D;
    if (fc) fused_cache_write(fc, block, row, k);
    else to_bf16(k, e->c.D, e->bf16_pool + ((int64_t)block * e->c.block_kv + row) * e->c.D);
}

/* ---- query rows and the indexer calls ---------------------------------------------------- */

/* B x rows query rows in one form: quantized (codes, folded or plain weights, scales) or bf16. */
typedef struct query_rows {
    int64_t B, rows;
    lig_dtype form;  /* LIG_FLOAT8_E4M3FN, LIG_INT8 or LIG_BFLOAT16 */
    uint8_t *codes;  /* [B, rows, N1, D] quantized, or bf16 bits (2 bytes each) */
    float *wq, *sq;  /* [B, rows, N1]: weights (w * sq when folded) and the scales */
    uint16_t *wb;    /* [B, rows, N1]: bf16 weights */
    int32_t *idx;    /* [B, rows, K] */
    float *val;      /* [B, rows, K] (the view check only) */
} query_rows;

static void rows_init(query_rows *r, lig_dtype form, int64_t B, int64_t rows, const config *c) {
    const size_t n = (size_t)(B * rows), esize = form == LIG_BFLOAT16 ? 2 : 1;
    *r = (query_rows){.B = B, .rows = rows, .form = form};
    r->codes = xcalloc(n * (size_t)(c->N1 * c->D), esize);
    r->wq = xcalloc(n * (size_t)c->N1, sizeof(float));
    r->sq = xcalloc(n * (size_t)c->N1, sizeof(float));
    r->wb = xcalloc(n * (size_t)c->N1, sizeof(uint16_t));
    r->idx = xcalloc(n * (size_t)c->K, sizeof(int32_t));
    r->val = xcalloc(n * (size_t)c->K, sizeof(float));
}

static void rows_free(query_rows *r) {
    void *buffers[] = {r->codes, r->wq, r->sq, r->wb, r->idx, r->val};
    for (size_t i = 0; i < sizeof buffers / sizeof *buffers; i++) free(buffers[i]);
}

/* Row i of r from the query q [N1, D] and weights w [N1]: act_quant per (token, head), the scale
 * folded into the weight unless --q-scales; or the bf16 forms. */
static void set_row(const config *c, query_rows *r, int64_t i, const float *q, const float *w) {
    const int64_t N1 = c->N1, D = c->D;
    if (r->form == LIG_BFLOAT16) {
        to_bf16(q, N1 * D, (uint16_t *)(void *)r->codes + i * N1 * D);
        to_bf16(w, N1, r->wb + i * N1);
        return;
    }
    for (int64_t h = 0; h < N1; h++) {
        const float scale = act_quant(r->form, q + h * D, D, r->codes + (i * N1 + h) * D);
        r->wq[i * N1 + h] = c->q_scales ? w[h] : w[h] * scale;
        r->sq[i * N1 + h] = c->q_scales ? scale : 1.0f;
    }
}

typedef struct call_args {
    lig_tensor *q, *w, *sq, *codes, *scales, *table, *lengths, *idx, *val; /* sq, scales, val may be NULL */
} call_args;

/* The tensors of a call over rows r against e's cache of r's form, with lengths [r->B] and the
 * table rows from `table`. codes / scales are e's (not owned by the call). */
static call_args make_call(const engine *e, const query_rows *r, int64_t *lengths, int32_t *table, int with_values) {
    const int64_t B = r->B, S1 = r->rows, N1 = e->c.N1, D = e->c.D, K = e->c.K;
    const int64_t qs[4] = {B, S1, N1, D}, ws[3] = {B, S1, N1}, is[3] = {B, S1, K}, ls[1] = {B};
    const int64_t ts[2] = {B, e->max_blocks};
    call_args a = {0};
    a.q = tensor(r->codes, r->form, 4, qs, NULL);
    if (r->form == LIG_BFLOAT16) {
        a.w = tensor(r->wb, LIG_BFLOAT16, 3, ws, NULL);
        a.codes = e->bf16_cache;
    } else {
        a.w = tensor(r->wq, LIG_FLOAT32, 3, ws, NULL);
        if (e->c.q_scales) a.sq = tensor(r->sq, LIG_FLOAT32, 3, ws, NULL);
        a.codes = r->form == LIG_INT8 ? e->i8_codes : e->fp8_codes;
        a.scales = r->form == LIG_INT8 ? e->i8_scales : e->fp8_scales;
    }
    a.lengths = tensor(lengths, LIG_INT64, 1, ls, NULL);
    a.table = tensor(table, LIG_INT32, 2, ts, NULL);
    a.idx = tensor(r->idx, LIG_INT32, 3, is, NULL);
    if (with_values) a.val = tensor(r->val, LIG_FLOAT32, 3, is, NULL);
    return a;
}

static void destroy_call(call_args *a) {
    lig_tensor *owned[] = {a->q, a->w, a->sq, a->lengths, a->table, a->idx, a->val};
    for (size_t i = 0; i < sizeof owned / sizeof *owned; i++) lig_destroy_tensor(owned[i]);
}

/* Both phases: lig_quant_indexer on the quantized cache, or the paged bf16 forward (no scales).
 * Returns the kernels the plan ran. */
static const char *run_indexer(const call_args *a, int64_t K) {
    uint64_t need = 0;
    lig_executor *ex = NULL;
    if (a->scales)
        check(lig_quant_indexer_get_workspace_size(a->q, a->codes, a->w, a->sq, a->scales, NULL, a->lengths, a->table,
                                                   0, 0, "BSND", "PA_BSND", K, 3, INT64_MAX, INT64_MAX, a->idx, a->val,
                                                   &need, &ex),
              "lig_quant_indexer_get_workspace_size");
    else
        check(lig_indexer_paged_get_workspace_size(a->q, a->codes, a->table, a->w, NULL, a->lengths, "BSND", K, 3,
                                                   INT64_MAX, INT64_MAX, a->idx, a->val, &need, &ex),
              "lig_indexer_paged_get_workspace_size");
    const char *kernels = lig_executor_kernel_set(ex);
    void *ws = demo_workspace(need);
    if (a->scales) check(lig_quant_indexer(ws, need, ex, NULL), "lig_quant_indexer");
    else check(lig_indexer(ws, need, ex, NULL), "lig_indexer");
    return kernels;
}

/* ---- the prompts ------------------------------------------------------------------------- */

typedef struct prefill_report {
    double write_s, select_s, key_rows;
    const char *kernels;
} prefill_report;

static prefill_report prefill(engine *e, const int64_t *prompt, recall_stats *rec) {
    const config *c = &e->c;
    const int64_t K = c->K;
    prefill_report rep = {.kernels = "-"};
    float *q = xcalloc((size_t)(c->N1 * c->D), sizeof(float)), *w = xcalloc((size_t)c->N1, sizeof(float));
    query_rows fp8, bf;
    rows_init(&fp8, LIG_FLOAT8_E4M3FN, 1, c->chunk, c);
    rows_init(&bf, LIG_BFLOAT16, 1, c->check_rows, c);
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t start = 0; start < prompt[b]; start += c->chunk) {
            const int64_t rows = prompt[b] - start < c->chunk ? prompt[b] - start : c->chunk;
            int64_t len = start + rows;
            /* the checked rows: the prompt's last ones, within its last chunk */
            const int64_t R = len < prompt[b] ? 0 : rows < c->check_rows ? rows : c->check_rows;
            for (int64_t p = start; p < len; p++) make_key(e, b, p);
            double t0 = now(); /* the FP8 write is the engine's; the others are the comparison's */
            for (int64_t p = start; p < len; p++) write_key(e, &e->fp8, b, p);
            rep.write_s += now() - t0;
            for (int64_t p = start; p < len; p++) {
                if (c->int8) write_key(e, &e->i8, b, p);
                write_key(e, NULL, b, p);
            }
            if (!c->prefill_select) continue;
            for (int64_t i = 0; i < rows; i++) {
                decode_data_query(&e->data, e->keys + b * e->cap * c->D, e->inv_norm + b * e->cap, start + i, q, w);
                set_row(c, &fp8, i, q, w);
                if (i >= rows - R) set_row(c, &bf, i - (rows - R), q, w);
            }
            fp8.rows = rows;
            call_args a = make_call(e, &fp8, &len, e->table + b * e->max_blocks, 0);
            t0 = now();
            rep.kernels = run_indexer(&a, K);
            rep.select_s += now() - t0;
            destroy_call(&a);
            rep.key_rows += (double)rows * (double)(start + 1) + (double)rows * (double)(rows - 1) / 2.0;
            if (R == 0) continue;
            bf.rows = R;
            call_args ab = make_call(e, &bf, &len, e->table + b * e->max_blocks, 0);
            run_indexer(&ab, K);
            destroy_call(&ab);
            for (int64_t i = 0; i < R; i++) recall_add(rec, fp8.idx + (rows - R + i) * K, bf.idx + i * K, K);
        }
    rows_free(&fp8);
    rows_free(&bf);
    free(q);
    free(w);
    return rep;
}

/* ---- the view check: the fused views against a contiguous copy of the cache --------------- */

static int views_match(const engine *e, query_rows *r, int64_t *lengths) {
    const int64_t nb = e->fp8.num_blocks, bkv = e->c.block_kv, D = e->c.D;
    const size_t n = (size_t)(r->B * r->rows * e->c.K);
    uint8_t *codes = xcalloc((size_t)(nb * bkv * D), 1);
    float *scales = xcalloc((size_t)(nb * bkv), sizeof(float));
    for (int64_t blk = 0; blk < nb; blk++) {
        const uint8_t *base = e->fp8.pool + blk * bkv * (D + 4);
        memcpy(codes + blk * bkv * D, base, (size_t)(bkv * D));
        memcpy(scales + blk * bkv, base + bkv * D, (size_t)bkv * sizeof(float));
    }
    call_args a = make_call(e, r, lengths, e->table, 1);
    run_indexer(&a, e->c.K);
    int32_t *idx = xcalloc(n, sizeof(int32_t));
    float *val = xcalloc(n, sizeof(float));
    memcpy(idx, r->idx, n * sizeof(int32_t));
    memcpy(val, r->val, n * sizeof(float));
    const int64_t cs[4] = {nb, bkv, 1, D}, ss[3] = {nb, bkv, 1};
    a.codes = tensor(codes, LIG_FLOAT8_E4M3FN, 4, cs, NULL);
    a.scales = tensor(scales, LIG_FLOAT32, 3, ss, NULL);
    run_indexer(&a, e->c.K);
    const int same = !memcmp(idx, r->idx, n * sizeof(int32_t)) && !memcmp(val, r->val, n * sizeof(float));
    lig_destroy_tensor(a.codes);
    lig_destroy_tensor(a.scales);
    destroy_call(&a);
    void *buffers[] = {codes, scales, idx, val};
    for (size_t i = 0; i < sizeof buffers / sizeof *buffers; i++) free(buffers[i]);
    return same;
}

/* ---- decode --------------------------------------------------------------------------------- */

/* per-step times (s): the FP8 step's parts and total, the INT8 step's, the bf16 call */
enum { T_WRITE, T_QUANT, T_FP8, T_STEP, T_I8, T_I8_STEP, T_BF16, TIMES };

typedef struct decode_run {
    query_rows r8, ri, rb;
    call_args a8, ai, ab;
    int64_t *ctx, *lengths; /* [B]: tokens kept; keys of this step's call */
    float *q, *w;
    double *t[TIMES];
    recall_stats rec8, reci;
    const char *k8, *ki, *kb;
} decode_run;

/* One step: every sequence's next_n new tokens through the three forms; returns the step's mean
 * FP8 and INT8 recall in rec_step[0..1]. */
static void decode_step(engine *e, decode_run *d, int64_t s, double rec_step[2]) {
    const config *c = &e->c;
    const int64_t B = c->B, nn = c->next_n, D = c->D, K = c->K;
    for (int64_t b = 0; b < B; b++) {
        for (int64_t i = 0; i < nn; i++) make_key(e, b, d->ctx[b] + i);
        d->lengths[b] = d->ctx[b] + nn;
    }
    /* FP8: the new keys into the fused cache, the rows quantized, the selection */
    double t0 = now();
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < nn; i++) write_key(e, &e->fp8, b, d->ctx[b] + i);
    d->t[T_WRITE][s] = now() - t0;
    double t_i8_quant = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < nn; i++) {
            /* the model's query (not timed), then each form's */
            decode_data_query(&e->data, e->keys + b * e->cap * D, e->inv_norm + b * e->cap, d->ctx[b] + i, d->q, d->w);
            t0 = now();
            set_row(c, &d->r8, b * nn + i, d->q, d->w);
            d->t[T_QUANT][s] += now() - t0;
            t0 = now();
            if (c->int8) set_row(c, &d->ri, b * nn + i, d->q, d->w);
            t_i8_quant += now() - t0;
            set_row(c, &d->rb, b * nn + i, d->q, d->w);
        }
    t0 = now();
    d->k8 = run_indexer(&d->a8, K);
    d->t[T_FP8][s] = now() - t0;
    d->t[T_STEP][s] = d->t[T_WRITE][s] + d->t[T_QUANT][s] + d->t[T_FP8][s];
    if (c->int8) {
        t0 = now();
        for (int64_t b = 0; b < B; b++)
            for (int64_t i = 0; i < nn; i++) write_key(e, &e->i8, b, d->ctx[b] + i);
        const double t_i8_write = now() - t0;
        t0 = now();
        d->ki = run_indexer(&d->ai, K);
        d->t[T_I8][s] = now() - t0;
        d->t[T_I8_STEP][s] = t_i8_write + t_i8_quant + d->t[T_I8][s];
    }
    /* the reference: bf16 keys into their paged cache, the bf16 forward */
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < nn; i++) write_key(e, NULL, b, d->ctx[b] + i);
    t0 = now();
    d->kb = run_indexer(&d->ab, K);
    d->t[T_BF16][s] = now() - t0;
    rec_step[0] = rec_step[1] = 0;
    for (int64_t row = 0; row < B * nn; row++) {
        rec_step[0] += recall_add(&d->rec8, d->r8.idx + row * K, d->rb.idx + row * K, K) / (double)(B * nn);
        if (c->int8) rec_step[1] += recall_add(&d->reci, d->ri.idx + row * K, d->rb.idx + row * K, K) / (double)(B * nn);
    }
}

/* Acceptance: the first token always, each draft with probability accept until one is refused. */
static void accept_tokens(const config *c, int64_t *ctx) {
    for (int64_t b = 0; b < c->B; b++) {
        int64_t accepted = 1;
        while (accepted < c->next_n && uniform01() < c->accept) accepted++;
        ctx[b] += accepted;
    }
}

static void print_times(const char *label, const char *kernels, const double *t, int64_t n) {
    char text[96];
    snprintf(text, sizeof text, kernels ? "%s (%s)" : "%s", label, kernels);
    printf("  %-60s %8.3f %8.3f\n", text, 1e3 * quantile(t, n, 0.5), 1e3 * quantile(t, n, 0.9));
}

/* ---- the command line ---------------------------------------------------------------------- */

static const demo_option options[] = {
    {"--prompt", offsetof(config, P), 'i'},           {"--steps", offsetof(config, steps), 'i'},
    {"--next-n", offsetof(config, next_n), 'i'},      {"--batch", offsetof(config, B), 'i'},
    {"--heads", offsetof(config, N1), 'i'},           {"--dim", offsetof(config, D), 'i'},
    {"--topk", offsetof(config, K), 'i'},             {"--block-kv", offsetof(config, block_kv), 'i'},
    {"--rank", offsetof(config, r), 'i'},             {"--anchors", offsetof(config, anchors), 'i'},
    {"--chunk", offsetof(config, chunk), 'i'},        {"--check-rows", offsetof(config, check_rows), 'i'},
    {"--every", offsetof(config, every), 'i'},        {"--threads", offsetof(config, threads), 'i'},
    {"--seed", offsetof(config, seed), 's'},          {"--accept", offsetof(config, accept), 'd'},
    {"--min-recall", offsetof(config, min_recall), 'd'},
    {"--min-recall-int8", offsetof(config, min_recall_int8), 'd'},
    {"--q-scales", offsetof(config, q_scales), '1'},  {"--no-int8", offsetof(config, int8), '0'},
    {"--no-prefill-select", offsetof(config, prefill_select), '0'},
};

static config parse(int argc, char **argv) {
    config c = {.P = 8192, .steps = 64, .next_n = 1, .B = 1, .N1 = 64, .D = 128, .K = 2048, .block_kv = 64,
                .r = 16, .anchors = 4, .chunk = 2048, .check_rows = 64, .every = 8, .seed = 1, .accept = 0.7,
                .min_recall = 0.95, .min_recall_int8 = 0.95, .int8 = 1, .prefill_select = 1};
    demo_parse_options(argc, argv, options, sizeof options / sizeof options[0], &c);
    return c;
}

/* ---- the run ----------------------------------------------------------------------------- */

int main(int argc, char **argv) {
    const config c = parse(argc, argv);
    demo_seed((uint64_t)c.seed * 0x2545f4914f6cdd1dull + 11);
    if (c.threads) lig_set_num_threads((int)c.threads);
    const int64_t B = c.B, nn = c.next_n, K = c.K, steps = c.steps;

    engine e;
    engine_init(&e, &c);
    /* prompts of different lengths, as a batch of requests has: sequence b's is P (1 - b / (4B)) */
    decode_run d = {0};
    d.ctx = xcalloc((size_t)B, sizeof(int64_t));
    d.lengths = xcalloc((size_t)B, sizeof(int64_t));
    int64_t tokens = 0;
    for (int64_t b = 0; b < B; b++) {
        d.ctx[b] = c.P - (c.P * b) / (4 * B);
        tokens += d.ctx[b];
    }
    recall_stats pre_rec = {.mark = xcalloc((size_t)e.cap, sizeof(int32_t))};
    d.rec8.mark = xcalloc((size_t)e.cap, sizeof(int32_t));
    d.reci.mark = xcalloc((size_t)e.cap, sizeof(int32_t));

    printf("lig %s: decode with the lightning indexer on a fused FP8 paged cache | %lld sequence(s), prompt %lld "
           "tokens, %lld steps x next_n %lld | %lld heads x D=%lld, top-%lld | cache blocks of %lld, %lld in the "
           "pool | %d threads, kernel set %s\n"
           "queries: act_quant per (token, head), %s | INT8 variant: %s\n",
           lig_version(), (long long)B, (long long)c.P, (long long)steps, (long long)nn, (long long)c.N1,
           (long long)c.D, (long long)K, (long long)c.block_kv, (long long)e.fp8.num_blocks, lig_get_num_threads(),
           lig_get_kernel_set(), c.q_scales ? "scales passed as query_dequant_scale" : "q scale folded into the weights",
           c.int8 ? "on" : "off");

    if (K >= d.ctx[B - 1])
        printf("note: top-%lld of a prompt of %lld keys selects every visible key: the recall is 1 by construction "
               "(raise --prompt or lower --topk)\n",
               (long long)K, (long long)d.ctx[B - 1]);
    const prefill_report pre = prefill(&e, d.ctx, &pre_rec);
    if (c.prefill_select)
        printf("prefill: %lld prompt tokens in chunks of %lld: key writes %.1f ms, FP8 selection %.2f s (%.1f M "
               "key-rows/s, kernels %s); recall@%lld vs bf16 on the last %lld rows of each prompt: mean %.4f, min %.4f\n",
               (long long)tokens, (long long)c.chunk, 1e3 * pre.write_s, pre.select_s,
               1e-6 * pre.key_rows / pre.select_s, pre.kernels, (long long)K, (long long)c.check_rows,
               recall_mean(&pre_rec), pre_rec.min);
    else
        printf("prefill: %lld prompt tokens written (%.1f ms); the prompts' selection skipped\n", (long long)tokens,
               1e3 * pre.write_s);

    rows_init(&d.r8, LIG_FLOAT8_E4M3FN, B, nn, &c);
    rows_init(&d.ri, LIG_INT8, B, nn, &c);
    rows_init(&d.rb, LIG_BFLOAT16, B, nn, &c);
    d.a8 = make_call(&e, &d.r8, d.lengths, e.table, 0);
    d.ai = make_call(&e, &d.ri, d.lengths, e.table, 0);
    d.ab = make_call(&e, &d.rb, d.lengths, e.table, 0);
    d.q = xcalloc((size_t)(c.N1 * c.D), sizeof(float));
    d.w = xcalloc((size_t)c.N1, sizeof(float));
    for (int i = 0; i < TIMES; i++) d.t[i] = xcalloc((size_t)steps, sizeof(double));
    d.k8 = d.ki = d.kb = "-";

    printf("%5s %8s %9s %9s %9s %9s %9s %9s\n", "step", "context", "write ms", "fp8 ms", "int8 ms", "bf16 ms",
           "fp8 rec", "int8 rec");
    int views_ok = 1;
    for (int64_t s = 0; s < steps; s++) {
        double rec_step[2];
        decode_step(&e, &d, s, rec_step);
        if (s == steps - 1) views_ok = views_match(&e, &d.r8, d.lengths);
        if (s == 0 || (s + 1) % c.every == 0 || s == steps - 1) {
            char i8_ms[16] = "-", i8_rec[16] = "-";
            if (c.int8) {
                snprintf(i8_ms, sizeof i8_ms, "%.3f", 1e3 * d.t[T_I8][s]);
                snprintf(i8_rec, sizeof i8_rec, "%.4f", rec_step[1]);
            }
            printf("%5lld %8lld %9.3f %9.3f %9s %9.3f %9.4f %9s\n", (long long)(s + 1), (long long)d.lengths[0],
                   1e3 * d.t[T_WRITE][s], 1e3 * d.t[T_FP8][s], i8_ms, 1e3 * d.t[T_BF16][s], rec_step[0], i8_rec);
        }
        accept_tokens(&c, d.ctx);
    }

    char head[96];
    snprintf(head, sizeof head, "per step, ms over %lld steps (%lld row(s) a step)", (long long)steps, (long long)(B * nn));
    printf("%-62s %8s %8s\n", head, "median", "p90");
    print_times("FP8 step: key write + query quantization + indexer", NULL, d.t[T_STEP], steps);
    print_times("  key write (act_quant into the fused cache)", NULL, d.t[T_WRITE], steps);
    print_times("  query act_quant", NULL, d.t[T_QUANT], steps);
    print_times("  lig_quant_indexer, both phases", d.k8, d.t[T_FP8], steps);
    if (c.int8) {
        print_times("INT8 step", NULL, d.t[T_I8_STEP], steps);
        print_times("  lig_quant_indexer, both phases", d.ki, d.t[T_I8], steps);
    }
    print_times("bf16 forward (lig_indexer, paged), both phases", d.kb, d.t[T_BF16], steps);
    printf("recall@%lld of the decode rows vs the bf16 selection (%lld rows): FP8 mean %.4f min %.4f", (long long)K,
           (long long)d.rec8.rows, recall_mean(&d.rec8), d.rec8.min);
    if (c.int8) printf(" | INT8 mean %.4f min %.4f", recall_mean(&d.reci), d.reci.min);
    printf("\nview check (the fused views vs a contiguous copy of the cache, last step): %s\n",
           views_ok ? "same bytes" : "DIFFERENT");

    int failed = !views_ok;
    const double fp8_mean = (d.rec8.sum + pre_rec.sum) / (double)(d.rec8.rows + pre_rec.rows);
    if (fp8_mean < c.min_recall) {
        fprintf(stderr, "FAILED: FP8 recall %.4f below %.3f\n", fp8_mean, c.min_recall);
        failed = 1;
    }
    if (c.int8 && recall_mean(&d.reci) < c.min_recall_int8) {
        fprintf(stderr, "FAILED: INT8 recall %.4f below %.3f\n", recall_mean(&d.reci), c.min_recall_int8);
        failed = 1;
    }

    destroy_call(&d.a8);
    destroy_call(&d.ai);
    destroy_call(&d.ab);
    rows_free(&d.r8);
    rows_free(&d.ri);
    rows_free(&d.rb);
    for (int i = 0; i < TIMES; i++) free(d.t[i]);
    void *buffers[] = {d.ctx, d.lengths, d.q, d.w, pre_rec.mark, d.rec8.mark, d.reci.mark};
    for (size_t i = 0; i < sizeof buffers / sizeof *buffers; i++) free(buffers[i]);
    engine_free(&e);
    demo_workspace_free();
    return failed;
}

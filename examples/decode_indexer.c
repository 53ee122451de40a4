/* A decode loop as an inference engine runs DeepSeek-V3.2's lightning indexer, on lig's quantized
 * forward: a prompt, then generated tokens, the indexer's keys kept in DeepGEMM's fused FP8 paged
 * cache (fused_cache.h) and read in place by lig_quant_indexer, the selection checked against
 * lig's bf16 forward on the unquantized data.
 *
 * Data (per sequence, seeded). Keys share a direction and a low-rank structure, as the indexer's
 * keys of a trained model do, with a few outlier channels:
 *   k_s = g .* ( m (1 + 0.25 xi) u  +  L z_s  +  0.5 n_s )
 * u a unit vector, m = 0.8 sqrt(D), L a D x r matrix (entries N(0, 1/r)), z_s ~ N(0, I_r),
 * n_s ~ N(0, I_D), g = 1 except every 32nd channel, 3. The query of token t attends to a few
 * earlier tokens (its "anchors": one among the last 32, the rest anywhere before it): head h is
 *   q_th = sqrt(D) sum_j c_thj k_aj / |k_aj|  +  0.5 L zeta_t  +  0.3 sqrt(D) (+-u)  +  0.5 nu_th
 * with c_thj = |N(0,1)| or 0 (each head follows about half the anchors), the sign of u alternating
 * over the heads, nu uniform noise of unit variance; its weight w_th = (0.5 + 0.5 N(0,1)) / sqrt(N1)
 * (a few heads negative, as the weights projection's output can be).
 *
 * Prefill. The prompt goes through the same cache, in chunks of --chunk tokens per sequence, as an
 * engine's chunked prefill: the chunk's keys are quantized and written at their slots, then one
 * lig_quant_indexer call selects the top-K of every row of the chunk against all keys so far
 * (sparse_mode 3: the rows sit at the end of the keys). The prompt's selection is what the sparse
 * attention of the prompt needs, so it is run (--no-prefill-select skips it); its recall against
 * the bf16 forward is measured on the last --check-rows rows of each prompt.
 *
 * Decode. Each step, every sequence adds next_n tokens (next_n = 2: the token and one speculative
 * draft, as DeepSeek's MTP; the draft is accepted with probability --accept, else the next step
 * overwrites its slot): their keys are quantized (act_quant per token) and written into the
 * fused cache, the rows' queries are quantized per (token, head) with DeepSeek's act_quant and
 * the q scale folded into the weights (w * sq, query_dequant_scale NULL, as DeepSeek and DeepGEMM
 * do; --q-scales passes sq as query_dequant_scale instead), and lig_quant_indexer (layout_key
 * "PA_BSND", the two strided views into the fused pool, the engine's block table) selects the
 * top-K of each row, row i seeing the keys < context - next_n + i + 1. Timed: the key write, the
 * query quantization and the indexer's two phases. The bf16 forward (lig_indexer over a bf16 paged
 * cache with the same table, bf16 queries and weights, unquantized) selects from the same data;
 * recall = |FP8 selection and bf16 selection| / |bf16 selection|, per row. The INT8 variant (its
 * own fused cache of int8 codes, amax / 127 scales, same table) runs the same steps (--no-int8
 * skips it); its prompt's selection is not run. At the last step the FP8 call is repeated on a
 * contiguous copy of the cache and must give the same bytes (the views are read correctly).
 *
 * Exits non-zero when the FP8 recall's mean falls below --min-recall, the INT8 one's below
 * --min-recall-int8, or the view check differs: a broken indexer, cache or view is caught.
 *
 *   lig-decode-indexer [--prompt P] [--steps N] [--next-n 1|2] [--batch B] [--heads N1] [--dim D]
 *                      [--topk K] [--block-kv 64] [--rank r] [--anchors A] [--chunk C]
 *                      [--check-rows R] [--accept p] [--every E] [--threads T] [--seed X]
 *                      [--min-recall x] [--min-recall-int8 x] [--q-scales] [--no-int8]
 *                      [--no-prefill-select]
 */
#define _POSIX_C_SOURCE 200809L
#include <lig.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fused_cache.h"

typedef struct config {
    int64_t P, steps, next_n, B, N1, D, K, block_kv, r, anchors, chunk, check_rows, every;
    double accept, min_recall, min_recall_int8;
    int threads, q_scales, int8, prefill_select;
    uint64_t seed;
} config;

/* ---- small utilities ------------------------------------------------------------------ */

static uint64_t rng = 42;
static uint64_t next_u64(void) { /* splitmix64 */
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double uniform01(void) { return ((double)(next_u64() >> 11) + 0.5) * 0x1p-53; }
static float gaussian(void) { return (float)(sqrt(-2.0 * log(uniform01())) * cos(6.283185307179586 * uniform01())); }
/* unit variance, cheap: the queries' per-head noise (N1 * D values per token) */
static float uniform_noise(void) { return (float)((uniform01() - 0.5) * 3.4641016151377544); }
static int64_t below(int64_t n) { return (int64_t)(uniform01() * (double)n); } /* in [0, n) */
static int64_t shuffle_pick(int64_t i) { return below(i + 1); }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static void check(lig_status st, const char *what) {
    if (st == LIG_SUCCESS) return;
    fprintf(stderr, "%s failed: %s: %s\n", what, lig_status_string(st), lig_get_last_error());
    exit(1);
}

static lig_tensor *tensor(void *data, lig_dtype dtype, int64_t ndim, const int64_t *shape, const int64_t *strides) {
    lig_tensor *t = lig_create_tensor(data, dtype, ndim, shape, strides);
    if (!t) {
        fprintf(stderr, "lig_create_tensor failed: %s\n", lig_get_last_error());
        exit(1);
    }
    return t;
}

/* the workspace, grown to the largest plan */
static void *workspace = NULL;
static uint64_t workspace_cap = 0;
static void reserve(uint64_t need) {
    if (need <= workspace_cap) return;
    free(workspace);
    workspace = xcalloc(1, need);
    workspace_cap = need;
}

static int by_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
/* the q-quantile of n values (nearest rank), n >= 1; sorts a copy */
static double quantile(const double *v, int64_t n, double q) {
    double *s = xcalloc((size_t)n, sizeof(double));
    memcpy(s, v, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof(double), by_double);
    int64_t i = (int64_t)ceil(q * (double)n) - 1;
    if (i < 0) i = 0;
    const double r = s[i];
    free(s);
    return r;
}

/* ---- the data ------------------------------------------------------------------------- */

typedef struct data_model {
    int64_t D, r, N1, anchors;
    float *u, *L, *g; /* [D], [D, r], [D] */
} data_model;

static void model_init(data_model *m, int64_t D, int64_t r, int64_t N1, int64_t anchors) {
    *m = (data_model){.D = D, .r = r, .N1 = N1, .anchors = anchors};
    m->u = xcalloc((size_t)D, 4);
    m->L = xcalloc((size_t)(D * r), 4);
    m->g = xcalloc((size_t)D, 4);
    double norm = 0;
    for (int64_t d = 0; d < D; d++) {
        m->u[d] = gaussian();
        norm += (double)m->u[d] * m->u[d];
    }
    for (int64_t d = 0; d < D; d++) {
        m->u[d] = (float)(m->u[d] / sqrt(norm));
        m->g[d] = d % 32 == 7 ? 3.0f : 1.0f;
    }
    for (int64_t i = 0; i < D * r; i++) m->L[i] = gaussian() / sqrtf((float)r);
}

static void model_free(data_model *m) {
    free(m->u);
    free(m->L);
    free(m->g);
}

/* out = L z for a fresh z ~ N(0, I_r), scaled by gain */
static void low_rank_sample(const data_model *m, float gain, float *z, float *out) {
    for (int64_t i = 0; i < m->r; i++) z[i] = gaussian();
    for (int64_t d = 0; d < m->D; d++) {
        float s = 0.0f;
        for (int64_t i = 0; i < m->r; i++) s += m->L[d * m->r + i] * z[i];
        out[d] = gain * s;
    }
}

static void gen_key(const data_model *m, float *z, float *k) {
    const float shared = 0.8f * sqrtf((float)m->D) * (1.0f + 0.25f * gaussian());
    low_rank_sample(m, 1.0f, z, k);
    for (int64_t d = 0; d < m->D; d++) k[d] = m->g[d] * (shared * m->u[d] + k[d] + 0.5f * gaussian());
}

/* The N1 heads of token `pos`'s query (q: [N1, D]) and their weights, from the keys before it
 * (keys: [>= pos, D] fp32, inv_norm: their 1 / |k|). */
static void gen_query(const data_model *m, const float *keys, const float *inv_norm, int64_t pos, float *z,
                      float *eta, float *q, float *w) {
    const int64_t D = m->D, A = pos > 0 ? m->anchors : 0;
    int64_t anchor[16];
    for (int64_t j = 0; j < A && j < 16; j++) {
        const int64_t recent = pos < 32 ? pos : 32;
        anchor[j] = j == 0 ? pos - 1 - below(recent) : below(pos);
    }
    low_rank_sample(m, 0.5f, z, eta);
    const float root_d = sqrtf((float)D);
    for (int64_t h = 0; h < m->N1; h++) {
        float *qh = q + h * D;
        const float sign = h % 2 ? -0.3f : 0.3f;
        for (int64_t d = 0; d < D; d++) qh[d] = eta[d] + sign * root_d * m->u[d] + 0.5f * uniform_noise();
        for (int64_t j = 0; j < A && j < 16; j++) {
            if (uniform01() < 0.5) continue;
            const float c = fabsf(gaussian()) * root_d * inv_norm[anchor[j]];
            const float *ka = keys + anchor[j] * D;
            for (int64_t d = 0; d < D; d++) qh[d] += c * ka[d];
        }
        w[h] = (0.5f + 0.5f * gaussian()) / sqrtf((float)m->N1);
    }
}

/* ---- quantized and bf16 forms of a query row -------------------------------------------- */

/* One token's query in the quantized form: codes [N1, D] per (token, head) act_quant, and either
 * the scale folded into the weight (wq = w * sq, sq not used) or kept apart (wq = w, sq). */
static void quantize_query(lig_dtype codes_dtype, const float *q, const float *w, int64_t N1, int64_t D,
                           int fold, uint8_t *codes, float *wq, float *sq) {
    for (int64_t h = 0; h < N1; h++) {
        const float scale = act_quant(codes_dtype, q + h * D, D, codes + h * D);
        wq[h] = fold ? w[h] * scale : w[h];
        sq[h] = fold ? 1.0f : scale;
    }
}

static void to_bf16(const float *x, int64_t n, uint16_t *out) {
    for (int64_t i = 0; i < n; i++) out[i] = lig_float_to_bfloat16(x[i]);
}

/* ---- recall ------------------------------------------------------------------------------ */

/* |a and ref| / |ref| over the indices >= 0 of two selections of K slots; mark: scratch of the
 * key range, all different from stamp on entry. */
static double recall(const int32_t *a, const int32_t *ref, int64_t K, int32_t *mark, int32_t stamp) {
    int64_t n = 0, hit = 0;
    for (int64_t j = 0; j < K; j++)
        if (ref[j] >= 0) {
            mark[ref[j]] = stamp;
            n++;
        }
    for (int64_t j = 0; j < K; j++)
        if (a[j] >= 0 && mark[a[j]] == stamp) hit++;
    return n ? (double)hit / (double)n : 1.0;
}

typedef struct recall_stats {
    double sum, min;
    int64_t rows;
} recall_stats;

static void recall_add(recall_stats *s, double r) {
    if (s->rows == 0 || r < s->min) s->min = r;
    s->sum += r;
    s->rows++;
}
static double recall_mean(const recall_stats *s) { return s->rows ? s->sum / (double)s->rows : 1.0; }

/* ---- the engine's state ---------------------------------------------------------------- */

typedef struct engine {
    config c;
    data_model m;
    int64_t cap, max_blocks;    /* positions and blocks per sequence */
    block_allocator alloc;
    int32_t *table;             /* [B, max_blocks], -1 where no block is assigned */
    int64_t *blocks_of;         /* [B]: blocks assigned */
    fused_cache fp8, i8;
    uint16_t *bf16_pool;        /* [num_blocks, block_kv, 1, D]: the bf16 forward's paged cache */
    float *keys, *inv_norm;     /* [B, cap, D], [B, cap]: the unquantized keys (the model's own) */
    float *z, *eta;             /* scratch */
    lig_tensor *fp8_codes, *fp8_scales, *i8_codes, *i8_scales, *bf16_cache;
} engine;

static void engine_init(engine *e, const config *c) {
    e->c = *c;
    const int64_t bkv = c->block_kv, D = c->D;
    model_init(&e->m, D, c->r, c->N1, c->anchors);
    e->cap = c->P + c->steps * c->next_n + c->next_n;
    e->max_blocks = (e->cap + bkv - 1) / bkv;
    const int64_t num_blocks = c->B * e->max_blocks + 7; /* a few spare blocks: the allocator's other users */
    block_allocator_init(&e->alloc, num_blocks, shuffle_pick);
    e->table = xcalloc((size_t)(c->B * e->max_blocks), sizeof(int32_t));
    for (int64_t i = 0; i < c->B * e->max_blocks; i++) e->table[i] = -1;
    e->blocks_of = xcalloc((size_t)c->B, sizeof(int64_t));
    fused_cache_init(&e->fp8, LIG_FLOAT8_E4M3FN, num_blocks, bkv, D);
    fused_cache_init(&e->i8, LIG_INT8, c->int8 ? num_blocks : 1, bkv, D);
    e->bf16_pool = xcalloc((size_t)(num_blocks * bkv * D), 2);
    e->keys = xcalloc((size_t)(c->B * e->cap * D), 4);
    e->inv_norm = xcalloc((size_t)(c->B * e->cap), 4);
    e->z = xcalloc((size_t)c->r, 4);
    e->eta = xcalloc((size_t)D, 4);
    e->fp8_codes = fused_cache_code_view(&e->fp8);
    e->fp8_scales = fused_cache_scale_view(&e->fp8);
    e->i8_codes = fused_cache_code_view(&e->i8);
    e->i8_scales = fused_cache_scale_view(&e->i8);
    if (!e->fp8_codes || !e->fp8_scales || !e->i8_codes || !e->i8_scales) check(LIG_ERR_INNER, "cache views");
    const int64_t bshape[4] = {num_blocks, bkv, 1, D};
    e->bf16_cache = tensor(e->bf16_pool, LIG_BFLOAT16, 4, bshape, NULL);
}

static void engine_free(engine *e) {
    lig_destroy_tensor(e->fp8_codes);
    lig_destroy_tensor(e->fp8_scales);
    lig_destroy_tensor(e->i8_codes);
    lig_destroy_tensor(e->i8_scales);
    lig_destroy_tensor(e->bf16_cache);
    fused_cache_free(&e->fp8);
    fused_cache_free(&e->i8);
    block_allocator_free(&e->alloc);
    model_free(&e->m);
    free(e->table);
    free(e->blocks_of);
    free(e->bf16_pool);
    free(e->keys);
    free(e->inv_norm);
    free(e->z);
    free(e->eta);
}

/* Draws the key of sequence b's token at pos (the model's; outside the timed part). */
static void make_key(engine *e, int64_t b, int64_t pos) {
    const int64_t D = e->c.D;
    float *k = e->keys + (b * e->cap + pos) * D;
    gen_key(&e->m, e->z, k);
    double n = 0;
    for (int64_t d = 0; d < D; d++) n += (double)k[d] * k[d];
    e->inv_norm[b * e->cap + pos] = (float)(1.0 / sqrt(n));
}

/* The engine's slot of (b, pos): allocates the block when pos starts a new one. */
static void slot_of(engine *e, int64_t b, int64_t pos, int32_t *block, int64_t *row) {
    const int64_t bi = pos / e->c.block_kv;
    while (e->blocks_of[b] <= bi) e->table[b * e->max_blocks + e->blocks_of[b]++] = block_allocator_take(&e->alloc);
    *block = e->table[b * e->max_blocks + bi];
    *row = pos % e->c.block_kv;
}

/* Writes the key of (b, pos) into one cache: fused (act_quant) or the bf16 pool. */
static void write_key(engine *e, fused_cache *fc, int64_t b, int64_t pos) {
    int32_t block;
    int64_t row;
    slot_of(e, b, pos, &block, &row);
    const float *k = e->keys + (b * e->cap + pos) * e->c.D;
    if (fc) fused_cache_write(fc, block, row, k);
    else to_bf16(k, e->c.D, e->bf16_pool + ((int64_t)block * e->c.block_kv + row) * e->c.D);
}

/* ---- one indexer call ------------------------------------------------------------------ */

typedef struct call_args {
    lig_tensor *q, *w, *sq, *codes, *scales, *table, *lengths, *idx, *val; /* sq, val may be NULL */
} call_args;

/* Both phases of lig_quant_indexer (quantized codes) or of the paged bf16 forward (scales NULL). */
static const char *run_indexer(const call_args *a, int64_t K) {
    uint64_t need = 0;
    lig_executor *ex = NULL;
    if (a->scales)
        check(lig_quant_indexer_get_workspace_size(a->q, a->codes, a->w, a->sq, a->scales, NULL, a->lengths, a->table,
                                                   0, 0, "BSND", "PA_BSND", K, 3, INT64_MAX, INT64_MAX, a->idx,
                                                   a->val, &need, &ex),
              "lig_quant_indexer_get_workspace_size");
    else
        check(lig_indexer_paged_get_workspace_size(a->q, a->codes, a->table, a->w, NULL, a->lengths, "BSND", K, 3,
                                                   INT64_MAX, INT64_MAX, a->idx, a->val, &need, &ex),
              "lig_indexer_paged_get_workspace_size");
    const char *kernels = lig_executor_kernel_set(ex);
    reserve(need);
    check(a->scales ? lig_quant_indexer(workspace, workspace_cap, ex, NULL) : lig_indexer(workspace, workspace_cap, ex, NULL),
          a->scales ? "lig_quant_indexer" : "lig_indexer");
    return kernels;
}

static void destroy_call(call_args *a) {
    lig_destroy_tensor(a->q);
    lig_destroy_tensor(a->w);
    lig_destroy_tensor(a->sq);
    lig_destroy_tensor(a->lengths);
    lig_destroy_tensor(a->table);
    lig_destroy_tensor(a->idx);
    lig_destroy_tensor(a->val);
}

/* Query-side buffers of `rows` rows per batch for B batches: the call's tensors over them. */
typedef struct query_rows {
    int64_t B, rows;
    uint8_t *codes; /* [B, rows, N1, D] */
    uint16_t *bf16; /* [B, rows, N1, D] (bf16 form only) */
    float *wq, *sq; /* [B, rows, N1] */
    uint16_t *wb;   /* [B, rows, N1] bf16 weights */
    int32_t *idx;   /* [B, rows, K] */
    float *val;     /* [B, rows, K] (the view check only) */
} query_rows;

static void rows_init(query_rows *r, int64_t B, int64_t rows, int64_t N1, int64_t D, int64_t K, int bf16) {
    *r = (query_rows){.B = B, .rows = rows};
    const size_t n = (size_t)(B * rows);
    if (bf16) {
        r->bf16 = xcalloc(n * (size_t)(N1 * D), 2);
        r->wb = xcalloc(n * (size_t)N1, 2);
    } else {
        r->codes = xcalloc(n * (size_t)(N1 * D), 1);
        r->wq = xcalloc(n * (size_t)N1, 4);
        r->sq = xcalloc(n * (size_t)N1, 4);
    }
    r->idx = xcalloc(n * (size_t)K, 4);
    r->val = xcalloc(n * (size_t)K, 4);
}

static void rows_free(query_rows *r) {
    free(r->codes);
    free(r->bf16);
    free(r->wq);
    free(r->sq);
    free(r->wb);
    free(r->idx);
    free(r->val);
}

/* The tensors of a call over rows r, keys of `e` in the form codes_dtype (LIG_BFLOAT16: the bf16
 * forward), lengths[B] and the table rows from `table` (B rows of max_blocks). */
static call_args make_call(const engine *e, const query_rows *r, lig_dtype codes_dtype, int64_t *lengths,
                           int32_t *table, int with_values) {
    const int64_t B = r->B, S1 = r->rows, N1 = e->c.N1, D = e->c.D, K = e->c.K;
    const int64_t qs[4] = {B, S1, N1, D}, ws[3] = {B, S1, N1}, is[3] = {B, S1, K}, ls[1] = {B};
    const int64_t ts[2] = {B, e->max_blocks};
    call_args a = {0};
    if (codes_dtype == LIG_BFLOAT16) {
        a.q = tensor(r->bf16, LIG_BFLOAT16, 4, qs, NULL);
        a.w = tensor(r->wb, LIG_BFLOAT16, 3, ws, NULL);
        a.codes = e->bf16_cache;
    } else {
        a.q = tensor(r->codes, codes_dtype, 4, qs, NULL);
        a.w = tensor(r->wq, LIG_FLOAT32, 3, ws, NULL);
        if (e->c.q_scales) a.sq = tensor(r->sq, LIG_FLOAT32, 3, ws, NULL);
        a.codes = codes_dtype == LIG_INT8 ? e->i8_codes : e->fp8_codes;
        a.scales = codes_dtype == LIG_INT8 ? e->i8_scales : e->fp8_scales;
    }
    a.lengths = tensor(lengths, LIG_INT64, 1, ls, NULL);
    a.table = tensor(table, LIG_INT32, 2, ts, NULL);
    a.idx = tensor(r->idx, LIG_INT32, 3, is, NULL);
    if (with_values) a.val = tensor(r->val, LIG_FLOAT32, 3, is, NULL);
    return a;
}

/* Fills row (b, i) of the quantized and bf16 query buffers from the model's query of (b, pos). */
static void fill_row(engine *e, int64_t b, int64_t pos, float *q, float *w, query_rows *fp8, query_rows *i8,
                     query_rows *bf, int64_t i_fp8, int64_t i_i8, int64_t i_bf) {
    const int64_t N1 = e->c.N1, D = e->c.D;
    gen_query(&e->m, e->keys + b * e->cap * e->c.D, e->inv_norm + b * e->cap, pos, e->z, e->eta, q, w);
    const int fold = !e->c.q_scales;
    if (fp8 && i_fp8 >= 0)
        quantize_query(LIG_FLOAT8_E4M3FN, q, w, N1, D, fold, fp8->codes + i_fp8 * N1 * D, fp8->wq + i_fp8 * N1,
                       fp8->sq + i_fp8 * N1);
    if (i8 && i_i8 >= 0)
        quantize_query(LIG_INT8, q, w, N1, D, fold, i8->codes + i_i8 * N1 * D, i8->wq + i_i8 * N1, i8->sq + i_i8 * N1);
    if (bf && i_bf >= 0) {
        to_bf16(q, N1 * D, bf->bf16 + i_bf * N1 * D);
        to_bf16(w, N1, bf->wb + i_bf * N1);
    }
}

/* ---- the prompt -------------------------------------------------------------------------- */

typedef struct prefill_report {
    double write_s, select_s, key_rows;
    recall_stats rec;
    const char *kernels;
} prefill_report;

static prefill_report prefill(engine *e, const int64_t *prompt, int32_t *mark, int32_t *stamp) {
    const config *c = &e->c;
    const int64_t N1 = c->N1, D = c->D, K = c->K;
    prefill_report rep = {.kernels = "-"};
    float *q = xcalloc((size_t)(N1 * D), 4), *w = xcalloc((size_t)N1, 4);
    query_rows fp8, bf;
    rows_init(&fp8, 1, c->chunk, N1, D, K, 0);
    rows_init(&bf, 1, c->check_rows, N1, D, K, 1);
    for (int64_t b = 0; b < c->B; b++) {
        for (int64_t start = 0; start < prompt[b]; start += c->chunk) {
            const int64_t rows = prompt[b] - start < c->chunk ? prompt[b] - start : c->chunk;
            const int last = start + rows == prompt[b];
            const int64_t R = last ? (rows < c->check_rows ? rows : c->check_rows) : 0;
            for (int64_t p = start; p < start + rows; p++) make_key(e, b, p);
            /* the chunk's keys into the caches (only the FP8 write is timed: it is the engine's) */
            double t0 = now();
            for (int64_t p = start; p < start + rows; p++) write_key(e, &e->fp8, b, p);
            rep.write_s += now() - t0;
            for (int64_t p = start; p < start + rows; p++) {
                if (c->int8) write_key(e, &e->i8, b, p);
                write_key(e, NULL, b, p);
            }
            if (!c->prefill_select) continue;
            for (int64_t i = 0; i < rows; i++)
                fill_row(e, b, start + i, q, w, &fp8, NULL, &bf, i, -1, i - (rows - R));
            int64_t len = start + rows;
            fp8.rows = rows;
            call_args a = make_call(e, &fp8, LIG_FLOAT8_E4M3FN, &len, e->table + b * e->max_blocks, 0);
            t0 = now();
            rep.kernels = run_indexer(&a, K);
            rep.select_s += now() - t0;
            destroy_call(&a);
            rep.key_rows += (double)rows * (double)(start + 1) + (double)rows * (double)(rows - 1) / 2.0;
            if (R == 0) continue;
            bf.rows = R;
            call_args ab = make_call(e, &bf, LIG_BFLOAT16, &len, e->table + b * e->max_blocks, 0);
            run_indexer(&ab, K);
            destroy_call(&ab);
            for (int64_t i = 0; i < R; i++)
                recall_add(&rep.rec, recall(fp8.idx + (rows - R + i) * K, bf.idx + i * K, K, mark, ++*stamp));
        }
    }
    rows_free(&fp8);
    rows_free(&bf);
    free(q);
    free(w);
    return rep;
}

/* ---- the view check: the fused views against a contiguous copy of the cache -------------- */

static int views_match(const engine *e, query_rows *r, int64_t *lengths) {
    const int64_t nb = e->fp8.num_blocks, bkv = e->c.block_kv, D = e->c.D, K = e->c.K;
    const int64_t n = r->B * r->rows * K;
    uint8_t *codes = xcalloc((size_t)(nb * bkv * D), 1);
    float *scales = xcalloc((size_t)(nb * bkv), 4);
    for (int64_t blk = 0; blk < nb; blk++) {
        const uint8_t *base = e->fp8.pool + blk * bkv * (D + 4);
        memcpy(codes + blk * bkv * D, base, (size_t)(bkv * D));
        memcpy(scales + blk * bkv, base + bkv * D, (size_t)bkv * 4);
    }
    call_args a = make_call(e, r, LIG_FLOAT8_E4M3FN, lengths, e->table, 1);
    run_indexer(&a, K);
    int32_t *idx = xcalloc((size_t)n, 4);
    float *val = xcalloc((size_t)n, 4);
    memcpy(idx, r->idx, (size_t)n * 4);
    memcpy(val, r->val, (size_t)n * 4);
    const int64_t cs[4] = {nb, bkv, 1, D}, ss[3] = {nb, bkv, 1};
    a.codes = tensor(codes, LIG_FLOAT8_E4M3FN, 4, cs, NULL);
    a.scales = tensor(scales, LIG_FLOAT32, 3, ss, NULL);
    run_indexer(&a, K);
    const int same = !memcmp(idx, r->idx, (size_t)n * 4) && !memcmp(val, r->val, (size_t)n * 4);
    lig_destroy_tensor(a.codes);
    lig_destroy_tensor(a.scales);
    destroy_call(&a);
    free(codes);
    free(scales);
    free(idx);
    free(val);
    return same;
}

/* ---- the command line -------------------------------------------------------------------- */

static void usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s [--prompt P] [--steps N] [--next-n 1|2] [--batch B] [--heads N1] [--dim D] [--topk K]\n"
            "          [--block-kv 64] [--rank r] [--anchors A] [--chunk C] [--check-rows R] [--accept p]\n"
            "          [--every E] [--threads T] [--seed X] [--min-recall x] [--min-recall-int8 x]\n"
            "          [--q-scales] [--no-int8] [--no-prefill-select]\n",
            argv0);
    exit(2);
}

static config parse(int argc, char **argv) {
    config c = {.P = 8192, .steps = 64, .next_n = 1, .B = 1, .N1 = 64, .D = 128, .K = 2048, .block_kv = 64,
                .r = 16, .anchors = 4, .chunk = 2048, .check_rows = 64, .every = 8, .accept = 0.7,
                .min_recall = 0.95, .min_recall_int8 = 0.95, .threads = 0, .q_scales = 0, .int8 = 1,
                .prefill_select = 1, .seed = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--q-scales")) {
            c.q_scales = 1;
            continue;
        }
        if (!strcmp(a, "--no-int8")) {
            c.int8 = 0;
            continue;
        }
        if (!strcmp(a, "--no-prefill-select")) {
            c.prefill_select = 0;
            continue;
        }
        if (i + 1 >= argc) usage(argv[0]);
        const char *v = argv[++i];
        if (!strcmp(a, "--accept")) c.accept = atof(v);
        else if (!strcmp(a, "--min-recall")) c.min_recall = atof(v);
        else if (!strcmp(a, "--min-recall-int8")) c.min_recall_int8 = atof(v);
        else {
            const long long x = atoll(v);
            if (x < 1 && strcmp(a, "--seed")) usage(argv[0]);
            if (!strcmp(a, "--prompt")) c.P = x;
            else if (!strcmp(a, "--steps")) c.steps = x;
            else if (!strcmp(a, "--next-n")) c.next_n = x;
            else if (!strcmp(a, "--batch")) c.B = x;
            else if (!strcmp(a, "--heads")) c.N1 = x;
            else if (!strcmp(a, "--dim")) c.D = x;
            else if (!strcmp(a, "--topk")) c.K = x;
            else if (!strcmp(a, "--block-kv")) c.block_kv = x;
            else if (!strcmp(a, "--rank")) c.r = x;
            else if (!strcmp(a, "--anchors")) c.anchors = x > 16 ? 16 : x;
            else if (!strcmp(a, "--chunk")) c.chunk = x;
            else if (!strcmp(a, "--check-rows")) c.check_rows = x;
            else if (!strcmp(a, "--every")) c.every = x;
            else if (!strcmp(a, "--threads")) c.threads = (int)x;
            else if (!strcmp(a, "--seed")) c.seed = (uint64_t)x;
            else usage(argv[0]);
        }
    }
    if (c.next_n > 4) c.next_n = 4;
    return c;
}

/* ---- the loop ------------------------------------------------------------------------------ */

int main(int argc, char **argv) {
    const config c = parse(argc, argv);
    rng = c.seed * 0x2545f4914f6cdd1dull + 11;
    if (c.threads) lig_set_num_threads(c.threads);
    const int64_t B = c.B, nn = c.next_n, N1 = c.N1, D = c.D, K = c.K;

    engine e;
    engine_init(&e, &c);
    /* prompts of different lengths, as a batch of requests has: sequence b's is P (1 - b / (4B)) */
    int64_t *prompt = xcalloc((size_t)B, sizeof(int64_t)), *ctx = xcalloc((size_t)B, sizeof(int64_t));
    for (int64_t b = 0; b < B; b++) prompt[b] = c.P - (c.P * b) / (4 * B) > 1 ? c.P - (c.P * b) / (4 * B) : 1;
    int32_t *mark = xcalloc((size_t)e.cap, 4), stamp = 0;

    printf("lig %s: decode with the lightning indexer on a fused FP8 paged cache | %lld sequence(s), prompt %lld "
           "tokens, %lld steps x next_n %lld | %lld heads x D=%lld, top-%lld | cache blocks of %lld, %lld in the "
           "pool | %d threads, kernel set %s\n"
           "queries: act_quant per (token, head), %s | INT8 variant: %s\n",
           lig_version(), (long long)B, (long long)c.P, (long long)c.steps, (long long)nn, (long long)N1, (long long)D,
           (long long)K, (long long)c.block_kv, (long long)e.fp8.num_blocks, lig_get_num_threads(),
           lig_get_kernel_set(), c.q_scales ? "scales passed as query_dequant_scale" : "q scale folded into the weights",
           c.int8 ? "on" : "off");

    const prefill_report pre = prefill(&e, prompt, mark, &stamp);
    for (int64_t b = 0; b < B; b++) ctx[b] = prompt[b];
    if (c.prefill_select)
        printf("prefill: %lld prompt tokens in chunks of %lld: key writes %.1f ms, FP8 selection %.2f s (%.1f M "
               "key-rows/s, kernels %s); recall@%lld vs bf16 on the last %lld rows: mean %.4f, min %.4f\n",
               (long long)c.P, (long long)c.chunk, 1e3 * pre.write_s, pre.select_s, 1e-6 * pre.key_rows / pre.select_s,
               pre.kernels, (long long)K, (long long)(c.check_rows), recall_mean(&pre.rec), pre.rec.min);
    else
        printf("prefill: %lld prompt tokens written (%.1f ms); the prompt's selection skipped\n", (long long)c.P,
               1e3 * pre.write_s);

    /* the decode step's rows: B x next_n, each form */
    query_rows r8, ri, rb;
    rows_init(&r8, B, nn, N1, D, K, 0);
    rows_init(&ri, B, nn, N1, D, K, 0);
    rows_init(&rb, B, nn, N1, D, K, 1);
    int64_t *lengths = xcalloc((size_t)B, sizeof(int64_t));
    call_args a8 = make_call(&e, &r8, LIG_FLOAT8_E4M3FN, lengths, e.table, 0);
    call_args ai = make_call(&e, &ri, LIG_INT8, lengths, e.table, 0);
    call_args ab = make_call(&e, &rb, LIG_BFLOAT16, lengths, e.table, 0);
    float *q = xcalloc((size_t)(N1 * D), 4), *w = xcalloc((size_t)N1, 4);

    const int64_t steps = c.steps;
    double *t_write = xcalloc((size_t)steps, 8), *t_qq = xcalloc((size_t)steps, 8), *t_fp8 = xcalloc((size_t)steps, 8);
    double *t_i8 = xcalloc((size_t)steps, 8), *t_i8_step = xcalloc((size_t)steps, 8), *t_bf = xcalloc((size_t)steps, 8);
    double *t_step = xcalloc((size_t)steps, 8);
    recall_stats rec8 = {0}, reci = {0};
    const char *k8 = "-", *ki = "-", *kb = "-";
    int views_ok = 1;
    printf("%5s %8s %9s %9s %9s %9s %9s %9s\n", "step", "context", "write ms", "fp8 ms", "int8 ms", "bf16 ms",
           "fp8 rec", "int8 rec");
    for (int64_t s = 0; s < steps; s++) {
        /* the model's new tokens: keys, then queries (not timed: the model produces them) */
        for (int64_t b = 0; b < B; b++)
            for (int64_t i = 0; i < nn; i++) make_key(&e, b, ctx[b] + i);
        for (int64_t b = 0; b < B; b++) lengths[b] = ctx[b] + nn;
        /* FP8: write the new keys, quantize the rows, select */
        double t0 = now();
        for (int64_t b = 0; b < B; b++)
            for (int64_t i = 0; i < nn; i++) write_key(&e, &e.fp8, b, ctx[b] + i);
        t_write[s] = now() - t0;
        for (int64_t b = 0; b < B; b++)
            for (int64_t i = 0; i < nn; i++) {
                const int64_t row = b * nn + i;
                fill_row(&e, b, ctx[b] + i, q, w, NULL, NULL, &rb, -1, -1, row);
                t0 = now();
                quantize_query(LIG_FLOAT8_E4M3FN, q, w, N1, D, !c.q_scales, r8.codes + row * N1 * D, r8.wq + row * N1,
                               r8.sq + row * N1);
                t_qq[s] += now() - t0;
                if (c.int8)
                    quantize_query(LIG_INT8, q, w, N1, D, !c.q_scales, ri.codes + row * N1 * D, ri.wq + row * N1,
                                   ri.sq + row * N1);
            }
        t0 = now();
        k8 = run_indexer(&a8, K);
        t_fp8[s] = now() - t0;
        t_step[s] = t_write[s] + t_qq[s] + t_fp8[s];
        /* INT8: its own cache write and call (its query quantization is a copy of the FP8 one's cost) */
        double rec_i8 = 0;
        if (c.int8) {
            t0 = now();
            for (int64_t b = 0; b < B; b++)
                for (int64_t i = 0; i < nn; i++) write_key(&e, &e.i8, b, ctx[b] + i);
            const double tw = now() - t0;
            t0 = now();
            ki = run_indexer(&ai, K);
            t_i8[s] = now() - t0;
            t_i8_step[s] = tw + t_qq[s] + t_i8[s];
        }
        /* bf16 reference */
        for (int64_t b = 0; b < B; b++)
            for (int64_t i = 0; i < nn; i++) write_key(&e, NULL, b, ctx[b] + i);
        t0 = now();
        kb = run_indexer(&ab, K);
        t_bf[s] = now() - t0;
        double rec_f8 = 0;
        for (int64_t row = 0; row < B * nn; row++) {
            const double r = recall(r8.idx + row * K, rb.idx + row * K, K, mark, ++stamp);
            recall_add(&rec8, r);
            rec_f8 += r / (double)(B * nn);
            if (c.int8) {
                const double ri8 = recall(ri.idx + row * K, rb.idx + row * K, K, mark, ++stamp);
                recall_add(&reci, ri8);
                rec_i8 += ri8 / (double)(B * nn);
            }
        }
        if (s == steps - 1) views_ok = views_match(&e, &r8, lengths);
        if (s == 0 || (s + 1) % c.every == 0 || s == steps - 1) {
            char i8_ms[16] = "-", i8_rec[16] = "-";
            if (c.int8) {
                snprintf(i8_ms, sizeof i8_ms, "%.3f", 1e3 * t_i8[s]);
                snprintf(i8_rec, sizeof i8_rec, "%.4f", rec_i8);
            }
            printf("%5lld %8lld %9.3f %9.3f %9s %9.3f %9.4f %9s\n", (long long)(s + 1), (long long)lengths[0],
                   1e3 * t_write[s], 1e3 * t_fp8[s], i8_ms, 1e3 * t_bf[s], rec_f8, i8_rec);
        }
        /* acceptance: the first token always, each draft with probability accept until one fails */
        for (int64_t b = 0; b < B; b++) {
            int64_t accepted = 1;
            while (accepted < nn && uniform01() < c.accept) accepted++;
            ctx[b] += accepted;
        }
    }

    printf("per step (ms over %lld steps)          median      p90\n", (long long)steps);
    printf("  FP8 step: key write + q quant + indexer %8.3f %8.3f\n", 1e3 * quantile(t_step, steps, 0.5),
           1e3 * quantile(t_step, steps, 0.9));
    printf("    key write (act_quant, fused cache)   %8.3f %8.3f\n", 1e3 * quantile(t_write, steps, 0.5),
           1e3 * quantile(t_write, steps, 0.9));
    printf("    query act_quant                      %8.3f %8.3f\n", 1e3 * quantile(t_qq, steps, 0.5),
           1e3 * quantile(t_qq, steps, 0.9));
    printf("    lig_quant_indexer (both phases, %s) %8.3f %8.3f\n", k8, 1e3 * quantile(t_fp8, steps, 0.5),
           1e3 * quantile(t_fp8, steps, 0.9));
    if (c.int8) {
        printf("  INT8 step                              %8.3f %8.3f\n", 1e3 * quantile(t_i8_step, steps, 0.5),
               1e3 * quantile(t_i8_step, steps, 0.9));
        printf("    lig_quant_indexer (both phases, %s) %8.3f %8.3f\n", ki, 1e3 * quantile(t_i8, steps, 0.5),
               1e3 * quantile(t_i8, steps, 0.9));
    }
    printf("  bf16 forward (lig_indexer, %s)       %8.3f %8.3f\n", kb, 1e3 * quantile(t_bf, steps, 0.5),
           1e3 * quantile(t_bf, steps, 0.9));
    printf("recall@%lld of the decode rows vs the bf16 selection (%lld rows): FP8 mean %.4f min %.4f", (long long)K,
           (long long)rec8.rows, recall_mean(&rec8), rec8.min);
    if (c.int8) printf(" | INT8 mean %.4f min %.4f", recall_mean(&reci), reci.min);
    printf("\nview check (fused views vs a contiguous copy of the cache, last step): %s\n",
           views_ok ? "same bytes" : "DIFFERENT");

    int failed = !views_ok;
    recall_stats all8 = rec8;
    if (pre.rec.rows) {
        all8.sum += pre.rec.sum;
        all8.rows += pre.rec.rows;
        if (pre.rec.min < all8.min) all8.min = pre.rec.min;
    }
    if (recall_mean(&all8) < c.min_recall) {
        fprintf(stderr, "FAILED: FP8 recall %.4f below %.3f\n", recall_mean(&all8), c.min_recall);
        failed = 1;
    }
    if (c.int8 && recall_mean(&reci) < c.min_recall_int8) {
        fprintf(stderr, "FAILED: INT8 recall %.4f below %.3f\n", recall_mean(&reci), c.min_recall_int8);
        failed = 1;
    }

    destroy_call(&a8);
    destroy_call(&ai);
    destroy_call(&ab);
    rows_free(&r8);
    rows_free(&ri);
    rows_free(&rb);
    engine_free(&e);
    free(prompt);
    free(ctx);
    free(mark);
    free(lengths);
    free(q);
    free(w);
    free(t_write);
    free(t_qq);
    free(t_fp8);
    free(t_i8);
    free(t_i8_step);
    free(t_bf);
    free(t_step);
    free(workspace);
    return failed;
}

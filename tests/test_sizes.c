/*
 * Sizes that do not fit (contract 6.3): element counts near 2^62, byte counts past 2^64 and strides
 * whose span overflows, for lig_create_tensor and every operator's phase 1. Each must be refused
 * with LIG_ERR_PARAM_INVALID and a message naming the operand, leaving the workspace size and the
 * executor untouched, where a wrapped product would have planned a small workspace instead.
 *
 * Huge inputs broadcast over a few bytes (zero strides). Huge outputs cannot: an output's elements
 * need memory of their own, so they get a made-up address above 2^62, which phase 1 compares with
 * the inputs' addresses but never dereferences (nothing here runs phase 2).
 */
#include <stdint.h>
#include <string.h>

#include "error_cases.h"
#include "framework.h"
#include "lig.h"

#define P(e) ((int64_t)1 << (e))
#define UNTOUCHED_WS UINT64_C(0x5a5a5a5a)

static const int64_t zeros[LIG_MAX_DIMS] = {0};
static float small[16];
static int64_t small_index[16];

/* The k-th made-up output address, 2^62 + k 2^61: above any real host address, with room for
 * 2^61 bytes (2^59 FLOAT32 or 2^58 INT64 elements) before the next. */
static void *far_output(int k) { return (void *)(uintptr_t)((uint64_t)P(62) + (uint64_t)k * (uint64_t)P(61)); }

typedef struct tensor_set {
    lig_tensor *t[12];
    int n;
} tensor_set;

static lig_tensor *add(tensor_set *s, void *data, lig_dtype dtype, int64_t ndim, const int64_t *shape,
                       const int64_t *strides) {
    lig_tensor *t = lig_create_tensor(data, dtype, ndim, shape, strides);
    CHECK(t != NULL, "creating a tensor of %lld dims: %s", (long long)ndim, lig_get_last_error());
    s->t[s->n++] = t;
    return t;
}

/* An input of any shape over `small` (every stride 0). */
static lig_tensor *broadcast(tensor_set *s, lig_dtype dtype, int64_t ndim, const int64_t *shape) {
    const int index = dtype == LIG_INT32 || dtype == LIG_INT64;
    return add(s, index ? (void *)small_index : (void *)small, dtype, ndim, shape, zeros);
}

static int all_made(const tensor_set *s) {
    for (int i = 0; i < s->n; i++)
        if (!s->t[i]) return 0;
    return 1;
}

static void release(tensor_set *s) {
    for (int i = 0; i < s->n; i++) lig_destroy_tensor(s->t[i]);
    s->n = 0;
}

/* The verdict on a phase 1 that must refuse a size. */
static void expect_too_large(const char *label, lig_status st, uint64_t ws, const lig_executor *exec,
                             const char *names) {
    CHECK(st == LIG_ERR_PARAM_INVALID, "%s: status %d, expected LIG_ERR_PARAM_INVALID (workspace %llu)", label,
          (int)st, (unsigned long long)ws);
    if (st != LIG_SUCCESS) {
        check_error_message(label, lig_get_last_error(), names);
        th_note("%s: %s", label, lig_get_last_error());
    }
    CHECK(ws == UNTOUCHED_WS, "%s: the workspace size was written (%llu)", label, (unsigned long long)ws);
    CHECK(exec == NULL, "%s: an executor was returned", label);
    if (exec) lig_destroy_executor((lig_executor *)exec);
}

static void expect_refused_tensor(const char *label, lig_dtype dtype, int64_t ndim, const int64_t *shape,
                                  const int64_t *strides, const char *names) {
    lig_tensor *t = lig_create_tensor(small, dtype, ndim, shape, strides);
    CHECK(t == NULL, "%s: accepted", label);
    lig_destroy_tensor(t);
    if (!t) {
        check_error_message(label, lig_get_last_error(), names);
        th_note("%s: %s", label, lig_get_last_error());
    }
}

LIG_TEST(sizes_create_tensor) {
    const int64_t contiguous_2_62[2] = {P(31), P(31)};
    const int64_t count_2_64[3] = {P(31), P(31), 4};
    expect_refused_tensor("2^62 contiguous FLOAT32 elements (2^64 bytes)", LIG_FLOAT32, 2, contiguous_2_62, NULL,
                          "shape");
    expect_refused_tensor("2^64 elements", LIG_FLOAT32, 3, count_2_64, zeros, "shape");
    const int64_t two[2] = {3, 2}, wraps[2] = {P(62), 1};
    expect_refused_tensor("a span of 2 x 2^62 elements", LIG_INT32, 2, two, wraps, "strides");
    const int64_t pair[2] = {2, 2}, sum_wraps[2] = {P(62) + P(61), P(62) + P(61)};
    expect_refused_tensor("a span whose sum passes 2^63", LIG_INT32, 2, pair, sum_wraps, "strides");
    const int64_t one_d[1] = {2}, bytes_wrap[1] = {P(61)};
    expect_refused_tensor("a span of 2^61 INT64 elements (2^64 bytes)", LIG_INT64, 1, one_d, bytes_wrap, "strides");
    /* the same logical sizes are fine as broadcasts: nothing is addressed past the first element */
    lig_tensor *b = lig_create_tensor(small, LIG_FLOAT32, 2, contiguous_2_62, zeros);
    CHECK(b != NULL, "a broadcast of 2^62 elements refused: %s", lig_get_last_error());
    lig_destroy_tensor(b);
}

/* A one-row forward: query [1,1,1,D], key [1,S2,1,D], K slots. */
static lig_status forward(int64_t D, int64_t S2, int64_t K, uint64_t *ws, lig_executor **exec) {
    tensor_set s = {0};
    const int64_t q[4] = {1, 1, 1, D}, k[4] = {1, S2, 1, D}, w[3] = {1, 1, 1}, idx[4] = {1, 1, 1, K};
    const lig_tensor *query = broadcast(&s, LIG_FLOAT32, 4, q), *key = broadcast(&s, LIG_FLOAT32, 4, k);
    const lig_tensor *weights = broadcast(&s, LIG_FLOAT32, 3, w);
    const lig_tensor *indices = add(&s, far_output(0), LIG_INT64, 4, idx, NULL);
    lig_status st = LIG_ERR_INNER;
    if (all_made(&s))
        st = lig_indexer_get_workspace_size(query, key, weights, NULL, NULL, "BSND", K, 0, INT64_MAX, INT64_MAX,
                                            indices, NULL, ws, exec);
    release(&s);
    return st;
}

LIG_TEST(sizes_forward) {
    uint64_t ws = UNTOUCHED_WS;
    lig_executor *exec = NULL;
    /* 2^58 candidates kept: 80 bytes each of top-k scratch, past 2^64 */
    lig_status st = forward(1, P(58), P(58), &ws, &exec);
    expect_too_large("forward, K = 2^58 over 2^58 keys", st, ws, exec, "sparse_count");
    /* D = 2^62 (an input of 2^62 elements): the fp32 copy of a query row alone is 2^64 bytes */
    ws = UNTOUCHED_WS, exec = NULL;
    st = forward(P(62), 1, 1, &ws, &exec);
    expect_too_large("forward, D = 2^62", st, ws, exec, "query");
}

/* The quantized forward over broadcast INT8 / FP8 inputs (one key head, one query head). */
static lig_status quant_forward(lig_dtype qk, int64_t D, int64_t S2, int64_t K, uint64_t *ws, lig_executor **exec) {
    tensor_set s = {0};
    const int64_t q[4] = {1, 1, 1, D}, k[4] = {1, S2, 1, D}, w[3] = {1, 1, 1}, sk[3] = {1, S2, 1}, idx[4] = {1, 1, 1, K};
    const lig_tensor *query = broadcast(&s, qk, 4, q), *key = broadcast(&s, qk, 4, k);
    const lig_tensor *weights = broadcast(&s, LIG_FLOAT32, 3, w), *scales = broadcast(&s, LIG_FLOAT32, 3, sk);
    const lig_tensor *indices = add(&s, far_output(0), LIG_INT64, 4, idx, NULL);
    lig_status st = LIG_ERR_INNER;
    if (all_made(&s))
        st = lig_quant_indexer_get_workspace_size(query, key, weights, NULL, scales, NULL, NULL, NULL, 0, 0, "BSND",
                                                  "BSND", K, 0, INT64_MAX, INT64_MAX, indices, NULL, ws, exec);
    release(&s);
    return st;
}

LIG_TEST(sizes_quant_forward) {
    uint64_t ws = UNTOUCHED_WS;
    lig_executor *exec = NULL;
    /* 2^58 candidates kept: the top-k scratch passes 2^64 bytes, as in the plain forward */
    lig_status st = quant_forward(LIG_INT8, 1, P(58), P(58), &ws, &exec);
    expect_too_large("quantized forward, K = 2^58 over 2^58 keys", st, ws, exec, "sparse_count");
    /* D = 2^62 INT8 codes: their fp32 copy (and the chunks' int64 sums) pass 2^64 bytes */
    ws = UNTOUCHED_WS, exec = NULL;
    st = quant_forward(LIG_INT8, P(62), 1, 1, &ws, &exec);
    expect_too_large("quantized forward, INT8 D = 2^62", st, ws, exec, "query");
    ws = UNTOUCHED_WS, exec = NULL;
    st = quant_forward(LIG_FLOAT8_E4M3FN, P(61), 1, 1, &ws, &exec);
    expect_too_large("quantized forward, FP8 D = 2^61", st, ws, exec, "query");
}

/* A forward whose every tensor is empty (no heads): nothing but the checks bounds B and S1. */
static void headless_forward(const char *label, int64_t B, int64_t S1) {
    tensor_set s = {0};
    const int64_t q[4] = {B, S1, 0, 1}, w[3] = {B, S1, 0}, idx[4] = {B, S1, 0, 1};
    const lig_tensor *query = broadcast(&s, LIG_FLOAT32, 4, q), *key = broadcast(&s, LIG_FLOAT32, 4, q);
    const lig_tensor *weights = broadcast(&s, LIG_FLOAT32, 3, w), *indices = add(&s, far_output(0), LIG_INT64, 4, idx, NULL);
    uint64_t ws = UNTOUCHED_WS;
    lig_executor *exec = NULL;
    if (all_made(&s)) {
        const lig_status st = lig_indexer_get_workspace_size(query, key, weights, NULL, NULL, "BSND", 1, 0, INT64_MAX,
                                                             INT64_MAX, indices, NULL, &ws, &exec);
        expect_too_large(label, st, ws, exec, "query");
    }
    release(&s);
}

LIG_TEST(sizes_batch_count) {
    /* 5B = 2^64 + 4: the per-batch lengths (5B + 1 int64 values) would wrap to 40 bytes */
    headless_forward("forward, B = 2^64 / 5", (int64_t)(UINT64_MAX / 5 + 1), 1);
    /* 2^20 batches of 2^44 rows: 2^64 query rows. The extents of one tensor multiply to less than
     * 2^63 even where one is 0 (contract 6.2), so such a query is refused when it is made. */
    const int64_t rows_wrap[4] = {P(20), P(44), 0, 1};
    expect_refused_tensor("query of 2^20 x 2^44 rows and no heads", LIG_FLOAT32, 4, rows_wrap, zeros, "shape");
}

/* A paged forward: B batches of one query row, a cache [1, block_size, 1, 1] read through a table
 * [B, max_blocks]; each batch has `lk` keys. */
static lig_status paged(int64_t B, int64_t max_blocks, int64_t block_size, int64_t lk, int64_t K, uint64_t *ws,
                        lig_executor **exec) {
    tensor_set s = {0};
    const int64_t q[4] = {B, 1, 1, 1}, c[4] = {1, block_size, 1, 1}, t[2] = {B, max_blocks}, w[3] = {B, 1, 1};
    const int64_t idx[4] = {B, 1, 1, K}, lens[1] = {B};
    int64_t lengths[4] = {lk, lk, lk, lk};
    const lig_tensor *query = broadcast(&s, LIG_FLOAT32, 4, q), *cache = broadcast(&s, LIG_FLOAT32, 4, c);
    const lig_tensor *table = broadcast(&s, LIG_INT32, 2, t), *weights = broadcast(&s, LIG_FLOAT32, 3, w);
    const lig_tensor *key_lengths = add(&s, lengths, LIG_INT64, 1, lens, NULL);
    const lig_tensor *indices = add(&s, far_output(0), LIG_INT64, 4, idx, NULL);
    lig_status st = LIG_ERR_INNER;
    if (all_made(&s) && B <= 4)
        st = lig_indexer_paged_get_workspace_size(query, cache, table, weights, NULL, key_lengths, "BSND", K, 0,
                                                  INT64_MAX, INT64_MAX, indices, NULL, ws, exec);
    release(&s);
    return st;
}

LIG_TEST(sizes_paged_forward) {
    uint64_t ws = UNTOUCHED_WS;
    lig_executor *exec = NULL;
    /* 4 batches of 2^31 blocks of 2^31 keys: 2^64 key rows */
    lig_status st = paged(4, P(31), P(31), 1, 1, &ws, &exec);
    expect_too_large("paged forward, 4 x 2^62 key rows", st, ws, exec, "block_table");
    /* one batch of 2^58 keys, all kept */
    ws = UNTOUCHED_WS, exec = NULL;
    st = paged(1, P(27), P(31), P(58), P(58), &ws, &exec);
    expect_too_large("paged forward, K = 2^58 over 2^58 keys", st, ws, exec, "sparse_count");
}

/* A backward over query [1,S1,N1,D], key [1,S2,N2,D], K slots; the outputs shaped like query and
 * key get made-up addresses when they have elements. */
static lig_status backward(int64_t S1, int64_t N1, int64_t S2, int64_t N2, int64_t D, int64_t K, uint64_t *ws,
                           lig_executor **exec) {
    tensor_set s = {0};
    const int64_t q[4] = {1, S1, N1, D}, k[4] = {1, S2, N2, D}, w[3] = {1, S1, N1}, slots[4] = {1, S1, N2, K};
    const lig_tensor *query = broadcast(&s, LIG_FLOAT32, 4, q), *key = broadcast(&s, LIG_FLOAT32, 4, k);
    const lig_tensor *weights = broadcast(&s, LIG_FLOAT32, 3, w), *dy = broadcast(&s, LIG_FLOAT32, 4, slots);
    const lig_tensor *indices = broadcast(&s, LIG_INT64, 4, slots);
    const lig_tensor *d_query = add(&s, far_output(0), LIG_FLOAT32, 4, q, NULL);
    const lig_tensor *d_key = add(&s, far_output(1), LIG_FLOAT32, 4, k, NULL);
    const lig_tensor *d_weights = add(&s, far_output(2), LIG_FLOAT32, 3, w, NULL);
    lig_status st = LIG_ERR_INNER;
    if (all_made(&s))
        st = lig_indexer_grad_get_workspace_size(query, key, dy, indices, weights, NULL, NULL, 0, "BSND", 0,
                                                 INT64_MAX, INT64_MAX, true, d_query, d_key, d_weights, ws, exec);
    release(&s);
    return st;
}

LIG_TEST(sizes_backward) {
    uint64_t ws = UNTOUCHED_WS;
    lig_executor *exec = NULL;
    /* 2^31 rows x 2^33 key heads of no slots: the slot tensors are refused when they are made (the
     * extent rule of contract 6.2), so the units' count cannot wrap */
    const int64_t units_wrap[4] = {1, P(31), P(33), 0};
    expect_refused_tensor("sparse_indices of 2^31 rows x 2^33 key heads, no slots", LIG_INT64, 4, units_wrap, zeros,
                          "shape");
    /* D = 2^59: each thread's fp32 copies of the query heads and a block of keys pass 2^64 bytes */
    lig_status st = backward(1, 1, 1, 1, P(59), 1, &ws, &exec);
    expect_too_large("backward, D = 2^59", st, ws, exec, "query");
}

/* The KL step over slots of `shape`; dy gets a made-up address when it has elements. */
static lig_status kl(int64_t ndim, const int64_t *shape, uint64_t *ws, lig_executor **exec) {
    tensor_set s = {0};
    const int64_t one[1] = {1};
    static float loss_value;
    const lig_tensor *values = broadcast(&s, LIG_FLOAT32, ndim, shape), *target = broadcast(&s, LIG_FLOAT32, ndim, shape);
    const lig_tensor *loss = add(&s, &loss_value, LIG_FLOAT32, 1, one, NULL);
    const lig_tensor *dy = add(&s, far_output(0), LIG_FLOAT32, ndim, shape, NULL);
    lig_status st = LIG_ERR_INNER;
    if (all_made(&s)) st = lig_kl_loss_and_dy_get_workspace_size(values, NULL, target, loss, dy, ws, exec);
    release(&s);
    return st;
}

LIG_TEST(sizes_kl_step) {
    uint64_t ws = UNTOUCHED_WS;
    lig_executor *exec = NULL;
    /* 2^64 rows of no slots: refused when the values tensor is made (contract 6.2) */
    const int64_t rows_wrap[3] = {P(32), P(32), 0};
    expect_refused_tensor("sparse_values of 2^64 rows, no slots", LIG_FLOAT32, 3, rows_wrap, zeros, "shape");
    /* one row of 2^59 slots: 13 bytes of row scratch per slot for each of 4 threads */
    const int threads = lig_get_num_threads();
    lig_set_num_threads(4);
    const int64_t wide[2] = {1, P(59)};
    lig_status st = kl(2, wide, &ws, &exec);
    lig_set_num_threads(threads);
    expect_too_large("KL step, 4 threads x 2^59 slots", st, ws, exec, "sparse_values");
}

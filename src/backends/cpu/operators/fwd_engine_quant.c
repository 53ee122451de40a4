/* The quantized forward's portable engine (see fwd_engine.h; docs/contract.md 2.4), for
 * FLOAT8_E4M3FN or INT8 queries and keys on every kernel set: per pass the query heads of a few
 * rows are converted to fp32 (exact: every FP8 and INT8 value is an fp32 value) and transposed,
 * one column per row and head, with their weights and query scales; per block of keys the key
 * rows and their scales are converted once, for all the pass's rows, and S^T = K Q^T runs on the
 * set's fp32 GEMM, whose every product of two converted values is exact. Then the scales, the
 * ReLU and the weighted head sum (lig_quant_scores__scalar).
 *
 * INT8: the GEMM's sums are exact integers while every partial sum stays within 2^24, which D
 * products of at most 128 * 128 = 2^14 do for D <= 1024. A longer D is cut into chunks of 1024
 * whose GEMMs are exact; their integer values are added in int64 and rounded to fp32 once, so
 * the dot product is the exact integer rounded once for every D.
 * A SIMD engine (int8 dot products, converted fp8 into bf16 units) can sit beside this one: the
 * planner picks the engine, the operator is the same. */
#include "backends/cpu/operators/fwd_engine.h"
#include "core/dtype_convert.h"
#include "core/workspace.h"

/* INT8 products per exact fp32 chunk: 1024 * 2^14 = 2^24, the largest exact fp32 integer range. */
#define INT8_CHUNK 1024

typedef lig_fwd_f32_layout layout; /* acc: int64[block*rows*G], INT8 with D > INT8_CHUNK: the chunks' sum */

static bool chunked(const lig_fwd_ctx *c) { return c->dtype == LIG_INT8 && c->D > INT8_CHUNK; }

static layout layout_for(const lig_fwd_ctx *c) {
    const uint64_t cols = lig_size_mul((uint64_t)c->rows, (uint64_t)c->G);
    return lig_fwd_f32_layout_for(c, true, chunked(c) ? lig_size_mul3(sizeof(int64_t), cols, (uint64_t)c->block) : 0);
}

static uint64_t scratch_bytes(const lig_fwd_ctx *c) { return layout_for(c).total; }

static int64_t elem_size(lig_dtype d) { return d == LIG_FLOAT32 ? 4 : d == LIG_FLOAT16 || d == LIG_BFLOAT16 ? 2 : 1; }

static void begin_rows(const lig_fwd_ctx *c, char *s, int64_t rows, const char *const *q, const char *const *w,
                       const char *const *sq) {
    const layout L = layout_for(c);
    const int64_t G = c->G, D = c->D, cols = rows * G;
    const int64_t we = elem_size(c->w_dtype), se = elem_size(c->sq_dtype);
    float *qt = (float *)(void *)(s + L.qt), *wf = (float *)(void *)(s + L.w), *sqf = (float *)(void *)(s + L.sq);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t h = 0; h < G; h++) {
            const char *qp = q[r] + h * c->q_head; /* one byte an element */
            for (int64_t d = 0; d < D; d++) qt[d * cols + r * G + h] = lig_load_float(c->dtype, qp + d * c->q_dim);
            wf[r * G + h] = lig_load_float(c->w_dtype, w[r] + h * c->w_head * we);
            if (c->has_sq) sqf[r * G + h] = lig_load_float(c->sq_dtype, sq[r] + h * c->sq_head * se);
        }
}

/* S^T of an INT8 block with D > INT8_CHUNK: exact chunk products added as integers, rounded once. */
static void int8_chunked_dots(const lig_fwd_ctx *c, const layout *L, char *s, int64_t nb, int64_t cols) {
    const int64_t D = c->D, n = nb * cols;
    const float *kp = (const float *)(void *)(s + L->kp), *qt = (const float *)(void *)(s + L->qt);
    float *a = (float *)(void *)(s + L->a);
    int64_t *acc = (int64_t *)(void *)(s + L->acc);
    for (int64_t i = 0; i < n; i++) acc[i] = 0;
    for (int64_t d0 = 0; d0 < D; d0 += INT8_CHUNK) {
        const int64_t kc = D - d0 < INT8_CHUNK ? D - d0 : INT8_CHUNK;
        lig_f32_gemm(&c->ks->f32->gemm, nb, cols, kc, kp + d0, D, 1, qt + d0 * cols, cols, a, cols, false);
        for (int64_t i = 0; i < n; i++) acc[i] += (int64_t)a[i]; /* an exact integer below 2^24 */
    }
    for (int64_t i = 0; i < n; i++) a[i] = (float)acc[i]; /* one rounding to nearest even (lig's fp mode) */
}

static void score_block(const lig_fwd_ctx *c, char *s, int64_t rows, int64_t nb, const char *const *key,
                        const char *const *key_scale, float *score) {
    const layout L = layout_for(c);
    const int64_t G = c->G, D = c->D, cols = rows * G;
    const float *qt = (const float *)(void *)(s + L.qt), *w = (const float *)(void *)(s + L.w);
    const float *sqf = c->has_sq ? (const float *)(void *)(s + L.sq) : NULL;
    float *kp = (float *)(void *)(s + L.kp), *sk = (float *)(void *)(s + L.sk), *a = (float *)(void *)(s + L.a);
    /* the block's keys converted once, for every row of the pass */
    for (int64_t n = 0; n < nb; n++) {
        for (int64_t d = 0; d < D; d++) kp[n * D + d] = lig_load_float(c->dtype, key[n] + d * c->k_dim);
        sk[n] = lig_load_float(c->sk_dtype, key_scale[n]);
    }
    if (chunked(c)) int8_chunked_dots(c, &L, s, nb, cols);
    else lig_f32_gemm(&c->ks->f32->gemm, nb, cols, D, kp, D, 1, qt, cols, a, cols, false); /* S^T[n][r*G+h] */
    for (int64_t r = 0; r < rows; r++)
        lig_quant_scores__scalar(a + r * G, nb, cols, G, sk, sqf ? sqf + r * G : NULL, w + r * G, score + r * c->block);
}

/* the set's fp32 GEMM runs the products: the plan reports the set's fp32 kernels */
static const char *kernels_name(const lig_fwd_ctx *c) { return c->ks->f32->name; }

static void configure(lig_fwd_ctx *c) { c->block = c->ks->f32->fwd_block; }

const lig_fwd_engine lig_fwd_engine_quant = {
    .kernels_name = kernels_name, .configure = configure, .scratch_bytes = scratch_bytes, .begin_rows = begin_rows,
    .score_block = score_block};

/* The quantized forward's portable engine (see fwd_engine.h; docs/contract.md 2.4), for
 * FLOAT8_E4M3FN or INT8 queries and keys on every kernel set: per stripe the query heads of a few
 * rows are converted to fp32 (exact: every FP8 and INT8 value is an fp32 value) and transposed,
 * one column per row and head, with their weights and query scales; per block of keys the key
 * rows and their scales are converted once, for all the stripe's rows, and S^T = K Q^T runs on the
 * set's fp32 GEMM, whose every product of two converted values is exact. Then the scales, the
 * ReLU and the weighted head sum (the set's quant_scores, bit for bit lig_quant_scores__scalar's).
 *
 * INT8: the GEMM's sums are exact integers while every partial sum stays within 2^24, which D
 * products of at most 128 * 128 = 2^14 do for D <= 1024. A longer D is cut into chunks of 1024
 * whose GEMMs are exact; their integer values are added in int64 and rounded to fp32 once, so
 * the dot product is the exact integer rounded once for every D.
 * The planner gives INT8 to the int8 engine (fwd_engine_i8.c, exact int32 dot products, the same
 * bits) unless D passes the set's int8 max_k, and FP8 to the bf16 engine (fwd_engine_fp8.c) on
 * sets with bf16 units; this engine runs the rest (lig_fwd_quant_engine_for). */
#include "backends/cpu/operators/fwd_engine.h"
#include "backends/cpu/operators/quant_operands.h"
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

static void begin_rows(const lig_fwd_ctx *c, char *s, int64_t rows, const char *const *q, const char *const *w,
                       const char *const *sq) {
    const layout L = layout_for(c);
    const int64_t G = c->G, D = c->D, cols = rows * G;
    float *qt = (float *)(void *)(s + L.qt);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t h = 0; h < G; h++) {
            const char *qp = q[r] + h * c->q_head; /* one byte an element */
            for (int64_t d = 0; d < D; d++) qt[d * cols + r * G + h] = lig_load_float(c->dtype, qp + d * c->q_dim);
        }
    lig_quant_load_weights(c, rows, w, sq, (float *)(void *)(s + L.w), (float *)(void *)(s + L.sq), cols);
}

/* The block's key rows in fp32: FP8 rows along unit stride through the set's converter (one call
 * when they lie evenly spaced), everything else one value at a time; the same values either way. */
static void load_keys(const lig_fwd_ctx *c, int64_t nb, const char *const *key, float *kp) {
    const int64_t D = c->D;
    const bool fp8_rows = c->dtype == LIG_FLOAT8_E4M3FN && c->k_dim == 1;
    const int64_t stride = fp8_rows ? lig_quant_rows_stride(nb, key) : 0;
    if (stride > 0) {
        c->ks->fp8->to_f32(nb, D, (const uint8_t *)key[0], stride, kp, D);
        return;
    }
    for (int64_t n = 0; n < nb; n++) {
        if (fp8_rows) c->ks->fp8->to_f32(1, D, (const uint8_t *)key[n], D, kp + n * D, D);
        else
            for (int64_t d = 0; d < D; d++) kp[n * D + d] = lig_load_float(c->dtype, key[n] + d * c->k_dim);
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
    /* the block's keys converted once, for every row of the stripe */
    load_keys(c, nb, key, kp);
    lig_quant_load_key_scales(c, nb, key_scale, sk);
    if (chunked(c)) int8_chunked_dots(c, &L, s, nb, cols);
    else lig_f32_gemm(&c->ks->f32->gemm, nb, cols, D, kp, D, 1, qt, cols, a, cols, false); /* S^T[n][r*G+h] */
    for (int64_t r = 0; r < rows; r++)
        c->ks->f32->quant_scores(a + r * G, nb, cols, G, sk, sqf ? sqf + r * G : NULL, w + r * G, score + r * c->block);
}

/* the set's fp32 GEMM runs the products: the plan reports the set's fp32 kernels */
static const char *kernels_name(const lig_fwd_ctx *c) { return c->ks->f32->name; }

static void configure(lig_fwd_ctx *c) { c->block = c->ks->f32->fwd_block; }

const lig_fwd_engine lig_fwd_engine_quant_portable = {
    .kernels_name = kernels_name, .configure = configure, .scratch_bytes = scratch_bytes, .begin_rows = begin_rows,
    .score_block = score_block};

const lig_fwd_engine *lig_fwd_quant_engine_for(const lig_kernel_set *ks, lig_dtype dtype, int64_t D) {
    if (dtype == LIG_FLOAT4_E2M1X2) return &lig_fwd_engine_mxfp4;
    if (dtype == LIG_INT8 && D <= ks->i8->gemm.max_k) return &lig_fwd_engine_i8;
    if (dtype == LIG_FLOAT8_E4M3FN && ks->bf16 != NULL) return &lig_fwd_engine_fp8;
    return &lig_fwd_engine_quant_portable;
}

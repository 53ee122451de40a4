/* The backward's fp32 engine (see grad_engine.h). Per unit the G query heads are converted to
 * fp32 once, row-major and transposed; per block the gathered key rows are converted, then
 *   S^T = K Q^T,  gate (A^T = [S > 0] w dy, dW += [S > 0] S dy),  dQ += A K,  C = A^T Q
 * through the set's GEMM micro-kernels, which read their left operand through strides, so no
 * block is ever transposed. The contributions C carry their dy already: scale 1. */
#include <string.h>

#include "backends/cpu/operators/grad_engine.h"
#include "core/dtype_convert.h"
#include "core/workspace.h"

/* Byte offsets inside the engine's scratch (each region 64-byte aligned). */
typedef struct layout {
    uint64_t q;  /* float[G*D]: the unit's query heads in fp32 */
    uint64_t qt; /* float[D*G]: the same, transposed (the scores' B panel) */
    uint64_t dq; /* float[G*D]: dQ accumulators */
    uint64_t kp; /* float[block*D]: the block's key rows in fp32 */
    uint64_t a;  /* float[block*G]: scores S^T, then the gated coefficients A^T */
    uint64_t w;  /* float[G] */
    uint64_t dw; /* float[G] */
    uint64_t total;
} layout;

/* A region and 256 bytes more: regions whose sizes are multiples of 4 KiB would otherwise
 * start on the same L1 sets, and the products read three of them at once. */
static uint64_t take_skewed(uint64_t *at, uint64_t bytes) { return lig_ws_take(at, lig_size_add(bytes, 256)); }

static layout layout_for(const lig_grad_ctx *c) {
    layout l;
    uint64_t at = 0, f = sizeof(float);
    const uint64_t G = (uint64_t)c->G, D = (uint64_t)c->D, nb = (uint64_t)c->block;
    l.q = take_skewed(&at, lig_size_mul3(f, G, D));
    l.qt = take_skewed(&at, lig_size_mul3(f, G, D));
    l.dq = take_skewed(&at, lig_size_mul3(f, G, D));
    l.kp = take_skewed(&at, lig_size_mul3(f, nb, D));
    l.a = take_skewed(&at, lig_size_mul3(f, nb, G));
    l.w = take_skewed(&at, lig_size_mul(f, G));
    l.dw = take_skewed(&at, lig_size_mul(f, G));
    l.total = at;
    return l;
}

static uint64_t scratch_bytes(const lig_grad_ctx *c) { return layout_for(c).total; }

static void begin_unit(const lig_grad_ctx *c, char *s, const char *q_rows, const char *w_elems) {
    const layout L = layout_for(c);
    const int64_t G = c->G, D = c->D, esize = (int64_t)(c->dtype == LIG_FLOAT32 ? 4 : 2);
    const int64_t w_esize = (int64_t)(c->w_dtype == LIG_FLOAT32 ? 4 : 2);
    float *q = (float *)(s + L.q), *qt = (float *)(s + L.qt), *w = (float *)(s + L.w);
    for (int64_t i = 0; i < G; i++) {
        c->ks->f32->load_row(c->dtype, q_rows + i * c->q_head * esize, c->q_dim, D, q + i * D);
        w[i] = lig_load_float(c->w_dtype, w_elems + i * c->w_head * w_esize);
    }
    for (int64_t i = 0; i < G; i++)
        for (int64_t d = 0; d < D; d++) qt[d * G + i] = q[i * D + d];
    memset(s + L.dq, 0, sizeof(float) * (size_t)(G * D));
    memset(s + L.dw, 0, sizeof(float) * (size_t)G);
}

static void block(const lig_grad_ctx *c, char *s, int64_t nb, const char *const *key, const float *dy,
                  const char *const *next_key, int64_t next_n, float *contrib, float *scale) {
    const layout L = layout_for(c);
    const int64_t G = c->G, D = c->D;
    const lig_kernel_set *ks = c->ks;
    const float *q = (const float *)(s + L.q), *qt = (const float *)(s + L.qt), *w = (const float *)(s + L.w);
    float *kp = (float *)(s + L.kp), *at = (float *)(s + L.a), *dq = (float *)(s + L.dq), *dw = (float *)(s + L.dw);

    for (int64_t n = 0; n < nb; n++) ks->f32->load_row(c->dtype, key[n], c->k_dim, D, kp + n * D);
    lig_prefetch_rows(next_key, next_n, D, c->dtype == LIG_FLOAT32 ? 4 : 2, c->k_dim);
    lig_f32_gemm(&ks->f32->gemm, nb, G, D, kp, D, 1, qt, G, at, G, false); /* S^T[n][h] = k_n . q_h */
    ks->f32->grad_gate(at, nb, G, w, dy, dw); /* strict: the ReLU's gradient at 0 is 0 */
    lig_f32_gemm(&ks->f32->gemm, G, D, nb, at, 1, G, kp, D, dq, D, true); /* dQ[h] += sum_n A[h][n] k_n */
    lig_f32_gemm(&ks->f32->gemm, nb, D, G, at, G, 1, q, D, contrib, D, false); /* C[n] = sum_h A[h][n] q_h */
    for (int64_t n = 0; n < nb; n++) scale[n] = 1.0f;
}

static void end_unit(const lig_grad_ctx *c, char *s, char *dq_rows, char *dw_elems) {
    const layout L = layout_for(c);
    const float *dq = (const float *)(s + L.dq), *dw = (const float *)(s + L.dw);
    const int64_t dq_esize = (int64_t)(c->dq_dtype == LIG_FLOAT32 ? 4 : 2);
    const int64_t dw_esize = (int64_t)(c->dw_dtype == LIG_FLOAT32 ? 4 : 2);
    for (int64_t i = 0; i < c->G; i++) {
        c->ks->f32->store_row(dq + i * c->D, c->D, c->dq_dtype, dq_rows + i * c->dq_head * dq_esize, c->dq_dim);
        lig_store_float(c->dw_dtype, dw_elems + i * c->dw_head * dw_esize, dw[i]);
    }
}

static const char *kernels_name(const lig_grad_ctx *c) { return c->ks->f32->name; }

static void configure(lig_grad_ctx *c) {
    c->block = c->ks->f32->grad_block;
    c->contrib_ld = c->D;
}

const lig_grad_engine lig_grad_engine_f32 = {
    .kernels_name = kernels_name, .configure = configure, .scratch_bytes = scratch_bytes, .begin_unit = begin_unit,
    .block = block, .end_unit = end_unit};

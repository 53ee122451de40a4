/* The forward's fp32 engine (see fwd_engine.h): per stripe the query heads of a few rows are
 * converted to fp32 and transposed (one column per row and head); per block the key rows are
 * converted, S^T = K Q^T goes through the set's GEMM micro-kernels and the set's score kernel
 * sums w_h ReLU(S) over each row's heads. */
#include "backends/cpu/operators/fwd_engine.h"
#include "core/dtype_convert.h"
#include "core/workspace.h"

typedef lig_fwd_f32_layout layout;

static layout layout_for(const lig_fwd_ctx *c) { return lig_fwd_f32_layout_for(c, false, 0); }

static uint64_t scratch_bytes(const lig_fwd_ctx *c) { return layout_for(c).total; }

static void begin_rows(const lig_fwd_ctx *c, char *s, int64_t rows, const char *const *q, const char *const *w,
                       const char *const *sq) {
    (void)sq; /* unquantized: no scales */
    const layout L = layout_for(c);
    const int64_t G = c->G, D = c->D, cols = rows * G, esize = (int64_t)(c->dtype == LIG_FLOAT32 ? 4 : 2);
    const int64_t wsize = (int64_t)(c->w_dtype == LIG_FLOAT32 ? 4 : 2);
    float *qt = (float *)(void *)(s + L.qt), *wf = (float *)(void *)(s + L.w);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t h = 0; h < G; h++) {
            /* a transposed load: the head's row becomes column r*G + h of qt */
            const char *qp = q[r] + h * c->q_head * esize;
            for (int64_t d = 0; d < D; d++) qt[d * cols + r * G + h] = lig_load_float(c->dtype, qp + d * c->q_dim * esize);
            wf[r * G + h] = lig_load_float(c->w_dtype, w[r] + h * c->w_head * wsize);
        }
}

static void score_block(const lig_fwd_ctx *c, char *s, int64_t rows, int64_t nb, const char *const *key,
                        const char *const *key_scale, float *score) {
    (void)key_scale;
    const layout L = layout_for(c);
    const int64_t G = c->G, D = c->D, cols = rows * G;
    const lig_kernel_set *ks = c->ks;
    const float *qt = (const float *)(void *)(s + L.qt), *w = (const float *)(void *)(s + L.w);
    float *kp = (float *)(void *)(s + L.kp), *a = (float *)(void *)(s + L.a);
    for (int64_t n = 0; n < nb; n++) ks->f32->load_row(c->dtype, key[n], c->k_dim, D, kp + n * D);
    lig_f32_gemm(&ks->f32->gemm, nb, cols, D, kp, D, 1, qt, cols, a, cols, false); /* S^T[n][r*G+h] = k_n . q_rh */
    for (int64_t r = 0; r < rows; r++) /* I_r[n] = sum_h w_rh ReLU(S[n][r*G+h]) */
        ks->f32->fwd_scores(a + r * G, nb, cols, G, w + r * G, score + r * c->block);
}

static const char *kernels_name(const lig_fwd_ctx *c) { return c->ks->f32->name; }

static void configure(lig_fwd_ctx *c) { c->block = c->ks->f32->fwd_block; }

const lig_fwd_engine lig_fwd_engine_f32 = {
    .kernels_name = kernels_name, .configure = configure, .scratch_bytes = scratch_bytes, .begin_rows = begin_rows,
    .score_block = score_block};

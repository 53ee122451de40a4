/* The quantized forward's INT8 engine (see fwd_engine.h; docs/contract.md 2.4) on the kernel
 * set's int8 GEMM (vpmaddwd pairs, vpdpbusd quads, or the portable 4x4): per stripe the query
 * heads of the stripe's rows (one column per row and head) are gathered and packed once as the
 * GEMM's B operand in the layout the set's configuration states (pack_b, sized by
 * lig_i8_packed_b_bytes: this file never reads the layout); per block of keys the key rows are the
 * A operand, read in place when they lie evenly spaced (one copy otherwise), and one GEMM gives
 * every row's exact int32 dot products of the block at once. The set's score kernel then converts
 * each to fp32 (one rounding to nearest even: the value the portable engine's exact integer sum
 * rounds to) and applies the scales, the ReLU and the head sum in the contract's order, so the
 * scores are the portable engine's bit for bit on every set.
 *
 * Exact while D <= the config's max_k (every partial sum within int32); the planner gives a longer
 * D to the portable engine. */
#include <string.h>

#include "backends/cpu/operators/fwd_engine.h"
#include "backends/cpu/operators/quant_operands.h"
#include "core/workspace.h"

/* keys per block: about 100, a multiple of the set's mr; a block's int32 dot products (96 keys x
 * 64 columns: 24 KiB) and the packed queries stay in L1/L2 */
#define BLOCK_KEYS 96

typedef struct layout {
    uint64_t qb; /* int8[rows*G][D]: the stripe's query heads, contiguous along D */
    uint64_t bp; /* the packed B operand (the set's layout) */
    uint64_t w;  /* float[rows*G] */
    uint64_t sq; /* float[rows*G] (has_sq) */
    uint64_t kb; /* int8[block][D]: the block's keys when they cannot be read in place */
    uint64_t sk; /* float[block] */
    uint64_t c;  /* int32[block][rows*G]: the block's dot products */
    uint64_t total;
} layout;

static const lig_i8_gemm_config *gemm_of(const lig_fwd_ctx *c) { return &c->ks->i8->gemm; }

static layout layout_for(const lig_fwd_ctx *c) {
    layout l;
    uint64_t at = 0;
    const lig_i8_gemm_config *g = gemm_of(c);
    const uint64_t cols = lig_size_mul((uint64_t)c->rows, (uint64_t)c->G), D = (uint64_t)c->D, nb = (uint64_t)c->block;
    const uint64_t panels = (cols + (uint64_t)g->nr - 1) / (uint64_t)g->nr;
    l.qb = lig_ws_take(&at, lig_size_mul(cols, D));
    l.bp = lig_ws_take(&at, lig_size_mul(panels, (uint64_t)lig_i8_panel_bytes(g, c->D)));
    l.w = lig_ws_take(&at, lig_size_mul(sizeof(float), cols));
    l.sq = lig_ws_take(&at, c->has_sq ? lig_size_mul(sizeof(float), cols) : 0);
    l.kb = lig_ws_take(&at, lig_size_mul(nb, D));
    l.sk = lig_ws_take(&at, lig_size_mul(sizeof(float), nb));
    l.c = lig_ws_take(&at, lig_size_mul3(sizeof(int32_t), nb, cols));
    l.total = at;
    return l;
}

static const char *kernels_name(const lig_fwd_ctx *c) { return c->ks->i8->name; }

static void configure(lig_fwd_ctx *c) {
    const int64_t mr = gemm_of(c)->mr;
    c->block = (BLOCK_KEYS + mr - 1) / mr * mr;
}

static uint64_t scratch_bytes(const lig_fwd_ctx *c) { return layout_for(c).total; }

static void begin_rows(const lig_fwd_ctx *c, char *s, int64_t rows, const char *const *q, const char *const *w,
                       const char *const *sq) {
    const layout L = layout_for(c);
    const int64_t G = c->G, D = c->D, cols = rows * G;
    int8_t *qb = (int8_t *)(s + L.qb);
    for (int64_t j = 0; j < cols; j++) {
        const int8_t *src = (const int8_t *)(q[j / G] + (j % G) * c->q_head);
        int8_t *dst = qb + j * D;
        if (c->q_dim == 1) memcpy(dst, src, (size_t)D);
        else
            for (int64_t d = 0; d < D; d++) dst[d] = src[d * c->q_dim];
    }
    gemm_of(c)->pack_b(D, cols, qb, D, s + L.bp, lig_i8_panel_bytes(gemm_of(c), D));
    lig_quant_load_weights(c, rows, w, sq, (float *)(void *)(s + L.w), (float *)(void *)(s + L.sq), cols);
}

static void score_block(const lig_fwd_ctx *c, char *s, int64_t rows, int64_t nb, const char *const *key,
                        const char *const *key_scale, float *score) {
    const layout L = layout_for(c);
    const int64_t G = c->G, D = c->D, cols = rows * G;
    const int64_t stride = c->k_dim == 1 ? lig_quant_rows_stride(nb, key) : 0;
    const int8_t *a = (const int8_t *)key[0];
    int64_t lda = stride;
    if (stride == 0) { /* rows of a paged cache across blocks, or strided along D: one copy */
        int8_t *kb = (int8_t *)(s + L.kb);
        for (int64_t n = 0; n < nb; n++) {
            const int8_t *src = (const int8_t *)key[n];
            if (c->k_dim == 1) memcpy(kb + n * D, src, (size_t)D);
            else
                for (int64_t d = 0; d < D; d++) kb[n * D + d] = src[d * c->k_dim];
        }
        a = kb;
        lda = D;
    }
    float *sk = (float *)(void *)(s + L.sk);
    lig_quant_load_key_scales(c, nb, key_scale, sk);
    int32_t *dots = (int32_t *)(void *)(s + L.c);
    lig_i8_gemm(gemm_of(c), nb, cols, D, a, lda, s + L.bp, dots, cols, false); /* dots[n][r*G + h] */
    const float *w = (const float *)(void *)(s + L.w), *sqf = (const float *)(void *)(s + L.sq);
    for (int64_t r = 0; r < rows; r++)
        c->ks->f32->quant_scores_i32(dots + r * G, nb, cols, G, sk, c->has_sq ? sqf + r * G : NULL, w + r * G,
                                     score + r * c->block);
}

const lig_fwd_engine lig_fwd_engine_i8 = {
    .kernels_name = kernels_name, .configure = configure, .scratch_bytes = scratch_bytes, .begin_rows = begin_rows,
    .score_block = score_block};

/* The quantized forward's FP8 engine on a set with bf16 units (see fwd_engine.h; docs/contract.md
 * 2.4): FP8 e4m3 values are exact in bf16 and their products exact in fp32, so the set's bf16
 * product (vdpbf16ps pairs, AMX tiles) computes the dot products with fp32 sums. Per stripe the
 * query heads of the stripe's rows are converted once with the set's FP8 converter and laid out as
 * Q^T pairs (one column per row and head, padded to the set's bf16 col_pad with zeros); per block of 64 keys the key
 * rows are converted once for all the stripe's rows (one converter call when they lie evenly
 * spaced), S^T = K Q^T runs on the set's bf16 GEMM and the set's score kernel applies the scales,
 * the ReLU and the head sum in the contract's order.
 *
 * The bf16 units add each pair's two products in their own order (vdpbf16ps: the odd one first),
 * not the fp32 GEMM's increasing d, so FP8 scores are bitwise reproducible per kernel set (and
 * any thread count) but may differ in the last bits between a bf16 set and an fp32 one (contract
 * 2.4). Sets without bf16 units run FP8 on the portable engine (the set's converter and fp32 GEMM). */
#include <string.h>

#include "backends/cpu/operators/bf16_operands.h"
#include "backends/cpu/operators/fwd_engine.h"
#include "backends/cpu/operators/quant_operands.h"
#include "core/workspace.h"

#define NB LIG_FWD_BF16_BLOCK

typedef lig_fwd_bf16_layout layout;

static layout layout_for(const lig_fwd_ctx *c) { return lig_fwd_bf16_layout_for(c, true); }

static void configure(lig_fwd_ctx *c) { c->block = NB; }

static uint64_t scratch_bytes(const lig_fwd_ctx *c) { return layout_for(c).total; }

/* n rows of D FP8 codes (row i at rows[i], `dim` bytes between values) into bf16 rows of dst, ldd
 * apart: one converter call for evenly spaced unit-stride rows, one per row otherwise. */
static void rows_to_bf16(const lig_fwd_ctx *c, int64_t n, const char *const *rows, int64_t dim, uint16_t *dst,
                         int64_t ldd) {
    const int64_t D = c->D, stride = dim == 1 ? lig_quant_rows_stride(n, rows) : 0;
    if (stride > 0) {
        c->ks->fp8->to_bf16(n, D, (const uint8_t *)rows[0], stride, dst, ldd);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *src = (const uint8_t *)rows[i];
        if (dim == 1) c->ks->fp8->to_bf16(1, D, src, D, dst + i * ldd, ldd);
        else
            for (int64_t d = 0; d < D; d++) dst[i * ldd + d] = lig_fp8_e4m3_to_bf16_bits(src[d * dim]);
    }
}

static void begin_rows(const lig_fwd_ctx *c, char *s, int64_t rows, const char *const *q, const char *const *w,
                       const char *const *sq) {
    const layout L = layout_for(c);
    const int64_t G = c->G, D = c->D, dp = L.dp, cols = rows * G,
                  gp = lig_bf16_pad((uint64_t)cols, c->ks->bf16->col_pad);
    uint16_t *qrow = (uint16_t *)(void *)(s + L.qrow), *kb = (uint16_t *)(void *)(s + L.kb);
    memset(qrow, 0, sizeof(uint16_t) * (size_t)(gp * dp)); /* padding columns and D: zeros */
    for (int64_t r = 0; r < rows; r++) {
        const char *heads[64];
        for (int64_t h0 = 0; h0 < G; h0 += 64) { /* a row's heads, up to 64 at a time */
            const int64_t m = G - h0 < 64 ? G - h0 : 64;
            for (int64_t h = 0; h < m; h++) heads[h] = q[r] + (h0 + h) * c->q_head;
            rows_to_bf16(c, m, heads, c->q_dim, qrow + (r * G + h0) * dp, dp);
        }
    }
    lig_bf16_transpose_pairs(qrow, gp, dp, (uint32_t *)(void *)(s + L.qt));
    lig_quant_load_weights(c, rows, w, sq, (float *)(void *)(s + L.wf), (float *)(void *)(s + L.sq), gp);
    /* the key rows' padding past D is never written by the converter: zero it once per stripe */
    if (dp > D)
        for (int64_t n = 0; n < NB; n++) memset(kb + n * dp + D, 0, sizeof(uint16_t) * (size_t)(dp - D));
}

static void score_block(const lig_fwd_ctx *c, char *s, int64_t nrows, int64_t nb, const char *const *key,
                        const char *const *key_scale, float *score) {
    const layout L = layout_for(c);
    const int64_t G = c->G, gp = lig_bf16_pad((uint64_t)(nrows * G), c->ks->bf16->col_pad), dp = L.dp;
    uint16_t *kb = (uint16_t *)(void *)(s + L.kb);
    float *st = (float *)(void *)(s + L.st), *sk = (float *)(void *)(s + L.sk);
    rows_to_bf16(c, nb, key, c->k_dim, kb, dp);
    /* whole tiles: the padding rows are zero keys */
    const int64_t rows = lig_bf16_pad((uint64_t)nb, c->ks->bf16->row_pad);
    if (nb < rows) memset(kb + nb * dp, 0, sizeof(uint16_t) * (size_t)((rows - nb) * dp));
    lig_quant_load_key_scales(c, nb, key_scale, sk);
    lig_bf16_gemm(&c->ks->bf16->gemm, rows, gp, dp, kb, dp, (const uint16_t *)(const void *)(s + L.qt), gp, st, gp,
                  false);
    const float *wf = (const float *)(const void *)(s + L.wf), *sqf = (const float *)(const void *)(s + L.sq);
    for (int64_t r = 0; r < nrows; r++)
        c->ks->f32->quant_scores(st + r * G, nb, gp, G, sk, c->has_sq ? sqf + r * G : NULL, wf + r * G,
                                 score + r * c->block);
}

const lig_fwd_engine lig_fwd_engine_fp8 = {
    .kernels_name = lig_fwd_bf16_kernels_name, .configure = configure, .scratch_bytes = scratch_bytes,
    .thread_begin = lig_fwd_bf16_thread_begin, .thread_end = lig_fwd_bf16_thread_end, .begin_rows = begin_rows,
    .score_block = score_block};

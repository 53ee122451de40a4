/* The quantized forward's MXFP4 engine (see fwd_engine.h; docs/contract.md 2.4, "MXFP4"), portable,
 * on every kernel set: FLOAT4_E2M1X2 queries and keys with one e8m0 scale per 32 values.
 *
 * Twice an e2m1 value is an integer in [-12, 12], so each value is decoded to that integer (int8):
 * the stripe's query heads once per stripe, the block's keys once per block, for all the stripe's
 * rows (never per query row). A 32-value block's product is then an exact small-integer dot
 * product (|P| <= 32 * 144, in int32), and the two power-of-two scales (with the 1/4 of the two
 * doublings) make one exact double factor: the block's term is the exact value P * 2^e rounded
 * once to fp32 (to nearest even; beyond fp32's range it is +-inf, below its normals a subnormal or
 * +-0; a NaN scale byte makes it NaN). The terms are added in fp32 in block order from +0, and the
 * set's quant_scores runs the FP8 path's epilogue (ReLU select, weights, heads in order) with
 * every sk 1, which changes no bit (x * 1 is x).
 *
 * Each (row, head, key) value is computed alone, in the same order, whatever the stripe, the
 * block, the thread or the batch: results are the same bytes on every set and schedule. */
#include <string.h>

#include "backends/cpu/operators/fwd_engine.h"
#include "backends/cpu/operators/quant_operands.h"
#include "core/fp4_bits.h"
#include "core/workspace.h"

enum { MX_BLOCK = 32 };

typedef struct layout {
    uint64_t qv;  /* int8[cols][dpad]: twice the stripe's query values */
    uint64_t qs;  /* double[cols][nblk]: 2^(Eq-127) / 4 per query block */
    uint64_t w;   /* float[cols] */
    uint64_t kv;  /* int8[block][dpad]: twice the block's key values */
    uint64_t ks;  /* double[block][nblk]: 2^(Ek-127) per key block */
    uint64_t one; /* float[block]: every sk 1 for quant_scores */
    uint64_t a;   /* float[block][cols]: per-head dot products, S^T */
    uint64_t total;
} layout;

static int64_t blocks_of(const lig_fwd_ctx *c) { return (c->D + MX_BLOCK - 1) / MX_BLOCK; }

static layout layout_for(const lig_fwd_ctx *c) {
    layout l;
    uint64_t at = 0;
    const uint64_t cols = lig_size_mul((uint64_t)c->rows, (uint64_t)c->G), nb = (uint64_t)c->block;
    const uint64_t nblk = (uint64_t)blocks_of(c), dpad = lig_size_mul(nblk, MX_BLOCK);
    l.qv = lig_ws_take(&at, lig_size_mul(cols, dpad));
    l.qs = lig_ws_take(&at, lig_size_mul3(sizeof(double), cols, nblk));
    l.w = lig_ws_take(&at, lig_size_mul(sizeof(float), cols));
    l.kv = lig_ws_take(&at, lig_size_mul(nb, dpad));
    l.ks = lig_ws_take(&at, lig_size_mul3(sizeof(double), nb, nblk));
    l.one = lig_ws_take(&at, lig_size_mul(sizeof(float), nb));
    l.a = lig_ws_take(&at, lig_size_mul3(sizeof(float), cols, nb));
    l.total = at;
    return l;
}

static uint64_t scratch_bytes(const lig_fwd_ctx *c) { return layout_for(c).total; }

/* Twice the e2m1 value of a code, signed (a negative zero is 0). */
static int8_t twice_e2m1(uint8_t c) {
    const int32_t t = lig_fp4e2m1_twice_magnitude(c);
    return (int8_t)((c & 8u) ? -t : t);
}

/* The D values of one head (byte j holds values 2j, low nibble, and 2j + 1), doubled, then zeros
 * up to the whole blocks. */
static void decode_values(const char *p, int64_t stride, int64_t D, int64_t dpad, int8_t *out) {
    for (int64_t j = 0; j < D / 2; j++) {
        const uint8_t byte = (uint8_t)p[j * stride];
        out[2 * j] = twice_e2m1(byte & 15u);
        out[2 * j + 1] = twice_e2m1((uint8_t)(byte >> 4));
    }
    for (int64_t d = D; d < dpad; d++) out[d] = 0;
}

/* Scale byte j of a head's block scales: UINT8 bytes `dim` elements apart, or INT32 words (block
 * 4i + m in bits 8m..8m+7 of word i, read as a value, whatever the host's byte order). */
static uint8_t scale_byte(lig_dtype dtype, const char *p, int64_t dim, int64_t j) {
    if (dtype == LIG_UINT8) return (uint8_t)p[j * dim];
    uint32_t word;
    memcpy(&word, p + (size_t)((j / 4) * dim) * sizeof word, sizeof word);
    return (uint8_t)(word >> (8 * (j % 4)));
}

/* 2^(E-127) * quarter as a double (exact: the exponent stays far inside double's range), NaN for 0xFF. */
static double scale_value(uint8_t e, double quarter) { return (double)lig_e8m0_to_f32(e) * quarter; }

static void load_scales(lig_dtype dtype, const char *p, int64_t dim, int64_t nblk, double quarter, double *out) {
    for (int64_t j = 0; j < nblk; j++) out[j] = scale_value(scale_byte(dtype, p, dim, j), quarter);
}

static void begin_rows(const lig_fwd_ctx *c, char *s, int64_t rows, const char *const *q, const char *const *w,
                       const char *const *sq) {
    const layout L = layout_for(c);
    const int64_t G = c->G, nblk = blocks_of(c), dpad = nblk * MX_BLOCK;
    int8_t *qv = (int8_t *)(s + L.qv);
    double *qs = (double *)(void *)(s + L.qs);
    const size_t se = c->sq_dtype == LIG_INT32 ? sizeof(int32_t) : 1;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t h = 0; h < G; h++) {
            const int64_t col = r * G + h;
            decode_values(q[r] + h * c->q_head, c->q_dim, c->D, dpad, qv + col * dpad);
            /* the 1/4 undoes the doubling of both operands */
            load_scales(c->sq_dtype, sq[r] + (size_t)(h * c->sq_head) * se, c->sq_dim, nblk, 0.25, qs + col * nblk);
        }
    lig_fwd_ctx weights_only = *c; /* the block scales are not per-head factors: load the weights alone */
    weights_only.has_sq = false;
    lig_quant_load_weights(&weights_only, rows, w, NULL, (float *)(void *)(s + L.w), NULL, rows * G);
}

/* One (query head, key) dot: per block the exact integer product, scaled once (one rounding to
 * fp32), added in block order. */
static float dot(const int8_t *qv, const double *qs, const int8_t *kv, const double *ks, int64_t nblk) {
    float d = 0.0f;
    for (int64_t j = 0; j < nblk; j++) {
        int32_t p = 0;
        for (int64_t i = 0; i < MX_BLOCK; i++) p += (int32_t)qv[j * MX_BLOCK + i] * (int32_t)kv[j * MX_BLOCK + i];
        d += (float)((double)p * (qs[j] * ks[j]));
    }
    return d;
}

static void score_block(const lig_fwd_ctx *c, char *s, int64_t rows, int64_t nb, const char *const *key,
                        const char *const *key_scale, float *score) {
    const layout L = layout_for(c);
    const int64_t G = c->G, cols = rows * G, nblk = blocks_of(c), dpad = nblk * MX_BLOCK;
    const int8_t *qv = (const int8_t *)(s + L.qv);
    const double *qs = (const double *)(void *)(s + L.qs);
    const float *w = (const float *)(void *)(s + L.w);
    int8_t *kv = (int8_t *)(s + L.kv);
    double *ks = (double *)(void *)(s + L.ks);
    float *one = (float *)(void *)(s + L.one), *a = (float *)(void *)(s + L.a);
    /* the block's keys decoded once, for every row of the stripe */
    for (int64_t n = 0; n < nb; n++) {
        decode_values(key[n], c->k_dim, c->D, dpad, kv + n * dpad);
        load_scales(c->sk_dtype, key_scale[n], c->sk_dim, nblk, 1.0, ks + n * nblk);
        one[n] = 1.0f;
    }
    for (int64_t n = 0; n < nb; n++)
        for (int64_t col = 0; col < cols; col++)
            a[n * cols + col] = dot(qv + col * dpad, qs + col * nblk, kv + n * dpad, ks + n * nblk, nblk);
    for (int64_t r = 0; r < rows; r++)
        c->ks->f32->quant_scores(a + r * G, nb, cols, G, one, NULL, w + r * G, score + r * c->block);
}

/* the set's quant_scores runs the epilogue: the plan reports the set's fp32 kernels */
static const char *kernels_name(const lig_fwd_ctx *c) { return c->ks->f32->name; }

static void configure(lig_fwd_ctx *c) { c->block = c->ks->f32->fwd_block; }

const lig_fwd_engine lig_fwd_engine_mxfp4 = {
    .kernels_name = kernels_name, .configure = configure, .scratch_bytes = scratch_bytes, .begin_rows = begin_rows,
    .score_block = score_block};

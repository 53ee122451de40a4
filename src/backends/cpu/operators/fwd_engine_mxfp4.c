/* The quantized forward's MXFP4 engine (see fwd_engine.h; docs/contract.md 2.4, "MXFP4"), on every
 * kernel set: FLOAT4_E2M1X2 queries and keys with one e8m0 scale per 32 values.
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
 * The dots run on the set's int8 units (its mxfp4 family: vpdpbusd, vpmaddubsw) when the set has
 * them and every term of the stripe and block is an exact normal fp32 or zero: -126 <= e <= 114
 * for every pair of query and key scales (the stripe's and the block's extreme exponents decide;
 * real data lies far inside). There the term needs no rounding, so the family's fused
 * multiply-add of P and 2^e into the sum rounds as the portable term-then-add does; otherwise the
 * block takes the portable dots below. Either way the bytes are the same on every set.
 *
 * Each (row, head, key) value is computed alone, in the same order, whatever the stripe, the
 * block, the thread or the batch: results are the same bytes on every set and schedule. */
#include <string.h>

#include "backends/cpu/operators/fwd_engine.h"
#include "backends/cpu/operators/quant_operands.h"
#include "core/fp4_bits.h"
#include "core/workspace.h"

enum { MX_BLOCK = 32 };

/* The exponent sums e = Eq + Ek - 256 (query byte, key byte, the 1/4 included) for which every
 * term P * 2^e (1 <= |P| <= 4608 < 2^13) is an exact normal fp32: the int8 units' range. */
enum { EXACT_SUM_LO = 256 - 126, EXACT_SUM_HI = 256 + 114, NAN_BYTE = 255 };

/* Twice the e2m1 values of both codes of a byte (low nibble first: element 2j), signed (a
 * negative zero is 0), as the two bytes of a little-endian pair; and their sum. */
typedef struct code_pairs {
    int8_t twice[256][2];
    int8_t sum[256];
    int8_t codes[16]; /* the same values per code, for the set's decode kernel */
} code_pairs;

typedef struct layout {
    uint64_t pairs; /* code_pairs: the byte decode table, built per stripe (768 bytes, no shared state) */
    uint64_t qv;    /* int8[cols][dpad]: twice the stripe's query values */
    uint64_t qe;    /* uint8[cols][nblk]: their e8m0 bytes */
    uint64_t qs;    /* double[cols][nblk]: 2^(Eq-127) / 4 per query block */
    uint64_t qx;    /* int32[2]: the stripe's least and greatest query byte (NaN: greatest 1000) */
    uint64_t qp;    /* the family's query panels (lig_mxfp4_pack_q), when the set has the family */
    uint64_t w;     /* float[cols] */
    uint64_t kv;    /* int8[block][dpad]: twice the block's key values */
    uint64_t kt;    /* int32[block][nblk][2]: per key block Ek << 23, -q_offset * sum of its values */
    uint64_t ks;    /* double[block][nblk]: 2^(Ek-127) per key block */
    uint64_t one;   /* float[block]: every sk 1 for quant_scores */
    uint64_t a;     /* float[block][cols]: per-head dot products, S^T */
    uint64_t total;
} layout;

static int64_t blocks_of(const lig_fwd_ctx *c) { return (c->D + MX_BLOCK - 1) / MX_BLOCK; }

static uint64_t panels_bytes(const lig_fwd_ctx *c, uint64_t cols) {
    const lig_mxfp4_kernels *f = c->ks->mxfp4;
    if (!f) return 0;
    const uint64_t panels = (cols + (uint64_t)f->nr - 1) / (uint64_t)f->nr;
    return lig_size_mul(panels, (uint64_t)lig_mxfp4_panel_bytes(f->nr, blocks_of(c)));
}

static layout layout_for(const lig_fwd_ctx *c) {
    layout l;
    uint64_t at = 0;
    const uint64_t cols = lig_size_mul((uint64_t)c->rows, (uint64_t)c->G), nb = (uint64_t)c->block;
    const uint64_t nblk = (uint64_t)blocks_of(c), dpad = lig_size_mul(nblk, MX_BLOCK);
    l.pairs = lig_ws_take(&at, sizeof(code_pairs));
    l.qv = lig_ws_take(&at, lig_size_mul(cols, dpad));
    l.qe = lig_ws_take(&at, lig_size_mul(cols, nblk));
    l.qs = lig_ws_take(&at, lig_size_mul3(sizeof(double), cols, nblk));
    l.qx = lig_ws_take(&at, 2 * sizeof(int32_t));
    l.qp = lig_ws_take(&at, panels_bytes(c, cols));
    l.w = lig_ws_take(&at, lig_size_mul(sizeof(float), cols));
    l.kv = lig_ws_take(&at, lig_size_mul(nb, dpad));
    l.kt = lig_ws_take(&at, lig_size_mul3(2 * sizeof(int32_t), nb, nblk));
    l.ks = lig_ws_take(&at, lig_size_mul3(sizeof(double), nb, nblk));
    l.one = lig_ws_take(&at, lig_size_mul(sizeof(float), nb));
    l.a = lig_ws_take(&at, lig_size_mul3(sizeof(float), cols, nb));
    l.total = at;
    return l;
}

static uint64_t scratch_bytes(const lig_fwd_ctx *c) { return layout_for(c).total; }

static int8_t twice_e2m1(uint8_t c) {
    const int32_t t = lig_fp4e2m1_twice_magnitude(c);
    return (int8_t)((c & 8u) ? -t : t);
}

/* The 16 codes' values (twice the e2m1 value) for the family's decode. */
static void build_codes(int8_t table[16]) {
    for (int c = 0; c < 16; c++) table[c] = twice_e2m1((uint8_t)c);
}

static void build_pairs(code_pairs *t) {
    for (int b = 0; b < 256; b++) {
        t->twice[b][0] = twice_e2m1((uint8_t)(b & 15));
        t->twice[b][1] = twice_e2m1((uint8_t)(b >> 4));
        t->sum[b] = (int8_t)(t->twice[b][0] + t->twice[b][1]);
    }
    build_codes(t->codes);
}

/* The D values of one head (byte j holds values 2j, low nibble, and 2j + 1), doubled, then zeros
 * up to the whole blocks; the sum of each block's values into sums[2 * b] when sums is not NULL. */
static void decode_values(const code_pairs *t, const char *p, int64_t stride, int64_t D, int64_t dpad, int8_t *out,
                          int32_t *sums) {
    for (int64_t j = 0; j < D / 2; j++) memcpy(out + 2 * j, t->twice[(uint8_t)p[j * stride]], 2);
    for (int64_t d = D; d < dpad; d++) out[d] = 0;
    if (!sums) return;
    for (int64_t b = 0; b < dpad / MX_BLOCK; b++) {
        int32_t sum = 0;
        for (int64_t j = b * MX_BLOCK / 2; j < (b + 1) * MX_BLOCK / 2 && j < D / 2; j++) sum += t->sum[(uint8_t)p[j * stride]];
        sums[2 * b] = sum;
    }
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

/* A byte as it enters the range check: NaN as far outside every range. */
static int32_t range_byte(uint8_t e) { return e == NAN_BYTE ? 1000 : (int32_t)e; }

static void begin_rows(const lig_fwd_ctx *c, char *s, int64_t rows, const char *const *q, const char *const *w,
                       const char *const *sq) {
    const layout L = layout_for(c);
    code_pairs *t = (code_pairs *)(void *)(s + L.pairs);
    build_pairs(t);
    const int64_t G = c->G, cols = rows * G, nblk = blocks_of(c), dpad = nblk * MX_BLOCK;
    int8_t *qv = (int8_t *)(s + L.qv);
    uint8_t *qe = (uint8_t *)(s + L.qe);
    double *qs = (double *)(void *)(s + L.qs);
    int32_t *qx = (int32_t *)(void *)(s + L.qx);
    const size_t se = c->sq_dtype == LIG_INT32 ? sizeof(int32_t) : 1;
    qx[0] = 1000;
    qx[1] = -1000;
    const lig_mxfp4_kernels *f = c->ks->mxfp4;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t h = 0; h < G; h++) {
            const int64_t col = r * G + h;
            const char *head = q[r] + h * c->q_head;
            if (f && c->q_dim == 1) f->decode(1, c->D, &head, t->codes, qv + col * dpad, dpad, NULL, 0);
            else decode_values(t, head, c->q_dim, c->D, dpad, qv + col * dpad, NULL);
            const char *sp = sq[r] + (size_t)(h * c->sq_head) * se;
            for (int64_t j = 0; j < nblk; j++) {
                const uint8_t e = scale_byte(c->sq_dtype, sp, c->sq_dim, j);
                qe[col * nblk + j] = e;
                /* the 1/4 undoes the doubling of both operands */
                qs[col * nblk + j] = scale_value(e, 0.25);
                qx[0] = qx[0] < range_byte(e) ? qx[0] : range_byte(e);
                qx[1] = qx[1] > range_byte(e) ? qx[1] : range_byte(e);
            }
        }
    if (f)
        lig_mxfp4_pack_q(f->nr, f->q_offset, nblk, cols, qv, dpad, qe, s + L.qp, lig_mxfp4_panel_bytes(f->nr, nblk));
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

/* The block's dots on the family's tiles: query panels outermost (one stays in L1 across the key tiles). */
static void family_dots(const lig_mxfp4_kernels *f, int64_t nb, int64_t cols, int64_t nblk, const int8_t *kv,
                        const int32_t *kt, const char *qp, float *a) {
    const int64_t dpad = nblk * MX_BLOCK, panel = lig_mxfp4_panel_bytes(f->nr, nblk);
    for (int64_t j0 = 0, p = 0; j0 < cols; j0 += f->nr, p++) {
        const int64_t nr = cols - j0 < f->nr ? cols - j0 : f->nr;
        for (int64_t i0 = 0; i0 < nb; i0 += f->mr) {
            const int64_t mr = nb - i0 < f->mr ? nb - i0 : f->mr;
            f->dots(mr, nr, nblk, kv + i0 * dpad, dpad, kt + i0 * 2 * nblk, qp + p * panel, a + i0 * cols + j0, cols);
        }
    }
}

static void score_block(const lig_fwd_ctx *c, char *s, int64_t rows, int64_t nb, const char *const *key,
                        const char *const *key_scale, float *score) {
    const layout L = layout_for(c);
    const code_pairs *t = (const code_pairs *)(const void *)(s + L.pairs);
    const lig_mxfp4_kernels *f = c->ks->mxfp4;
    const int64_t G = c->G, cols = rows * G, nblk = blocks_of(c), dpad = nblk * MX_BLOCK;
    const int8_t *qv = (const int8_t *)(s + L.qv);
    const double *qs = (const double *)(void *)(s + L.qs);
    const int32_t *qx = (const int32_t *)(const void *)(s + L.qx);
    const float *w = (const float *)(void *)(s + L.w);
    int8_t *kv = (int8_t *)(s + L.kv);
    int32_t *kt = (int32_t *)(void *)(s + L.kt);
    double *ks = (double *)(void *)(s + L.ks);
    float *one = (float *)(void *)(s + L.one), *a = (float *)(void *)(s + L.a);
    /* the block's keys decoded once, for every row of the stripe */
    int32_t klo = 1000, khi = -1000;
    const bool unit_decode = f && c->k_dim == 1;
    if (unit_decode) f->decode(nb, c->D, key, t->codes, kv, dpad, kt + 1, 2 * nblk);
    for (int64_t n = 0; n < nb; n++) {
        int32_t *ktn = kt + n * 2 * nblk;
        if (!unit_decode) decode_values(t, key[n], c->k_dim, c->D, dpad, kv + n * dpad, ktn + 1);
        for (int64_t j = 0; j < nblk; j++) {
            const uint8_t e = scale_byte(c->sk_dtype, key_scale[n], c->sk_dim, j);
            ktn[2 * j] = (int32_t)((uint32_t)e << 23);
            ktn[2 * j + 1] *= f ? -f->q_offset : 0;
            klo = klo < range_byte(e) ? klo : range_byte(e);
            khi = khi > range_byte(e) ? khi : range_byte(e);
        }
        one[n] = 1.0f;
    }
    if (f && qx[0] + klo >= EXACT_SUM_LO && qx[1] + khi <= EXACT_SUM_HI) {
        family_dots(f, nb, cols, nblk, kv, kt, s + L.qp, a);
    } else {
        for (int64_t n = 0; n < nb; n++)
            for (int64_t j = 0; j < nblk; j++) ks[n * nblk + j] = scale_value((uint8_t)((uint32_t)kt[n * 2 * nblk + 2 * j] >> 23), 1.0);
        for (int64_t n = 0; n < nb; n++)
            for (int64_t col = 0; col < cols; col++)
                a[n * cols + col] = dot(qv + col * dpad, qs + col * nblk, kv + n * dpad, ks + n * nblk, nblk);
    }
    for (int64_t r = 0; r < rows; r++)
        c->ks->f32->quant_scores(a + r * G, nb, cols, G, one, NULL, w + r * G, score + r * c->block);
}

/* the plan reports the kernels of its dots: the set's mxfp4 family (as an INT8 plan reports its int8
 * family), else the set's fp32 kernels, whose quant_scores runs the epilogue either way */
static const char *kernels_name(const lig_fwd_ctx *c) { return c->ks->mxfp4 ? c->ks->mxfp4->name : c->ks->f32->name; }

static void configure(lig_fwd_ctx *c) { c->block = c->ks->f32->fwd_block; }

const lig_fwd_engine lig_fwd_engine_mxfp4 = {
    .kernels_name = kernels_name, .configure = configure, .scratch_bytes = scratch_bytes, .begin_rows = begin_rows,
    .score_block = score_block};

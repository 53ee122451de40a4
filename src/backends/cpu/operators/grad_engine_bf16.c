/* The backward's bf16 engine (see grad_engine.h), for bf16 inputs on a set with bf16 kernels
 * (vdpbf16ps pairs or AMX tiles). Every product of two bf16 values is exact in fp32, and the
 * engine keeps every product it feeds the units to two bf16 factors, so that nothing is
 * rounded to bf16 on the way: with open = [S > 0],
 *   S^T = K Q^T                                 (bf16 x bf16)
 *   T   = sum_n (open * dy_n) k_n,  dQ_h = w_h T_h     (open * dy is bf16; one fp32 scale per unit)
 *   C_n = sum_h (open * w_h) q_h,   dK += dy_n C_n     (open * w is bf16; the scale is the
 *                                                       commit's fused multiply-add)
 *   dW_h += open ? S dy_n : 0                   (fp32)
 * so each output is an fp32 accumulation of exact products, like the fp32 engine's, with one
 * more fp32 rounding (the scale) per dQ element and per dK contribution.
 *
 * dy need not be a bf16 value (the KL loss hands its fp32 dI): dQ's operand open * dy is then
 * split exactly into three bf16 parts, dy = hi + mid + lo (8 significant bits each cover fp32's
 * 24), and T takes the mid and lo products too, so dy is never rounded; a block whose dy are all
 * bf16 values (the backward's) has mid = lo = 0 and runs the one product as before. The other
 * uses of dy (dW, the dK scale) are fp32 already.
 *
 * Blocks are 64 slots; heads and D are padded with zeros (which add nothing) to multiples of
 * the set's bf16 paddings (col_pad, k_pad: lig_bf16_kernels), so every product runs on whole
 * tiles. Per unit the query heads are packed twice,
 * as Q^T pairs (pairs along D: the scores' B operand) and as Q pairs (pairs along the heads:
 * the contributions' B operand); per block the gathered key rows are copied once (the scores'
 * A operand) and interleaved in pairs (dQ's B operand), and the gate writes both coefficient
 * operands. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "backends/cpu/operators/bf16_operands.h"
#include "backends/cpu/operators/grad_engine.h"
#include "core/dtype_convert.h"
#include "core/workspace.h"

#define NB 64

typedef struct layout {
    int64_t gp, dp;  /* G and D padded to multiples of the family's col_pad and k_pad */
    uint64_t qrow;   /* bf16[gp][dp]: the unit's query heads */
    uint64_t qt;     /* bf16 pairs [dp/2][gp]: Q^T in the VNNI layout */
    uint64_t qh;     /* bf16 pairs [gp/2][dp]: Q in the VNNI layout, pairs along the heads */
    uint64_t w16;    /* bf16[gp] */
    uint64_t wf;     /* float[gp] */
    uint64_t t;      /* float[gp][dp]: T, dQ before the scale by w */
    uint64_t dw;     /* float[gp] */
    uint64_t kb;     /* bf16[NB][dp]: the block's key rows */
    uint64_t kv;     /* bf16 pairs [NB/2][dp]: the same, pairs along the slots */
    uint64_t st;     /* float[NB][gp]: S^T */
    uint64_t adk;    /* bf16[NB][gp]: open * w */
    uint64_t adq;    /* bf16[gp][NB]: open * dy, transposed */
    uint64_t bits;   /* uint64[gp/64 rounded up][NB]: the gate's open bits */
    uint64_t heads;  /* uint64[gp/64 rounded up]: heads open for some slot of the unit */
    uint64_t dy16;   /* bf16[3][NB]: dy's exact split hi, mid, lo */
    uint64_t dyf;    /* float[NB] */
    uint64_t total;
} layout;

static layout layout_for(const lig_grad_ctx *c) {
    layout l;
    uint64_t at = 0;
    l.gp = lig_bf16_pad((uint64_t)c->G, c->ks->bf16->col_pad);
    l.dp = lig_bf16_pad((uint64_t)c->D, c->ks->bf16->k_pad);
    const uint64_t gp = (uint64_t)l.gp, dp = (uint64_t)l.dp, b2 = 2, f4 = 4;
    l.qrow = lig_ws_take(&at, lig_size_mul3(b2, gp, dp));
    l.qt = lig_ws_take(&at, lig_size_mul3(b2, gp, dp));
    l.qh = lig_ws_take(&at, lig_size_mul3(b2, gp, dp));
    l.w16 = lig_ws_take(&at, lig_size_mul(b2, gp));
    l.wf = lig_ws_take(&at, lig_size_mul(f4, gp));
    l.t = lig_ws_take(&at, lig_size_mul3(f4, gp, dp));
    l.dw = lig_ws_take(&at, lig_size_mul(f4, gp));
    l.kb = lig_ws_take(&at, lig_size_mul(b2 * NB, dp));
    l.kv = lig_ws_take(&at, lig_size_mul(b2 * NB, dp));
    l.st = lig_ws_take(&at, lig_size_mul(f4 * NB, gp));
    l.adk = lig_ws_take(&at, lig_size_mul(b2 * NB, gp));
    l.adq = lig_ws_take(&at, lig_size_mul(b2 * NB, gp));
    l.bits = lig_ws_take(&at, (gp + 63) / 64 * 8 * NB);
    l.heads = lig_ws_take(&at, (gp + 63) / 64 * 8);
    l.dy16 = lig_ws_take(&at, 3 * b2 * NB);
    l.dyf = lig_ws_take(&at, f4 * NB);
    l.total = at;
    return l;
}

static const char *kernels_name(const lig_grad_ctx *c) { return c->ks->name; }

static void configure(lig_grad_ctx *c) {
    c->block = NB;
    c->contrib_ld = lig_bf16_pad((uint64_t)c->D, c->ks->bf16->k_pad);
}

static uint64_t scratch_bytes(const lig_grad_ctx *c) { return layout_for(c).total; }

static void thread_begin(const lig_grad_ctx *c) { lig_bf16_thread_begin(c->ks); }

static void thread_end(const lig_grad_ctx *c) { lig_bf16_thread_end(c->ks); }

static void begin_unit(const lig_grad_ctx *c, char *s, const char *q_rows, const char *w_elems) {
    const layout L = layout_for(c);
    const int64_t G = c->G, D = c->D, gp = L.gp, dp = L.dp;
    uint16_t *qrow = (uint16_t *)(void *)(s + L.qrow), *w16 = (uint16_t *)(void *)(s + L.w16);
    uint32_t *qt = (uint32_t *)(void *)(s + L.qt);
    float *wf = (float *)(void *)(s + L.wf);
    for (int64_t h = 0; h < gp; h++) {
        if (h < G) {
            lig_bf16_copy_row(qrow + h * dp, q_rows + 2 * h * c->q_head, c->q_dim, D, dp);
            memcpy(w16 + h, w_elems + 2 * h * c->w_head, sizeof(uint16_t));
            wf[h] = lig_bf16_to_f32(w16[h]);
        } else {
            memset(qrow + h * dp, 0, sizeof(uint16_t) * (size_t)dp);
            w16[h] = 0;
            wf[h] = 0.0f;
        }
    }
    lig_bf16_transpose_pairs(qrow, gp, dp, qt);
    c->ks->bf16->pack_pairs(qrow, dp, gp / 2, dp, (uint16_t *)(void *)(s + L.qh));
    memset(s + L.t, 0, sizeof(float) * (size_t)(gp * dp));
    memset(s + L.dw, 0, sizeof(float) * (size_t)gp);
    memset(s + L.heads, 0, sizeof(uint64_t) * (size_t)((gp + 63) / 64));
}

static void block(const lig_grad_ctx *c, char *s, int64_t nb, const char *const *key, const float *dy,
                  const char *const *next_key, int64_t next_n, float *contrib, float *scale) {
    const layout L = layout_for(c);
    const int64_t gp = L.gp, dp = L.dp;
    const lig_kernel_set *ks = c->ks;
    const lig_bf16_gemm_config *gemm = &ks->bf16->gemm;
    uint16_t *kb = (uint16_t *)(void *)(s + L.kb), *kv = (uint16_t *)(void *)(s + L.kv);
    uint16_t *adk = (uint16_t *)(void *)(s + L.adk), *adq = (uint16_t *)(void *)(s + L.adq);
    uint16_t *dy16 = (uint16_t *)(void *)(s + L.dy16);
    float *st = (float *)(void *)(s + L.st), *dyf = (float *)(void *)(s + L.dyf);
    uint64_t *bits = (uint64_t *)(void *)(s + L.bits);

    uint16_t *dy_mid = dy16 + NB, *dy_lo = dy16 + 2 * NB;
    bool split = false; /* some dy is not a bf16 value */
    for (int64_t n = 0; n < nb; n++) {
        lig_bf16_copy_row(kb + n * dp, key[n], c->k_dim, c->D, dp);
        dyf[n] = dy[n];
        dy16[n] = lig_f32_to_bf16(dy[n]);
        /* the residuals are exact in fp32 (a rounding's error is representable); a non-finite dy
         * stays whole in hi, as the backward has always used it */
        const float r = isfinite(dy[n]) ? dy[n] - lig_bf16_to_f32(dy16[n]) : 0.0f;
        dy_mid[n] = lig_f32_to_bf16(r);
        const float r2 = r - lig_bf16_to_f32(dy_mid[n]);
        dy_lo[n] = lig_f32_to_bf16(r2);
        split |= r != 0.0f;
    }
    if (nb < NB) { /* empty slots: zero keys and dy, so they add nothing */
        memset(kb + nb * dp, 0, sizeof(uint16_t) * (size_t)((NB - nb) * dp));
        memset(dyf + nb, 0, sizeof(float) * (size_t)(NB - nb));
        for (int64_t part = 0; part < 3; part++)
            memset(dy16 + part * NB + nb, 0, sizeof(uint16_t) * (size_t)(NB - nb));
    }
    lig_prefetch_rows(next_key, next_n, c->D, 2, c->k_dim);
    ks->bf16->pack_pairs(kb, dp, NB / 2, dp, kv);
    lig_bf16_gemm(gemm, NB, gp, dp, kb, dp, (const uint16_t *)(const void *)(s + L.qt), gp, st, gp, false);
    ks->bf16->gate(st, NB, gp, dyf, (const uint16_t *)(const void *)(s + L.w16), (float *)(void *)(s + L.dw), adk, bits,
                  (uint64_t *)(void *)(s + L.heads));
    /* A slot closed for every head contributes exactly 0 (its C is 0): scale 0, so that a
     * non-finite dy of a gated slot cannot turn 0 into NaN. */
    for (int64_t n = 0; n < nb; n++) {
        uint64_t any = 0;
        for (int64_t q = 0; q < (gp + 63) / 64; q++) any |= bits[q * NB + n];
        scale[n] = any ? dy[n] : 0.0f;
    }
    ks->bf16->dq_operand(bits, NB, gp, dy16, adq);
    lig_bf16_gemm(gemm, gp, dp, NB, adq, NB, kv, dp, (float *)(void *)(s + L.t), dp, true);
    for (int64_t part = 1; split && part < 3; part++) { /* mid, then lo: T's sums in a fixed order */
        ks->bf16->dq_operand(bits, NB, gp, dy16 + part * NB, adq);
        lig_bf16_gemm(gemm, gp, dp, NB, adq, NB, kv, dp, (float *)(void *)(s + L.t), dp, true);
    }
    lig_bf16_gemm(gemm, NB, dp, gp, adk, gp, (const uint16_t *)(const void *)(s + L.qh), dp, contrib, dp, false);
}

static void end_unit(const lig_grad_ctx *c, char *s, char *dq_rows, char *dw_elems) {
    const layout L = layout_for(c);
    float *t = (float *)(void *)(s + L.t);
    const float *wf = (const float *)(const void *)(s + L.wf), *dw = (const float *)(const void *)(s + L.dw);
    const uint64_t *heads = (const uint64_t *)(const void *)(s + L.heads);
    const int64_t dq_esize = c->dq_dtype == LIG_FLOAT32 ? 4 : 2, dw_esize = c->dw_dtype == LIG_FLOAT32 ? 4 : 2;
    for (int64_t h = 0; h < c->G; h++) {
        float *row = t + h * L.dp;
        /* a head closed for every slot has dQ = 0 exactly, even when its weight is not finite */
        const float scale = (heads[h / 64] >> (h % 64)) & 1u ? wf[h] : 0.0f;
        /* + 0.0f: a zero T times a negative weight is -0, where the sum over slots that the other
         * engines compute is +0 (the same value; now the same bits in every kernel set) */
        for (int64_t d = 0; d < c->D; d++) row[d] = row[d] * scale + 0.0f;
        c->ks->f32->store_row(row, c->D, c->dq_dtype, dq_rows + h * c->dq_head * dq_esize, c->dq_dim);
        lig_store_float(c->dw_dtype, dw_elems + h * c->dw_head * dw_esize, dw[h]);
    }
}

const lig_grad_engine lig_grad_engine_bf16 = {
    .kernels_name = kernels_name, .configure = configure, .scratch_bytes = scratch_bytes,
    .thread_begin = thread_begin, .thread_end = thread_end, .begin_unit = begin_unit, .block = block,
    .end_unit = end_unit};

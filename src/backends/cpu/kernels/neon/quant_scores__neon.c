/* NEON scores of the quantized forward (see kernels.h), bit for bit the portable kernel's: each
 * key's sum over its heads is one chain in head order, so the lanes hold 4 keys. The scales and
 * the select run on rows of 4 heads of one key as they lie (key-major dot products), then each
 * 4 x 4 tile is transposed in registers (TRN1/TRN2 on 32- then 64-bit elements) and its heads are
 * added on one after another. Tails of keys or heads go through a zeroed 4 x 4 scratch. */
#include <arm_neon.h>
#include <stdbool.h>
#include <string.h>

#include "backends/cpu/kernels/neon/neon.h"

static inline void transpose4(float32x4_t r[4]) {
    const float32x4_t t0 = vtrn1q_f32(r[0], r[1]), t1 = vtrn2q_f32(r[0], r[1]);
    const float32x4_t t2 = vtrn1q_f32(r[2], r[3]), t3 = vtrn2q_f32(r[2], r[3]);
    r[0] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
    r[1] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
    r[2] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
    r[3] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
}

/* 4 heads of one key's dot products (hl of them live) as fp32: converted one rounding each */
static inline __attribute__((always_inline)) float32x4_t load_dots(const void *st, bool i32, int64_t at, int64_t hl) {
    if (hl == 4)
        return i32 ? vcvtq_f32_s32(vld1q_s32((const int32_t *)st + at)) : vld1q_f32((const float *)st + at);
    if (i32) {
        int32_t t[4] = {0, 0, 0, 0};
        memcpy(t, (const int32_t *)st + at, sizeof(int32_t) * (size_t)hl);
        return vcvtq_f32_s32(vld1q_s32(t));
    }
    float t[4] = {0, 0, 0, 0};
    memcpy(t, (const float *)st + at, sizeof(float) * (size_t)hl);
    return vld1q_f32(t);
}

static inline float32x4_t load_n(const float *p, int64_t n) {
    if (n == 4) return vld1q_f32(p);
    float t[4] = {0, 0, 0, 0};
    memcpy(t, p, sizeof(float) * (size_t)n);
    return vld1q_f32(t);
}

static inline __attribute__((always_inline)) void scores(const void *st, bool i32, int64_t nb, int64_t ld, int64_t G,
                                                         const float *sk, const float *sq, const float *w,
                                                         float *score) {
    const float32x4_t zero = vdupq_n_f32(0.0f);
    for (int64_t n0 = 0; n0 < nb; n0 += 4) {
        const int64_t nk = nb - n0 < 4 ? nb - n0 : 4;
        float32x4_t acc = zero; /* lane i: key n0 + i's sum so far */
        for (int64_t h0 = 0; h0 < G; h0 += 4) {
            const int64_t hl = G - h0 < 4 ? G - h0 : 4;
            const float32x4_t wv = load_n(w + h0, hl);
            const float32x4_t sqv = sq ? load_n(sq + h0, hl) : zero;
            float32x4_t t[4];
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                if (i >= nk) {
                    t[i] = zero;
                    continue;
                }
                float32x4_t x = load_dots(st, i32, (n0 + i) * ld + h0, hl);
                x = vmulq_n_f32(x, sk[n0 + i]);
                if (sq) x = vmulq_f32(x, sqv);
                /* the select: a closed (or NaN) head's term is +0, as the portable kernel's */
                t[i] = vbslq_f32(vcgtq_f32(x, zero), vmulq_f32(wv, x), zero);
            }
            transpose4(t);
            for (int64_t j = 0; j < hl; j++) acc = vaddq_f32(acc, t[j]);
        }
        if (nk == 4) vst1q_f32(score + n0, acc);
        else {
            float out[4];
            vst1q_f32(out, acc);
            memcpy(score + n0, out, sizeof(float) * (size_t)nk);
        }
    }
}

void lig_quant_scores__neon(const float *st, int64_t nb, int64_t ld, int64_t G, const float *sk, const float *sq,
                            const float *w, float *score) {
    scores(st, false, nb, ld, G, sk, sq, w, score);
}

void lig_quant_scores_i32__neon(const int32_t *st, int64_t nb, int64_t ld, int64_t G, const float *sk, const float *sq,
                                const float *w, float *score) {
    scores(st, true, nb, ld, G, sk, sq, w, score);
}

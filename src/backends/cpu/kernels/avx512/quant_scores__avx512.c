/* AVX-512 scores of the quantized forward (see kernels.h), bit for bit the portable kernel's: the
 * contract fixes each key's sum over its heads as one chain in head order, so the lanes hold 16
 * keys, not 16 heads. The scales and the select run on rows of 16 heads of one key as they lie
 * (key-major dot products); each 16 x 16 tile is transposed in registers and stored, and the
 * heads are then added on one after another. Up to four groups of 16 keys go together, so that
 * four independent chains of additions hide each other's latency (one chain alone would wait
 * on every add). */
#include <immintrin.h>
#include <stdbool.h>

#include "backends/cpu/kernels/avx512/avx512.h"

enum { GROUPS = 4 }; /* groups of 16 keys whose chains run together */

/* r[i] <- column i of the 16 x 16 tile whose rows are r[0..16): two rounds of in-lane unpacks
 * leave 4 x 4 transposed blocks in each 128-bit lane, two rounds of lane shuffles place them. */
static inline __attribute__((always_inline)) void transpose16(__m512 r[16]) {
    __m512 t[16], u[16];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* u[4i + k], lane L: rows 4i .. 4i+3 of column 4L + k */
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
        const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
        u[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        u[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        u[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        u[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    /* column 4L + k = lanes L of u[k], u[4 + k], u[8 + k], u[12 + k] */
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        const __m512 va = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x88), vb = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xDD);
        const __m512 wa = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x88);
        const __m512 wb = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xDD);
        r[k] = _mm512_shuffle_f32x4(va, wa, 0x88);
        r[8 + k] = _mm512_shuffle_f32x4(va, wa, 0xDD);
        r[4 + k] = _mm512_shuffle_f32x4(vb, wb, 0x88);
        r[12 + k] = _mm512_shuffle_f32x4(vb, wb, 0xDD);
    }
}

/* The terms of heads h0 .. h0+hl of keys n0 .. n0+nk (nk <= 16), transposed into out[j] (lane i:
 * key n0 + i's term of head h0 + j); keys past nk are 0. */
static inline __attribute__((always_inline)) void tile_terms(const void *st, bool i32, int64_t n0, int64_t nk,
                                                             int64_t ld, int64_t h0, __mmask16 live, const float *sk,
                                                             bool has_sq, __m512 sqv, __m512 wv, __m512 *out) {
    const __m512 zero = _mm512_setzero_ps();
    __m512 t[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++) {
        if (i >= nk) {
            t[i] = zero;
            continue;
        }
        const int64_t at = (n0 + i) * ld + h0;
        __m512 x = i32 ? _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(live, (const int32_t *)st + at))
                       : _mm512_maskz_loadu_ps(live, (const float *)st + at);
        x = _mm512_mul_ps(x, _mm512_set1_ps(sk[n0 + i]));
        if (has_sq) x = _mm512_mul_ps(x, sqv);
        /* the select: a closed (or NaN) head's term is +0, as the portable kernel's */
        const __mmask16 open = _mm512_mask_cmp_ps_mask(live, x, zero, _CMP_GT_OQ);
        t[i] = _mm512_maskz_mul_ps(open, wv, x);
    }
    transpose16(t);
#pragma GCC unroll 16
    for (int j = 0; j < 16; j++) _mm512_store_ps((float *)(out + j), t[j]);
}

static inline __attribute__((always_inline)) void scores(const void *st, bool i32, int64_t nb, int64_t ld, int64_t G,
                                                         const float *sk, const float *sq, const float *w,
                                                         float *score) {
    const __m512 zero = _mm512_setzero_ps();
    __m512 terms[GROUPS][16];
    for (int64_t n0 = 0; n0 < nb; n0 += 16 * GROUPS) {
        const int64_t left = nb - n0, groups = left >= 16 * GROUPS ? GROUPS : (left + 15) / 16;
        __m512 acc[GROUPS]; /* lane i of acc[g]: key n0 + 16 g + i's sum so far */
        for (int g = 0; g < GROUPS; g++) acc[g] = zero;
        for (int64_t h0 = 0; h0 < G; h0 += 16) {
            const int64_t hl = G - h0 < 16 ? G - h0 : 16;
            const __mmask16 live = hl == 16 ? 0xffff : (__mmask16)((1u << hl) - 1u);
            const __m512 wv = _mm512_maskz_loadu_ps(live, w + h0);
            const __m512 sqv = sq ? _mm512_maskz_loadu_ps(live, sq + h0) : zero;
            for (int64_t g = 0; g < groups; g++) {
                const int64_t k0 = n0 + 16 * g, nk = nb - k0 < 16 ? nb - k0 : 16;
                tile_terms(st, i32, k0, nk, ld, h0, live, sk, sq != NULL, sqv, wv, terms[g]);
            }
            if (groups == GROUPS) {
                for (int64_t j = 0; j < hl; j++)
#pragma GCC unroll 4
                    for (int g = 0; g < GROUPS; g++) acc[g] = _mm512_add_ps(acc[g], terms[g][j]);
            } else {
                for (int64_t g = 0; g < groups; g++)
                    for (int64_t j = 0; j < hl; j++) acc[g] = _mm512_add_ps(acc[g], terms[g][j]);
            }
        }
        for (int64_t g = 0; g < groups; g++) {
            const int64_t k0 = n0 + 16 * g, nk = nb - k0 < 16 ? nb - k0 : 16;
            _mm512_mask_storeu_ps(score + k0, nk == 16 ? 0xffff : (__mmask16)((1u << nk) - 1u), acc[g]);
        }
    }
}

void lig_quant_scores__avx512(const float *st, int64_t nb, int64_t ld, int64_t G, const float *sk, const float *sq,
                              const float *w, float *score) {
    scores(st, false, nb, ld, G, sk, sq, w, score);
}

void lig_quant_scores_i32__avx512(const int32_t *st, int64_t nb, int64_t ld, int64_t G, const float *sk,
                                  const float *sq, const float *w, float *score) {
    scores(st, true, nb, ld, G, sk, sq, w, score);
}

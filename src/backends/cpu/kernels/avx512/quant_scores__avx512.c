/* AVX-512 scores of the quantized forward (see kernels.h), bit for bit the portable kernel's: the
 * contract fixes each key's sum over its heads as one chain in head order, so the lanes hold 16
 * keys, not 16 heads. The scales and the select run on rows of 16 heads of one key as they lie
 * (key-major dot products), then each 16 x 16 tile is transposed in registers and its heads are
 * added on one after another, every lane one key's chain. */
#include <immintrin.h>
#include <stdbool.h>

#include "backends/cpu/kernels/kernels.h"

/* The index vectors of the four steps of a 16 x 16 transpose: step s exchanges bit s of the row
 * with bit s of the lane, rows i and i | 2^s taking lanes from each other (permutex2var). */
typedef struct transpose_steps {
    __m512i lo[4], hi[4];
} transpose_steps;

static inline transpose_steps steps_make(void) {
    transpose_steps t;
    const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i sixteen = _mm512_set1_epi32(16);
    for (int s = 0; s < 4; s++) {
        const __m512i bit = _mm512_set1_epi32(1 << s), flip = _mm512_xor_si512(iota, bit);
        const __mmask16 set = _mm512_test_epi32_mask(iota, bit);
        /* row i (bit s clear): lane j keeps its own value if bit s of j is clear, else row i|2^s's lane j^2^s */
        t.lo[s] = _mm512_mask_blend_epi32(set, iota, _mm512_add_epi32(flip, sixteen));
        /* row i|2^s: row i's lane j^2^s if bit s of j is clear, else its own */
        t.hi[s] = _mm512_mask_blend_epi32(set, flip, _mm512_add_epi32(iota, sixteen));
    }
    return t;
}

static inline __attribute__((always_inline)) void transpose16(__m512 r[16], const transpose_steps *t) {
#pragma GCC unroll 4
    for (int s = 0; s < 4; s++) {
        const int b = 1 << s;
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++) {
            if (i & b) continue;
            const __m512 a = r[i], c = r[i | b];
            r[i] = _mm512_permutex2var_ps(a, t->lo[s], c);
            r[i | b] = _mm512_permutex2var_ps(a, t->hi[s], c);
        }
    }
}

static inline __attribute__((always_inline)) void scores(const void *st, bool i32, int64_t nb, int64_t ld, int64_t G,
                                                         const float *sk, const float *sq, const float *w,
                                                         float *score) {
    const transpose_steps steps = steps_make();
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t n0 = 0; n0 < nb; n0 += 16) {
        const int64_t nk = nb - n0 < 16 ? nb - n0 : 16;
        __m512 acc = zero; /* lane i: key n0 + i's sum so far */
        for (int64_t h0 = 0; h0 < G; h0 += 16) {
            const int64_t hl = G - h0 < 16 ? G - h0 : 16;
            const __mmask16 live = hl == 16 ? 0xffff : (__mmask16)((1u << hl) - 1u);
            const __m512 wv = _mm512_maskz_loadu_ps(live, w + h0);
            const __m512 sqv = sq ? _mm512_maskz_loadu_ps(live, sq + h0) : zero;
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
                if (sq) x = _mm512_mul_ps(x, sqv);
                /* the select: a closed (or NaN) head's term is +0, as the portable kernel's */
                const __mmask16 open = _mm512_mask_cmp_ps_mask(live, x, zero, _CMP_GT_OQ);
                t[i] = _mm512_maskz_mul_ps(open, wv, x);
            }
            transpose16(t, &steps);
            for (int64_t j = 0; j < hl; j++) acc = _mm512_add_ps(acc, t[j]);
        }
        _mm512_mask_storeu_ps(score + n0, nk == 16 ? 0xffff : (__mmask16)((1u << nk) - 1u), acc);
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

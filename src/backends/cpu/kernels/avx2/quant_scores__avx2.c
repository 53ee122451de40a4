/* AVX2 scores of the quantized forward (see kernels.h), bit for bit the portable kernel's: each
 * key's sum over its heads is one chain in head order, so the lanes hold 8 keys. The scales and
 * the select run on rows of 8 heads of one key as they lie (key-major dot products), then each
 * 8 x 8 tile is transposed in registers and its heads are added on one after another. */
#include <immintrin.h>
#include <stdbool.h>

#include "backends/cpu/kernels/avx2/avx2.h"

static inline __attribute__((always_inline)) void transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

static inline __attribute__((always_inline)) void scores(const void *st, bool i32, int64_t nb, int64_t ld, int64_t G,
                                                         const float *sk, const float *sq, const float *w,
                                                         float *score) {
    const __m256 zero = _mm256_setzero_ps();
    const __m256i iota = _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0);
    for (int64_t n0 = 0; n0 < nb; n0 += 8) {
        const int64_t nk = nb - n0 < 8 ? nb - n0 : 8;
        __m256 acc = zero; /* lane i: key n0 + i's sum so far */
        for (int64_t h0 = 0; h0 < G; h0 += 8) {
            const int64_t hl = G - h0 < 8 ? G - h0 : 8;
            const __m256i live = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)hl), iota);
            const __m256 wv = _mm256_maskload_ps(w + h0, live);
            const __m256 sqv = sq ? _mm256_maskload_ps(sq + h0, live) : zero;
            __m256 t[8];
#pragma GCC unroll 8
            for (int i = 0; i < 8; i++) {
                if (i >= nk) {
                    t[i] = zero;
                    continue;
                }
                const int64_t at = (n0 + i) * ld + h0;
                __m256 x = i32 ? _mm256_cvtepi32_ps(_mm256_maskload_epi32((const int *)st + at, live))
                               : _mm256_maskload_ps((const float *)st + at, live);
                x = _mm256_mul_ps(x, _mm256_set1_ps(sk[n0 + i]));
                if (sq) x = _mm256_mul_ps(x, sqv);
                /* the select: a closed (or NaN) head's term is +0, as the portable kernel's */
                t[i] = _mm256_and_ps(_mm256_cmp_ps(x, zero, _CMP_GT_OQ), _mm256_mul_ps(wv, x));
            }
            transpose8(t);
            for (int64_t j = 0; j < hl; j++) acc = _mm256_add_ps(acc, t[j]);
        }
        _mm256_maskstore_ps(score + n0, _mm256_cmpgt_epi32(_mm256_set1_epi32((int)nk), iota), acc);
    }
}

void lig_quant_scores__avx2(const float *st, int64_t nb, int64_t ld, int64_t G, const float *sk, const float *sq,
                            const float *w, float *score) {
    scores(st, false, nb, ld, G, sk, sq, w, score);
}

void lig_quant_scores_i32__avx2(const int32_t *st, int64_t nb, int64_t ld, int64_t G, const float *sk, const float *sq,
                                const float *w, float *score) {
    scores(st, true, nb, ld, G, sk, sq, w, score);
}

/* Portable scores of the quantized forward (see kernels.h): the scales applied one rounding at a
 * time in the documented order, heads summed in order. */
#include <stddef.h>

#include "backends/cpu/kernels/scalar/scalar.h"

/* sum, then the terms of G heads added on in order, from their dot products d[h] (fp32). */
static inline float add_heads(float sum, const float *d, float skn, int64_t G, const float *sq, const float *w) {
    for (int64_t h = 0; h < G; h++) {
        float x = d[h] * skn;
        if (sq) x = x * sq[h]; /* absent: 1, and x * 1 is x, so skipping it changes nothing */
        sum += x > 0.0f ? w[h] * x : 0.0f; /* a select: a NaN x, or x <= 0, adds exactly 0 */
    }
    return sum;
}

void lig_quant_scores__scalar(const float *st, int64_t nb, int64_t ld, int64_t G, const float *sk, const float *sq,
                              const float *w, float *score) {
    for (int64_t n = 0; n < nb; n++) score[n] = add_heads(0.0f, st + n * ld, sk[n], G, sq, w);
}

void lig_quant_scores_i32__scalar(const int32_t *st, int64_t nb, int64_t ld, int64_t G, const float *sk,
                                  const float *sq, const float *w, float *score) {
    enum { CHUNK = 64 };
    float d[CHUNK];
    for (int64_t n = 0; n < nb; n++) {
        /* the heads in chunks, each converted (one rounding to nearest even) and added on in order */
        float sum = 0.0f;
        for (int64_t h0 = 0; h0 < G; h0 += CHUNK) {
            const int64_t m = G - h0 < CHUNK ? G - h0 : CHUNK;
            for (int64_t h = 0; h < m; h++) d[h] = (float)st[n * ld + h0 + h];
            sum = add_heads(sum, d, sk[n], m, sq ? sq + h0 : NULL, w + h0);
        }
        score[n] = sum;
    }
}

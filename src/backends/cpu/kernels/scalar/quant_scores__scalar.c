/* Portable scores of the quantized forward (see kernels.h): the scales applied one rounding at a
 * time in the documented order, heads summed in order. */
#include "backends/cpu/kernels/kernels.h"

void lig_quant_scores__scalar(const float *st, int64_t nb, int64_t ld, int64_t G, const float *sk, const float *sq,
                              const float *w, float *score) {
    for (int64_t n = 0; n < nb; n++) {
        const float *sn = st + n * ld;
        float sum = 0.0f;
        for (int64_t h = 0; h < G; h++) {
            float x = sn[h] * sk[n];
            if (sq) x = x * sq[h]; /* absent: 1, and x * 1 is x, so skipping it changes nothing */
            sum += x > 0.0f ? w[h] * x : 0.0f; /* a select: a NaN x, or x <= 0, adds exactly 0 */
        }
        score[n] = sum;
    }
}

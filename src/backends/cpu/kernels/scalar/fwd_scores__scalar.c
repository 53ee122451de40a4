/* Portable forward index scores (see kernels.h): heads summed in order. */
#include "backends/cpu/kernels/scalar/scalar.h"

void lig_fwd_scores__scalar(const float *st, int64_t nb, int64_t ld, int64_t G, const float *w, float *score) {
    for (int64_t n = 0; n < nb; n++) {
        const float *sn = st + n * ld;
        float sum = 0.0f;
        for (int64_t h = 0; h < G; h++) sum += sn[h] > 0.0f ? w[h] * sn[h] : 0.0f;
        score[n] = sum;
    }
}

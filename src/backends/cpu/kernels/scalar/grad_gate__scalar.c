/* Portable ReLU gate of the backward (see kernels.h). */
#include "backends/cpu/kernels/scalar/scalar.h"

void lig_grad_gate__scalar(float *st, int64_t nb, int64_t G, const float *w, const float *dy, float *dw) {
    for (int64_t n = 0; n < nb; n++) {
        float *sn = st + n * G;
        for (int64_t h = 0; h < G; h++) {
            const float s = sn[h];
            const int open = s > 0.0f;
            dw[h] += open ? s * dy[n] : 0.0f;
            sn[h] = open ? w[h] * dy[n] : 0.0f;
        }
    }
}

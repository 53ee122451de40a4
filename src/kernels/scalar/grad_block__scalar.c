/* Portable block products of the backward (see kernels.h for the shapes). */
#include "kernels/kernels.h"

void lig_grad_scores__scalar(const float *q, const float *kp, int64_t G, int64_t nb, int64_t D, float *a,
                             int64_t lda) {
    for (int64_t h = 0; h < G; h++) {
        const float *qh = q + h * D;
        for (int64_t n = 0; n < nb; n++) {
            const float *kn = kp + n * D;
            float s = 0.0f;
            for (int64_t d = 0; d < D; d++) s += qh[d] * kn[d];
            a[h * lda + n] = s;
        }
    }
}

void lig_grad_dq__scalar(const float *a, int64_t lda, const float *kp, int64_t G, int64_t nb, int64_t D, float *dq) {
    for (int64_t h = 0; h < G; h++) {
        float *dqh = dq + h * D;
        for (int64_t n = 0; n < nb; n++) {
            const float c = a[h * lda + n];
            if (c == 0.0f) continue; /* ReLU-gated slots add nothing */
            const float *kn = kp + n * D;
            for (int64_t d = 0; d < D; d++) dqh[d] += c * kn[d];
        }
    }
}

void lig_grad_dk__scalar(const float *a, int64_t lda, const float *q, int64_t G, int64_t nb, int64_t D, float *c) {
    for (int64_t n = 0; n < nb; n++) {
        float *cn = c + n * D;
        for (int64_t d = 0; d < D; d++) cn[d] = 0.0f;
        for (int64_t h = 0; h < G; h++) {
            const float coef = a[h * lda + n];
            if (coef == 0.0f) continue;
            const float *qh = q + h * D;
            for (int64_t d = 0; d < D; d++) cn[d] += coef * qh[d];
        }
    }
}

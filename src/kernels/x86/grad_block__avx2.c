/* AVX2/FMA block products of the backward (see kernels.h for the shapes).
 * Compiled with -mavx2 -mfma -mf16c; called only when the CPU has them. */
#include <immintrin.h>

#include "kernels/kernels.h"

static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

void lig_grad_scores__avx2(const float *q, const float *kp, int64_t G, int64_t nb, int64_t D, float *a,
                           int64_t lda) {
    const int64_t D8 = D & ~(int64_t)7;
    for (int64_t h = 0; h < G; h++) {
        const float *qh = q + h * D;
        int64_t n = 0;
        for (; n + 4 <= nb; n += 4) { /* four keys share each load of the query row */
            const float *k0 = kp + n * D, *k1 = k0 + D, *k2 = k1 + D, *k3 = k2 + D;
            __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
            int64_t d = 0;
            for (; d < D8; d += 8) {
                __m256 x = _mm256_loadu_ps(qh + d);
                s0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k0 + d), s0);
                s1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k1 + d), s1);
                s2 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k2 + d), s2);
                s3 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k3 + d), s3);
            }
            float r0 = hsum8(s0), r1 = hsum8(s1), r2 = hsum8(s2), r3 = hsum8(s3);
            for (; d < D; d++) {
                r0 += qh[d] * k0[d];
                r1 += qh[d] * k1[d];
                r2 += qh[d] * k2[d];
                r3 += qh[d] * k3[d];
            }
            a[h * lda + n] = r0;
            a[h * lda + n + 1] = r1;
            a[h * lda + n + 2] = r2;
            a[h * lda + n + 3] = r3;
        }
        for (; n < nb; n++) {
            const float *kn = kp + n * D;
            __m256 s = _mm256_setzero_ps();
            int64_t d = 0;
            for (; d < D8; d += 8) s = _mm256_fmadd_ps(_mm256_loadu_ps(qh + d), _mm256_loadu_ps(kn + d), s);
            float r = hsum8(s);
            for (; d < D; d++) r += qh[d] * kn[d];
            a[h * lda + n] = r;
        }
    }
}

void lig_grad_dq__avx2(const float *a, int64_t lda, const float *kp, int64_t G, int64_t nb, int64_t D, float *dq) {
    for (int64_t h = 0; h < G; h++) {
        float *dqh = dq + h * D;
        const float *ah = a + h * lda;
        int64_t d = 0;
        for (; d + 32 <= D; d += 32) { /* four accumulators stay in registers across the block */
            __m256 c0 = _mm256_loadu_ps(dqh + d), c1 = _mm256_loadu_ps(dqh + d + 8);
            __m256 c2 = _mm256_loadu_ps(dqh + d + 16), c3 = _mm256_loadu_ps(dqh + d + 24);
            for (int64_t n = 0; n < nb; n++) {
                const float *kn = kp + n * D + d;
                __m256 x = _mm256_broadcast_ss(ah + n);
                c0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(kn), c0);
                c1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(kn + 8), c1);
                c2 = _mm256_fmadd_ps(x, _mm256_loadu_ps(kn + 16), c2);
                c3 = _mm256_fmadd_ps(x, _mm256_loadu_ps(kn + 24), c3);
            }
            _mm256_storeu_ps(dqh + d, c0);
            _mm256_storeu_ps(dqh + d + 8, c1);
            _mm256_storeu_ps(dqh + d + 16, c2);
            _mm256_storeu_ps(dqh + d + 24, c3);
        }
        for (; d + 8 <= D; d += 8) {
            __m256 c0 = _mm256_loadu_ps(dqh + d);
            for (int64_t n = 0; n < nb; n++)
                c0 = _mm256_fmadd_ps(_mm256_broadcast_ss(ah + n), _mm256_loadu_ps(kp + n * D + d), c0);
            _mm256_storeu_ps(dqh + d, c0);
        }
        for (; d < D; d++) {
            float c = dqh[d];
            for (int64_t n = 0; n < nb; n++) c += ah[n] * kp[n * D + d];
            dqh[d] = c;
        }
    }
}

void lig_grad_dk__avx2(const float *a, int64_t lda, const float *q, int64_t G, int64_t nb, int64_t D, float *c) {
    for (int64_t n = 0; n < nb; n++) {
        float *cn = c + n * D;
        int64_t d = 0;
        for (; d + 32 <= D; d += 32) {
            __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
            for (int64_t h = 0; h < G; h++) {
                const float *qh = q + h * D + d;
                __m256 x = _mm256_broadcast_ss(a + h * lda + n);
                c0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(qh), c0);
                c1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(qh + 8), c1);
                c2 = _mm256_fmadd_ps(x, _mm256_loadu_ps(qh + 16), c2);
                c3 = _mm256_fmadd_ps(x, _mm256_loadu_ps(qh + 24), c3);
            }
            _mm256_storeu_ps(cn + d, c0);
            _mm256_storeu_ps(cn + d + 8, c1);
            _mm256_storeu_ps(cn + d + 16, c2);
            _mm256_storeu_ps(cn + d + 24, c3);
        }
        for (; d + 8 <= D; d += 8) {
            __m256 c0 = _mm256_setzero_ps();
            for (int64_t h = 0; h < G; h++)
                c0 = _mm256_fmadd_ps(_mm256_broadcast_ss(a + h * lda + n), _mm256_loadu_ps(q + h * D + d), c0);
            _mm256_storeu_ps(cn + d, c0);
        }
        for (; d < D; d++) {
            float s = 0.0f;
            for (int64_t h = 0; h < G; h++) s += a[h * lda + n] * q[h * D + d];
            cn[d] = s;
        }
    }
}

/* Portable fp32 GEMM with the same contract as lig_sgemm__avx2 (see kernels.h). */
#include "kernels/kernels.h"

void lig_sgemm__scalar(int64_t M, int64_t N, int64_t K, const float *a, int64_t a_rs, int64_t a_cs, const float *b,
                       int64_t ldb, float *c, int64_t ldc, bool accumulate) {
    for (int64_t m = 0; m < M; m++) {
        float *cm = c + m * ldc;
        if (!accumulate)
            for (int64_t n = 0; n < N; n++) cm[n] = 0.0f;
        for (int64_t k = 0; k < K; k++) {
            const float x = a[m * a_rs + k * a_cs];
            const float *bk = b + k * ldb;
            for (int64_t n = 0; n < N; n++) cm[n] += x * bk[n];
        }
    }
}

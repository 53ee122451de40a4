/* Portable fp32 GEMM micro-kernel (see kernels.h): separate multiply and add, in k order. */
#include "backends/cpu/kernels/scalar/scalar.h"

void lig_f32_gemm_ukernel_4x4__scalar(int64_t mr, int64_t nr, int64_t kc, const float *a, int64_t a_rs, int64_t a_cs,
                                      const float *b, int64_t ldb, float *c, int64_t ldc, bool accumulate) {
    float acc[4][4];
    for (int64_t i = 0; i < mr; i++)
        for (int64_t j = 0; j < nr; j++) acc[i][j] = accumulate ? c[i * ldc + j] : 0.0f;
    for (int64_t k = 0; k < kc; k++) {
        const float *bk = b + k * ldb;
        for (int64_t i = 0; i < mr; i++) {
            const float x = a[i * a_rs + k * a_cs];
            for (int64_t j = 0; j < nr; j++) acc[i][j] += x * bk[j];
        }
    }
    for (int64_t i = 0; i < mr; i++)
        for (int64_t j = 0; j < nr; j++) c[i * ldc + j] = acc[i][j];
}

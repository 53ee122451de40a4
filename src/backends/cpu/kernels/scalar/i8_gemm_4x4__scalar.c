/* int8 GEMM, portable C (see kernels.h): the reference of the int8 family. Panels of 4 columns,
 * kr = 1: panel[k*4 + j] = B[k][j] as int8. Every product and sum is an int32 operation on values
 * that fit (|sum| <= K * 2^14 <= 2^30 for K <= max_k = 65536), so the result is exact. */
#include <string.h>

#include "backends/cpu/kernels/scalar/scalar.h"

#define NR 4

void lig_i8_pack_b_4x4__scalar(int64_t K, int64_t N, const int8_t *src, int64_t ld, void *packed,
                               int64_t panel_bytes) {
    for (int64_t n0 = 0, p = 0; n0 < N; n0 += NR, p++) {
        int8_t *o = (int8_t *)packed + p * panel_bytes;
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < NR; j++) o[k * NR + j] = n0 + j < N ? src[(n0 + j) * ld + k] : 0;
    }
}

void lig_i8_gemm_ukernel_4x4__scalar(int64_t mr, int64_t nr, int64_t kc, const int8_t *a, int64_t lda,
                                     const void *b_panel, int32_t *c, int64_t ldc, bool accumulate) {
    const int8_t *b = b_panel;
    for (int64_t i = 0; i < mr; i++)
        for (int64_t j = 0; j < nr; j++) {
            int32_t acc = 0;
            for (int64_t k = 0; k < kc; k++) acc += (int32_t)a[i * lda + k] * (int32_t)b[k * NR + j];
            c[i * ldc + j] = accumulate ? c[i * ldc + j] + acc : acc;
        }
}

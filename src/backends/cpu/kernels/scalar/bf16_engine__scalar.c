/* Portable references of the bf16 engines' kernels (see kernels.h). No kernel set runs them;
 * the tests compare every ISA's versions with these. */
#include <string.h>

#include "backends/cpu/kernels/scalar/scalar.h"
#include "core/dtype_convert.h"

void lig_bf16_gemm_ukernel_4x4__scalar(int64_t mr, int64_t nr, int64_t kc, const uint16_t *a, int64_t lda,
                                       const uint16_t *b, int64_t ldb, float *c, int64_t ldc, bool accumulate) {
    for (int64_t i = 0; i < mr; i++)
        for (int64_t j = 0; j < nr; j++) {
            float acc = accumulate ? c[i * ldc + j] : 0.0f;
            for (int64_t k = 0; k < kc; k++)
                acc += lig_bf16_to_f32(a[i * lda + k]) * lig_bf16_to_f32(b[((k / 2) * ldb + j) * 2 + k % 2]);
            c[i * ldc + j] = acc;
        }
}

void lig_bf16_pack_pairs__scalar(const uint16_t *src, int64_t ld, int64_t npairs, int64_t cols, uint16_t *out) {
    for (int64_t p = 0; p < npairs; p++)
        for (int64_t j = 0; j < cols; j++)
            for (int64_t e = 0; e < 2; e++) out[(p * cols + j) * 2 + e] = src[(2 * p + e) * ld + j];
}

void lig_bf16_gate__scalar(const float *st, int64_t nb, int64_t gp, const float *dy, const uint16_t *w, float *dw,
                           uint16_t *a_dk, uint64_t *open_bits, uint64_t *head_open) {
    memset(open_bits, 0, sizeof(uint64_t) * (size_t)(((gp + 63) / 64) * nb));
    for (int64_t n = 0; n < nb; n++)
        for (int64_t h = 0; h < gp; h++) {
            const float s = st[n * gp + h];
            const int open = s > 0.0f;
            dw[h] += open ? s * dy[n] : 0.0f;
            a_dk[n * gp + h] = open ? w[h] : 0;
            open_bits[(h / 64) * nb + n] |= (uint64_t)open << (h % 64);
            head_open[h / 64] |= (uint64_t)open << (h % 64);
        }
}

void lig_bf16_dq_operand__scalar(const uint64_t *open_bits, int64_t nb, int64_t gp, const uint16_t *dy,
                                uint16_t *a_dq) {
    for (int64_t h = 0; h < gp; h++)
        for (int64_t n = 0; n < nb; n++)
            a_dq[h * nb + n] = (open_bits[(h / 64) * nb + n] >> (h % 64)) & 1u ? dy[n] : 0;
}

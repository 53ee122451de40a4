#include "backends/cpu/operators/bf16_operands.h"

#include <string.h>

void lig_bf16_copy_row(uint16_t *dst, const char *src, int64_t stride, int64_t n, int64_t padded) {
    if (stride == 1) memcpy(dst, src, sizeof(uint16_t) * (size_t)n);
    else
        for (int64_t i = 0; i < n; i++) memcpy(dst + i, src + 2 * i * stride, sizeof(uint16_t));
    memset(dst + n, 0, sizeof(uint16_t) * (size_t)(padded - n));
}

void lig_bf16_transpose_pairs(const uint16_t *rows, int64_t n_rows, int64_t dp, uint32_t *qt) {
    const uint32_t *words = (const uint32_t *)(const void *)rows;
    for (int64_t j = 0; j < n_rows; j++)
        for (int64_t p = 0; p < dp / 2; p++) qt[p * n_rows + j] = words[j * (dp / 2) + p];
}

void lig_bf16_thread_begin(const lig_kernel_set *ks) {
    if (ks->bf16->gemm.thread_begin) ks->bf16->gemm.thread_begin();
}

void lig_bf16_thread_end(const lig_kernel_set *ks) {
    if (ks->bf16->gemm.thread_end) ks->bf16->gemm.thread_end();
}

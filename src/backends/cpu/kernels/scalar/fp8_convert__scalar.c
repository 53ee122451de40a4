/* FP8 e4m3fn to bf16 / fp32, portable C (see kernels.h): integer bit manipulation only, so the
 * result does not depend on the floating-point environment (denormals-are-zero included). */
#include "backends/cpu/kernels/scalar/scalar.h"

#include <string.h>

uint16_t lig_fp8_e4m3_to_bf16_bits(uint8_t code) {
    const uint16_t sign = (uint16_t)((code & 0x80u) << 8);
    const unsigned mag = code & 0x7Fu, e = mag >> 3, m = mag & 7u;
    if (mag == 0x7Fu) return sign | 0x7FC0u; /* S.1111.111: NaN (e4m3fn has no infinities) */
    if (e != 0) return sign | (uint16_t)((mag << 4) + (120u << 7)); /* 2^(e-7) 1.m: bf16 exponent e + 120 */
    if (m == 0) return sign;
    /* subnormal m * 2^-9: normalise, the leading 1 of m at bit t gives 2^(t-9) (bf16 exponent 118 + t) */
    const unsigned t = m >= 4 ? 2u : m >= 2 ? 1u : 0u;
    return sign | (uint16_t)(((118u + t) << 7) | (((m << (3u - t)) & 7u) << 4));
}

void lig_fp8_to_bf16__scalar(int64_t rows, int64_t n, const uint8_t *src, int64_t lds, uint16_t *dst, int64_t ldd) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n; j++) dst[r * ldd + j] = lig_fp8_e4m3_to_bf16_bits(src[r * lds + j]);
}

void lig_fp8_to_f32__scalar(int64_t rows, int64_t n, const uint8_t *src, int64_t lds, float *dst, int64_t ldd) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n; j++) {
            const uint32_t u = (uint32_t)lig_fp8_e4m3_to_bf16_bits(src[r * lds + j]) << 16;
            memcpy(&dst[r * ldd + j], &u, sizeof u);
        }
}

/* AVX2/F16C row conversions for unit-stride rows; other strides use the portable code. */
#include <immintrin.h>

#include "core/dtype_convert.h"
#include "backends/cpu/kernels/avx2/avx2.h"
#include "backends/cpu/kernels/scalar/scalar.h" /* the tails */

void lig_load_row__avx2(lig_dtype dtype, const void *src, int64_t stride, int64_t n, float *dst) {
    if (lig_load_row_plain(dtype, src, stride, n, dst)) return;
    int64_t i = 0;
    const uint16_t *s = src;
    if (dtype == LIG_BFLOAT16) {
        for (; i + 8 <= n; i += 8) {
            __m256i x = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(s + i)));
            _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(x, 16)));
        }
    } else {
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
    }
    lig_load_row__scalar(dtype, s + i, 1, n - i, dst + i);
}

/* fp32 -> bf16 bits, round to nearest even, NaN quieted (matches lig_f32_to_bf16) */
static inline __m256i f32_to_bf16_epi32(__m256 v) {
    const __m256i x = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb), 16);
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
    const __m256i is_nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    return _mm256_blendv_epi8(rounded, quiet, is_nan);
}

void lig_store_row__avx2(const float *src, int64_t n, lig_dtype dtype, void *dst, int64_t stride) {
    if (lig_store_row_plain(src, n, dtype, dst, stride)) return;
    uint16_t *d = dst;
    int64_t i = 0;
    if (dtype == LIG_BFLOAT16) {
        for (; i + 8 <= n; i += 8) {
            __m256i h = f32_to_bf16_epi32(_mm256_loadu_ps(src + i));
            /* pack the 8 low halves: values fit 16 bits, so unsigned saturation never fires */
            __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
            _mm_storeu_si128((__m128i *)(d + i), packed);
        }
    } else {
        for (; i + 8 <= n; i += 8)
            _mm_storeu_si128((__m128i *)(d + i),
                             _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    lig_store_row__scalar(src + i, n - i, dtype, d + i, 1);
}

void lig_axpy_row__avx2(float *dst, float a, const float *x, int64_t n) {
    const __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(dst + i)));
    lig_axpy_row__scalar(dst + i, a, x + i, n - i);
}

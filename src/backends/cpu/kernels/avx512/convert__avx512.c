/* AVX-512 row conversions for unit-stride rows (see kernels.h); other strides use the
 * portable code. Rounding and NaN handling match core/dtype_convert.c bit for bit. */
#include <immintrin.h>

#include "backends/cpu/kernels/avx512/avx512.h"

void lig_load_row__avx512(lig_dtype dtype, const void *src, int64_t stride, int64_t n, float *dst) {
    if (lig_load_row_plain(dtype, src, stride, n, dst)) return;
    const uint16_t *s = src;
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 live = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1u);
        const __m256i h = _mm256_maskz_loadu_epi16(live, s + i);
        const __m512 f = dtype == LIG_BFLOAT16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))
                                               : _mm512_cvtph_ps(h);
        _mm512_mask_storeu_ps(dst + i, live, f);
    }
}

/* fp32 -> bf16 bits, round to nearest even, NaN quieted (matches lig_f32_to_bf16) */
static inline __m256i f32_to_bf16(__m512 v) {
    const __m512i x = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), lsb), 16);
    const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
    const __mmask16 is_nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(is_nan, rounded, quiet));
}

void lig_store_row__avx512(const float *src, int64_t n, lig_dtype dtype, void *dst, int64_t stride) {
    if (lig_store_row_plain(src, n, dtype, dst, stride)) return;
    uint16_t *d = dst;
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 live = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1u);
        const __m512 v = _mm512_maskz_loadu_ps(live, src + i);
        const __m256i h = dtype == LIG_BFLOAT16 ? f32_to_bf16(v)
                                                : _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_mask_storeu_epi16(d + i, live, h);
    }
}

void lig_axpy_row__avx512(float *dst, float a, const float *x, int64_t n) {
    const __m512 va = _mm512_set1_ps(a);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 live = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1u);
        const __m512 r = _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(live, x + i), _mm512_maskz_loadu_ps(live, dst + i));
        _mm512_mask_storeu_ps(dst + i, live, r);
    }
}

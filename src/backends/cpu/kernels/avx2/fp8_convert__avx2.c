/* FP8 e4m3fn to bf16 / fp32, AVX2 (see kernels.h), 16 codes per step, integer operations only
 * (no dependence on denormals-are-zero). For the 7-bit magnitude m = code & 0x7f:
 *   normal (m >= 8):   bf16 = (m << 4) + (120 << 7)    (exponent e - 7 + 127, mantissa shifted up 4)
 *   subnormal (m < 8): an 8-entry word table (m * 2^-9, normalised), looked up with vpshufb on
 *                      byte indices 2m, 2m + 1 in each word
 *   m = 0x7f:          the NaN 0x7fc0
 * then the sign bit moves from bit 7 to bit 15. Row tails go through a zeroed scratch
 * (portable_tails.h). */
#include <immintrin.h>

#include "backends/cpu/kernels/avx2/avx2.h"
#include "backends/cpu/kernels/portable_tails.h"

/* bf16 bits of m * 2^-9 for m = 0..7, twice (vpshufb looks up within each 128-bit lane) */
static const uint16_t subnormals[16] __attribute__((aligned(32))) = {
    0x0000, 0x3B00, 0x3B80, 0x3BC0, 0x3C00, 0x3C20, 0x3C40, 0x3C60,
    0x0000, 0x3B00, 0x3B80, 0x3BC0, 0x3C00, 0x3C20, 0x3C40, 0x3C60,
};

/* 16 codes (zero-extended to words) to 16 bf16 words */
static inline __m256i convert16(__m256i x) {
    const __m256i mag = _mm256_and_si256(x, _mm256_set1_epi16(0x7f));
    const __m256i normal = _mm256_add_epi16(_mm256_slli_epi16(mag, 4), _mm256_set1_epi16(120 << 7));
    const __m256i two = _mm256_add_epi16(mag, mag);
    const __m256i idx = _mm256_or_si256(two, _mm256_slli_epi16(_mm256_add_epi16(two, _mm256_set1_epi16(1)), 8));
    const __m256i sub = _mm256_shuffle_epi8(_mm256_load_si256((const __m256i *)(const void *)subnormals), idx);
    __m256i r = _mm256_blendv_epi8(normal, sub, _mm256_cmpgt_epi16(_mm256_set1_epi16(8), mag));
    r = _mm256_blendv_epi8(r, _mm256_set1_epi16(0x7fc0), _mm256_cmpeq_epi16(mag, _mm256_set1_epi16(0x7f)));
    return _mm256_or_si256(r, _mm256_slli_epi16(_mm256_and_si256(x, _mm256_set1_epi16(0x80)), 8));
}

static inline __m256i load16(const uint8_t *s) { return _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)s)); }

/* 16 codes at s to 16 bf16 words at d */
static inline void to_bf16_16(const uint8_t *s, void *d) { _mm256_storeu_si256((__m256i *)d, convert16(load16(s))); }

/* 16 codes at s to 16 fp32 at d: the bf16 words zero-extended, shifted into the upper half */
static inline void to_f32_16(const uint8_t *s, void *d) {
    const __m256i w = convert16(load16(s));
    const __m256i lo = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(w)), 16);
    const __m256i hi = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(w, 1)), 16);
    _mm256_storeu_si256((__m256i *)d, lo);
    _mm256_storeu_si256((__m256i *)d + 1, hi);
}

void lig_fp8_to_bf16__avx2(int64_t rows, int64_t n, const uint8_t *src, int64_t lds, uint16_t *dst, int64_t ldd) {
    lig_fp8_rows_by16(rows, n, src, lds, dst, ldd, sizeof *dst, to_bf16_16);
}

void lig_fp8_to_f32__avx2(int64_t rows, int64_t n, const uint8_t *src, int64_t lds, float *dst, int64_t ldd) {
    lig_fp8_rows_by16(rows, n, src, lds, dst, ldd, sizeof *dst, to_f32_16);
}

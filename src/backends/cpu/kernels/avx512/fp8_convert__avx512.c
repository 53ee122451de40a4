/* FP8 e4m3fn to bf16 / fp32, AVX-512 BW (see kernels.h), 32 codes per step: a 128-word table of
 * every magnitude (bf16 bits of code & 0x7f, NaN at 0x7f) in four zmm, looked up with two
 * two-source word permutes (vpermi2w takes 6 index bits; bit 6 picks between them), then the sign
 * moved from bit 7 to bit 15. Masked loads and stores do the row tails. The table is checked
 * against the scalar decode for all 256 codes by the tests. */
#include <immintrin.h>

#include "backends/cpu/kernels/avx512/avx512.h"

static const uint16_t magnitudes[128] __attribute__((aligned(64))) = {
    0x0000, 0x3B00, 0x3B80, 0x3BC0, 0x3C00, 0x3C20, 0x3C40, 0x3C60,
    0x3C80, 0x3C90, 0x3CA0, 0x3CB0, 0x3CC0, 0x3CD0, 0x3CE0, 0x3CF0,
    0x3D00, 0x3D10, 0x3D20, 0x3D30, 0x3D40, 0x3D50, 0x3D60, 0x3D70,
    0x3D80, 0x3D90, 0x3DA0, 0x3DB0, 0x3DC0, 0x3DD0, 0x3DE0, 0x3DF0,
    0x3E00, 0x3E10, 0x3E20, 0x3E30, 0x3E40, 0x3E50, 0x3E60, 0x3E70,
    0x3E80, 0x3E90, 0x3EA0, 0x3EB0, 0x3EC0, 0x3ED0, 0x3EE0, 0x3EF0,
    0x3F00, 0x3F10, 0x3F20, 0x3F30, 0x3F40, 0x3F50, 0x3F60, 0x3F70,
    0x3F80, 0x3F90, 0x3FA0, 0x3FB0, 0x3FC0, 0x3FD0, 0x3FE0, 0x3FF0,
    0x4000, 0x4010, 0x4020, 0x4030, 0x4040, 0x4050, 0x4060, 0x4070,
    0x4080, 0x4090, 0x40A0, 0x40B0, 0x40C0, 0x40D0, 0x40E0, 0x40F0,
    0x4100, 0x4110, 0x4120, 0x4130, 0x4140, 0x4150, 0x4160, 0x4170,
    0x4180, 0x4190, 0x41A0, 0x41B0, 0x41C0, 0x41D0, 0x41E0, 0x41F0,
    0x4200, 0x4210, 0x4220, 0x4230, 0x4240, 0x4250, 0x4260, 0x4270,
    0x4280, 0x4290, 0x42A0, 0x42B0, 0x42C0, 0x42D0, 0x42E0, 0x42F0,
    0x4300, 0x4310, 0x4320, 0x4330, 0x4340, 0x4350, 0x4360, 0x4370,
    0x4380, 0x4390, 0x43A0, 0x43B0, 0x43C0, 0x43D0, 0x43E0, 0x7FC0,
};

typedef struct table { __m512i t0, t1, t2, t3; } table;

static inline table load_table(void) {
    return (table){_mm512_load_si512(magnitudes), _mm512_load_si512(magnitudes + 32), _mm512_load_si512(magnitudes + 64),
                   _mm512_load_si512(magnitudes + 96)};
}

/* 32 codes (zero-extended to words) to 32 bf16 words */
static inline __m512i convert32(const table *t, __m512i x) {
    const __m512i lo = _mm512_permutex2var_epi16(t->t0, x, t->t1); /* magnitudes 0..63 (index bits 0-5) */
    const __m512i hi = _mm512_permutex2var_epi16(t->t2, x, t->t3); /* 64..127 */
    const __m512i r = _mm512_mask_blend_epi16(_mm512_test_epi16_mask(x, _mm512_set1_epi16(0x40)), lo, hi);
    return _mm512_or_si512(r, _mm512_slli_epi16(_mm512_and_si512(x, _mm512_set1_epi16(0x80)), 8));
}

static inline __mmask32 first(int64_t n) { return n >= 32 ? 0xffffffffu : (__mmask32)((1u << n) - 1u); }

void lig_fp8_to_bf16__avx512(int64_t rows, int64_t n, const uint8_t *src, int64_t lds, uint16_t *dst, int64_t ldd) {
    const table t = load_table();
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n; j += 32) {
            const __mmask32 live = first(n - j);
            const __m512i x = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(live, src + r * lds + j));
            _mm512_mask_storeu_epi16(dst + r * ldd + j, live, convert32(&t, x));
        }
}

void lig_fp8_to_f32__avx512(int64_t rows, int64_t n, const uint8_t *src, int64_t lds, float *dst, int64_t ldd) {
    const table t = load_table();
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n; j += 32) {
            const __mmask32 live = first(n - j);
            const __m512i w = convert32(&t, _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(live, src + r * lds + j)));
            /* bf16 words to fp32 bits: zero-extend, shift into the upper half */
            const __m512i lo = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(w)), 16);
            const __m512i hi = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(w, 1)), 16);
            _mm512_mask_storeu_epi32(dst + r * ldd + j, (__mmask16)live, lo);
            _mm512_mask_storeu_epi32(dst + r * ldd + j + 16, (__mmask16)(live >> 16), hi);
        }
}

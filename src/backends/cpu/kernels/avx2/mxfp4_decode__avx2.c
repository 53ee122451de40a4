/* MXFP4 code rows to values, AVX2 (see kernels.h, lig_mxfp4_decode_kernel): 16 code bytes (one
 * 32-value block) a step, each nibble looked up in the 16-entry table by vpshufb, the low and high
 * nibbles interleaved by vpunpck{l,h}bw (element 2j, then 2j + 1), the block's sum by vpsadbw on the
 * values biased to unsigned (+ 128, less 32 * 128). A row's last short block goes through a zeroed
 * scratch, so no byte past D / 2 is read. Once per stripe (queries) and per key block, for every
 * query row: a row of D = 128 costs 4 steps, where the table walk cost 64 lookups. */
#include <immintrin.h>
#include <string.h>

#include "backends/cpu/kernels/avx2/avx2.h"

static inline void decode_block(__m128i codes, __m128i table, int8_t *out, int32_t *sum) {
    const __m128i nib = _mm_set1_epi8(15);
    const __m128i lo = _mm_shuffle_epi8(table, _mm_and_si128(codes, nib));
    const __m128i hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(codes, 4), nib));
    const __m128i a = _mm_unpacklo_epi8(lo, hi), b = _mm_unpackhi_epi8(lo, hi);
    _mm_storeu_si128((__m128i *)(void *)out, a);
    _mm_storeu_si128((__m128i *)(void *)(out + 16), b);
    if (!sum) return;
    const __m128i bias = _mm_set1_epi8(-128); /* x + 128 as an unsigned byte: x ^ 0x80 */
    const __m128i s = _mm_add_epi64(_mm_sad_epu8(_mm_xor_si128(a, bias), _mm_setzero_si128()),
                                    _mm_sad_epu8(_mm_xor_si128(b, bias), _mm_setzero_si128()));
    *sum = (int32_t)(_mm_cvtsi128_si32(s) + _mm_extract_epi32(s, 2)) - 32 * 128;
}

void lig_mxfp4_decode__avx2(int64_t n, int64_t D, const char *const *rows, const int8_t table[16], int8_t *out,
                            int64_t ldo, int32_t *sums, int64_t lds) {
    __m128i t;
    memcpy(&t, table, sizeof t);
    const int64_t half = D / 2, nblk = (D + 31) / 32;
    for (int64_t r = 0; r < n; r++) {
        const char *p = rows[r];
        int8_t *o = out + r * ldo;
        int32_t *sr = sums ? sums + r * lds : NULL;
        int64_t b = 0;
        for (; (b + 1) * 16 <= half; b++)
            decode_block(_mm_loadu_si128((const __m128i *)(const void *)(p + b * 16)), t, o + b * 32, sr ? sr + 2 * b : NULL);
        if (b < nblk) { /* the short last block: its codes, then zero codes (value 0) */
            char tail[16] = {0};
            memcpy(tail, p + b * 16, (size_t)(half - b * 16));
            __m128i c;
            memcpy(&c, tail, sizeof c);
            decode_block(c, t, o + b * 32, sr ? sr + 2 * b : NULL);
        }
    }
}

/* int8 GEMM micro-kernel, 6 key rows x 16 query columns, AVX2 (see kernels.h), exact by
 * sign-extension to int16 and vpmaddwd (vpmaddubsw would saturate its int16 pair sums).
 *
 * B panel (16 columns, kr = 2, int16 sign-extended at pack time, once per query block):
 *   panel[(p*16 + j)*2 + e] = B[2p + e][j]      (p < ceil(K/2), zero-padded)
 * A rows are sign-extended with vpmovsxbw into a stack buffer, KC values at a time (the odd tail
 * copied through a zeroed scratch, so no byte past column kc is read); each pair of a row is then
 * one 32-bit broadcast (the chunk walk is i8_gemm_ymm_chunks.h, shared with avxvnni). Per pair:
 * 2 B loads, 6 broadcasts, 12 vpmaddwd + 12 vpaddd into 12 ymm accumulators. vpmaddwd lanes: a0*b0 + a1*b1, |.| <= 2^15, so with K <= 65536 every partial sum
 * is below 2^30 in magnitude: exact int32. */
#include <immintrin.h>
#include <string.h>

#include "backends/cpu/kernels/avx2/avx2.h"

#define MR 6
#define NR 16
#define KC 256 /* values of A converted per chunk (even) */

typedef int16_t staged_t; /* A sign-extended to int16 */
typedef int16_t panel_t;

#include "backends/cpu/kernels/avx2/i8_gemm_ymm_chunks.h"

void lig_i8_pack_b_6x16__avx2(int64_t K, int64_t N, const int8_t *src, int64_t ld, void *packed,
                              int64_t panel_bytes) {
    lig_i8_pack_int16_pairs(NR, K, N, src, ld, packed, panel_bytes);
}

/* Row i's values [k0, k0 + len) as int16 into buf (len rounded up to even with a zero). */
static inline void stage_row(const int8_t *a, int64_t len, int16_t *buf) {
    int64_t k = 0;
    for (; k + 16 <= len; k += 16)
        _mm256_storeu_si256((__m256i *)(void *)(buf + k), _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(a + k))));
    if (k < len) {
        int8_t tmp[16] = {0};
        memcpy(tmp, a + k, (size_t)(len - k));
        _mm256_storeu_si256((__m256i *)(void *)(buf + k), _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(void *)tmp)));
    }
}

/* acc += x . b as int16 pairs: vpmaddwd, then vpaddd */
static inline __attribute__((always_inline)) void multiply_add_group(__m256i acc[2], __m256i x, __m256i b0,
                                                                     __m256i b1) {
    acc[0] = _mm256_add_epi32(acc[0], _mm256_madd_epi16(x, b0));
    acc[1] = _mm256_add_epi32(acc[1], _mm256_madd_epi16(x, b1));
}

static inline __attribute__((always_inline)) void tile(const int mr, int64_t nr, int64_t kc, const int8_t *a,
                                                       int64_t lda, const void *b_panel, int32_t *c, int64_t ldc,
                                                       bool accumulate) {
    const __m256i m0 = ymm_lanes(nr), m1 = ymm_lanes(nr - 8);
    __m256i acc[MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) {
        acc[i][0] = accumulate ? _mm256_maskload_epi32(c + i * ldc, m0) : _mm256_setzero_si256();
        acc[i][1] = accumulate ? _mm256_maskload_epi32(c + i * ldc + 8, m1) : _mm256_setzero_si256();
    }
    ymm_accumulate_chunks(mr, kc, a, lda, b_panel, acc);
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) {
        _mm256_maskstore_epi32(c + i * ldc, m0, acc[i][0]);
        _mm256_maskstore_epi32(c + i * ldc + 8, m1, acc[i][1]);
    }
}

#include "backends/cpu/kernels/i8_gemm_rows.h"

void lig_i8_gemm_ukernel_6x16__avx2(int64_t mr, int64_t nr, int64_t kc, const int8_t *a, int64_t lda,
                                    const void *b_panel, int32_t *c, int64_t ldc, bool accumulate) {
    tile_rows(mr, nr, kc, a, lda, b_panel, c, ldc, accumulate);
}

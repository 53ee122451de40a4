/* What the two 6x16 int8 micro-kernels on ymm share (avx2's vpmaddwd one and avxvnni's vpdpbusd
 * one): the column masks of a partial tile and the walk over K in chunks of KC values, with the
 * 12 accumulators in registers throughout. Per chunk each row of A is staged on the stack
 * (stage_row: widened to int16, or flipped to u8); then per group of K (2 int16 or 4 u8: one
 * 32-bit lane) two B loads cover the 16 columns and each row's group, broadcast, goes through
 * multiply_add_group (the kernel's own instructions). 12 accumulators + 2 B vectors + 1 broadcast:
 * 15 of the 16 ymm registers.
 *
 * Included by both files after MR, NR, KC and the typedefs staged_t (an element of a staged row)
 * and panel_t (an element of the B panel, GROUP values of K per column together); each file
 * defines stage_row and multiply_add_group, declared here. Compiled with each file's target flags:
 * static inline, no symbol of its own. */
#ifndef LIG_BACKENDS_CPU_KERNELS_AVX2_I8_GEMM_YMM_CHUNKS_H
#define LIG_BACKENDS_CPU_KERNELS_AVX2_I8_GEMM_YMM_CHUNKS_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

/* [k0, k0 + len) of a row of A into buf, zero-padded to a whole group (at most 16 values past len
 * written), no byte past len read */
static inline void stage_row(const int8_t *a, int64_t len, staged_t *buf);
/* acc[0] += x . b0 and acc[1] += x . b1 for one group of K (x: the row's group in every lane) */
static inline __attribute__((always_inline)) void multiply_add_group(__m256i acc[2], __m256i x, __m256i b0,
                                                                     __m256i b1);

/* K values per group: 2 int16, or 4 u8, make one 32-bit lane */
#define GROUP ((int64_t)(4 / sizeof(staged_t)))

/* lanes j < n of a ymm of 8 int32, as a maskload/maskstore mask */
static inline __m256i ymm_lanes(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n < 0 ? 0 : n > 8 ? 8 : n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* acc[i][*] += the products of rows i < mr of A (kc values, row stride lda) with the panel b */
static inline __attribute__((always_inline)) void ymm_accumulate_chunks(const int mr, int64_t kc, const int8_t *a,
                                                                        int64_t lda, const panel_t *b,
                                                                        __m256i acc[][2]) {
    staged_t buf[MR][KC + 16];
    for (int64_t k0 = 0; k0 < kc; k0 += KC) {
        const int64_t len = kc - k0 < KC ? kc - k0 : KC;
        for (int i = 0; i < mr; i++) stage_row(a + i * lda + k0, len, buf[i]);
        const panel_t *bp = b + k0 * NR; /* group k0 / GROUP, GROUP * NR elements per group */
        for (int64_t g = 0; g < (len + GROUP - 1) / GROUP; g++) {
            const __m256i b0 = _mm256_loadu_si256((const __m256i *)(const void *)(bp + g * GROUP * NR));
            const __m256i b1 = _mm256_loadu_si256((const __m256i *)(const void *)(bp + g * GROUP * NR + 32 / sizeof(panel_t)));
#pragma GCC unroll 6
            for (int i = 0; i < mr; i++) {
                int32_t group;
                memcpy(&group, &buf[i][GROUP * g], sizeof group);
                multiply_add_group(acc[i], _mm256_set1_epi32(group), b0, b1);
            }
        }
    }
}

#endif /* LIG_BACKENDS_CPU_KERNELS_AVX2_I8_GEMM_YMM_CHUNKS_H */

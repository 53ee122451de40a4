/* What the two 12x32 int8 micro-kernels on zmm share (avx512's vpmaddwd one and avx512vnni's
 * vpdpbusd one): the column masks of a partial tile, the broadcast of one group of A, and the walk
 * over K in chunks of KC values. Per chunk each row of A is staged on the stack (stage_row: widened
 * to int16, or flipped to u8), the chunk's products are summed into accumulators that start in
 * registers at 0 (chunk_products, with the kernel's own instructions), and these are added to the stack
 * sums after the chunk, so no accumulator is live across the next chunk's staging (GCC spilled them
 * when they were).
 *
 * Included by both files after MR, NR, KC and the typedefs staged_t (an element of a staged row)
 * and panel_t (an element of the B panel, GROUP values of K per column together); each file
 * defines stage_row and multiply_add_group, declared here. Compiled with each file's target flags: static inline, no symbol of its own. */
#ifndef LIG_BACKENDS_CPU_KERNELS_AVX512_I8_GEMM_ZMM_CHUNKS_H
#define LIG_BACKENDS_CPU_KERNELS_AVX512_I8_GEMM_ZMM_CHUNKS_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

/* [k0, k0 + len) of a row of A into buf, zero-padded to a whole group, no byte past len read */
static inline void stage_row(const int8_t *a, int64_t len, staged_t *buf);
/* acc[0] += x . b0 and acc[1] += x . b1 for one group of K (x: the row's group in every lane) */
static inline __attribute__((always_inline)) void multiply_add_group(__m512i acc[2], __m512i x, __m512i b0,
                                                                     __m512i b1);

/* K values per group: 2 int16, or 4 u8, make one 32-bit lane */
#define GROUP ((int64_t)(4 / sizeof(staged_t)))

/* columns j < nr of the two 16-lane halves of a 32-column tile, as store/load masks */
static inline void zmm_column_masks(int64_t nr, __mmask16 *m0, __mmask16 *m1) {
    *m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1u);
    *m1 = nr >= 32 ? 0xffff : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1u);
}

/* the 4 bytes at p (2 int16 of a widened row, or 4 u8 of a flipped one) in every 32-bit lane */
static inline __m512i broadcast_group(const void *p) {
    int32_t group;
    memcpy(&group, p, sizeof group);
    return _mm512_set1_epi32(group);
}

/* acc[i][*] += the products of staged row i (len values) with the chunk's panel bp, i < mr: per
 * group 2 B loads (32 columns), then per row one broadcast and multiply_add_group */
static inline __attribute__((always_inline)) void chunk_products(const int mr, int64_t len, staged_t buf[][KC],
                                                                 const panel_t *bp, __m512i acc[][2]) {
    for (int64_t g = 0; g < (len + GROUP - 1) / GROUP; g++) {
        const __m512i b0 = _mm512_loadu_si512(bp + g * GROUP * NR);
        const __m512i b1 = _mm512_loadu_si512(bp + g * GROUP * NR + 64 / sizeof(panel_t));
#pragma GCC unroll 12
        for (int i = 0; i < mr; i++) multiply_add_group(acc[i], broadcast_group(&buf[i][GROUP * g]), b0, b1);
    }
}

/* sum[i] += the products of rows i < mr of A (kc values, row stride lda) with the panel b */
static inline __attribute__((always_inline)) void accumulate_chunks(const int mr, int64_t kc, const int8_t *a,
                                                                    int64_t lda, const panel_t *b,
                                                                    int32_t sum[][NR]) {
    staged_t buf[MR][KC];
    for (int64_t k0 = 0; k0 < kc; k0 += KC) {
        const int64_t len = kc - k0 < KC ? kc - k0 : KC;
        for (int i = 0; i < mr; i++) stage_row(a + i * lda + k0, len, buf[i]);
        __m512i acc[MR][2];
#pragma GCC unroll 12
        for (int i = 0; i < mr; i++) {
            acc[i][0] = _mm512_setzero_si512();
            acc[i][1] = _mm512_setzero_si512();
        }
        chunk_products(mr, len, buf, b + k0 * NR, acc);
#pragma GCC unroll 12
        for (int i = 0; i < mr; i++) {
            _mm512_store_si512(sum[i], _mm512_add_epi32(_mm512_load_si512(sum[i]), acc[i][0]));
            _mm512_store_si512(sum[i] + 16, _mm512_add_epi32(_mm512_load_si512(sum[i] + 16), acc[i][1]));
        }
    }
}

#endif /* LIG_BACKENDS_CPU_KERNELS_AVX512_I8_GEMM_ZMM_CHUNKS_H */

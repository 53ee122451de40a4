/* What the two 12x32 int8 micro-kernels on zmm share (avx512's vpmaddwd one and avx512vnni's
 * vpdpbusd one): the column masks of a partial tile, the broadcast of one group of A, and the
 * per-chunk accumulators, which start in
 * registers at 0 and are added to the stack sums after each chunk, so no accumulator is live across
 * the next chunk's staging of A (GCC spilled them when they were). Included by both files, compiled
 * with each one's target flags: static inline, no symbol of its own. Needs MR and NR (12, 32). */
#ifndef LIG_BACKENDS_CPU_KERNELS_AVX512_I8_GEMM_ZMM_SUMS_H
#define LIG_BACKENDS_CPU_KERNELS_AVX512_I8_GEMM_ZMM_SUMS_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

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

static inline __attribute__((always_inline)) void zero_accumulators(const int mr, __m512i acc[][2]) {
#pragma GCC unroll 12
    for (int i = 0; i < mr; i++) {
        acc[i][0] = _mm512_setzero_si512();
        acc[i][1] = _mm512_setzero_si512();
    }
}

static inline __attribute__((always_inline)) void add_to_sums(const int mr, __m512i acc[][2],
                                                              int32_t sum[][NR]) {
#pragma GCC unroll 12
    for (int i = 0; i < mr; i++) {
        _mm512_store_si512(sum[i], _mm512_add_epi32(_mm512_load_si512(sum[i]), acc[i][0]));
        _mm512_store_si512(sum[i] + 16, _mm512_add_epi32(_mm512_load_si512(sum[i] + 16), acc[i][1]));
    }
}

#endif /* LIG_BACKENDS_CPU_KERNELS_AVX512_I8_GEMM_ZMM_SUMS_H */

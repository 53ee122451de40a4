/* int8 GEMM micro-kernel, 6 key rows x 16 query columns, AVX-VNNI: the VEX-encoded vpdpbusd on
 * ymm registers (Intel Alder Lake and later client cores, AMD Zen 5; see kernels.h), for CPUs
 * with AVX2 and AVX-VNNI but no AVX-512, which would otherwise take the avx2 vpmaddwd path.
 *
 * The sign is handled as in the avx512vnni kernel: vpdpbusd multiplies unsigned by signed bytes,
 * so A (signed keys) goes in as A + 128 (u8: the sign bit flipped, a ^ 0x80) and the surplus is
 * taken off once per column, exactly in int32:
 *   sum_k (A[i][k] + 128) B[k][j]  -  128 * sum_k B[k][j]  =  sum_k A[i][k] B[k][j]
 * the corrections 128 * sum_k B[k][j] computed at pack time (lig_i8_pack_u8s8_quads).
 *
 * B panel (16 columns, kr = 4, int8, zero-padded), then the corrections:
 *   panel[(q*16 + j)*4 + e] = B[4q + e][j]      (q < ceil(K/4))
 *   ((int32_t *)(panel + ceil(K/4)*64))[j] = 128 * sum_k B[k][j]
 * A rows are flipped to u8 into a stack buffer KC values at a time (the tail flipped one byte at a
 * time and zero-padded to a whole quad: no byte past column kc is read); each quad of a row is
 * then one 32-bit broadcast (the chunk walk is avx2's, i8_gemm_ymm_chunks.h). Per quad: 2 B
 * loads, 6 broadcasts, 12 vpdpbusd into 12 ymm accumulators (15 of the 16 ymm registers).
 *
 * No int32 overflow for K <= 65536 (the config's max_k), the avx512vnni kernel's bound: one
 * product |(A + 128) B| <= 255 * 128 = 32640, the accumulator starts at 0, so after K products
 * |acc| <= 32640 K <= 2139095040 < 2^31 - 1; |correction| <= 2^14 K <= 2^30 and the result
 * |sum A B| <= 2^14 K <= 2^30, so acc - correction is exact; with accumulate, C + result must fit
 * (the caller's). vpdpbusd, not vpdpbusds: nothing saturates. */
#include <immintrin.h>

#include "backends/cpu/kernels/avxvnni/avxvnni.h"

#define MR 6
#define NR 16
#define KC 256 /* values of A flipped per chunk (a multiple of 32) */

typedef uint8_t staged_t; /* A flipped to u8 */
typedef int8_t panel_t;

#include "backends/cpu/kernels/avx2/i8_gemm_ymm_chunks.h"

void lig_i8_pack_b_6x16__avxvnni(int64_t K, int64_t N, const int8_t *src, int64_t ld, void *packed,
                                 int64_t panel_bytes) {
    lig_i8_pack_u8s8_quads(NR, K, N, src, ld, packed, panel_bytes);
}

/* [0, len) of a row of A as u8 (a ^ 0x80) into buf, zeros up to a multiple of 4 */
static inline void stage_row(const int8_t *a, int64_t len, uint8_t *buf) {
    const __m256i bias = _mm256_set1_epi8((char)0x80);
    int64_t k = 0;
    for (; k + 32 <= len; k += 32)
        _mm256_storeu_si256((__m256i *)(void *)(buf + k),
                            _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(const void *)(a + k)), bias));
    for (; k < len; k++) buf[k] = (uint8_t)a[k] ^ 0x80u;
    for (; k % 4; k++) buf[k] = 0;
}

/* acc += x (u8) . b (s8), as _mm256_dpbusd_avx_epi32(acc, x, b); in asm because with the intrinsic
 * GCC 12 copied the accumulators between registers around the instructions (12 register moves
 * per 12 vpdpbusd), as it did in the avx512vnni kernel */
static inline __attribute__((always_inline)) void multiply_add_group(__m256i acc[2], __m256i x, __m256i b0,
                                                                     __m256i b1) {
    __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc[0]) : "x"(x), "x"(b0));
    __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc[1]) : "x"(x), "x"(b1));
}

/* The sums of the flipped A (from 0, in registers across the chunks), then the corrections off. */
static inline __attribute__((always_inline)) void tile(const int mr, int64_t nr, int64_t kc, const int8_t *a,
                                                       int64_t lda, const void *b_panel, int32_t *c, int64_t ldc,
                                                       bool accumulate) {
    const __m256i m0 = ymm_lanes(nr), m1 = ymm_lanes(nr - 8);
    const int8_t *b = b_panel;
    __m256i acc[MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) acc[i][0] = acc[i][1] = _mm256_setzero_si256();
    ymm_accumulate_chunks(mr, kc, a, lda, b, acc);
    const int32_t *corr = (const int32_t *)(const void *)(b + (kc + 3) / 4 * 4 * NR);
    const __m256i corr0 = _mm256_loadu_si256((const __m256i *)(const void *)corr);
    const __m256i corr1 = _mm256_loadu_si256((const __m256i *)(const void *)(corr + 8));
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) {
        __m256i r0 = _mm256_sub_epi32(acc[i][0], corr0), r1 = _mm256_sub_epi32(acc[i][1], corr1);
        if (accumulate) {
            r0 = _mm256_add_epi32(r0, _mm256_maskload_epi32(c + i * ldc, m0));
            r1 = _mm256_add_epi32(r1, _mm256_maskload_epi32(c + i * ldc + 8, m1));
        }
        _mm256_maskstore_epi32(c + i * ldc, m0, r0);
        _mm256_maskstore_epi32(c + i * ldc + 8, m1, r1);
    }
}

#include "backends/cpu/kernels/i8_gemm_rows.h"

void lig_i8_gemm_ukernel_6x16__avxvnni(int64_t mr, int64_t nr, int64_t kc, const int8_t *a, int64_t lda,
                                       const void *b_panel, int32_t *c, int64_t ldc, bool accumulate) {
    tile_rows(mr, nr, kc, a, lda, b_panel, c, ldc, accumulate);
}

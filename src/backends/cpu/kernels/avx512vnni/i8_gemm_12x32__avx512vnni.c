/* int8 GEMM micro-kernel, 12 key rows x 32 query columns, AVX512_VNNI vpdpbusd (see kernels.h).
 *
 * vpdpbusd multiplies unsigned by signed bytes, so A (signed keys) goes in as A + 128 (u8: the
 * sign bit flipped, a ^ 0x80) and the surplus is taken off once per column:
 *   sum_k (A[i][k] + 128) B[k][j]  -  128 * sum_k B[k][j]  =  sum_k A[i][k] B[k][j]
 * the column corrections 128 * sum_k B[k][j] computed at pack time, in int32.
 *
 * B panel (32 columns, kr = 4, int8, zero-padded; lig_i8_pack_u8s8_quads), then the corrections:
 *   panel[(q*32 + j)*4 + e] = B[4q + e][j]      (q < ceil(K/4))
 *   ((int32_t *)(panel + ceil(K/4)*128))[j] = 128 * sum_k B[k][j]
 * A rows are flipped to u8 into a stack buffer KC values at a time (masked tail loads, zeros
 * after: no byte past column kc is read; padded B is zero anyway).
 *
 * No int32 overflow for K <= 65536 (the config's max_k), every step bounded:
 *   one u8 x s8 product: 0 <= A + 128 <= 255, -128 <= B <= 127, so |.| <= 255 * 128 = 32640;
 *   the accumulator starts at 0 and after K products |acc| <= 32640 K <= 2139095040 < 2^31 - 1;
 *   |correction| <= 128 * 128 K = 2^14 K <= 2^30, and the exact result |sum A B| <= 2^14 K <= 2^30,
 *   so acc - correction (= the result) is exact; with accumulate, C + result must fit (the caller's).
 * (vpdpbusd, not vpdpbusds: nothing saturates, though the bound above means nothing would.) */
#include <immintrin.h>

#include "backends/cpu/kernels/avx512vnni/avx512vnni.h"

#define MR 12
#define NR 32
#define KC 256 /* a multiple of 64 */

typedef uint8_t staged_t; /* A flipped to u8 */
typedef int8_t panel_t;

#include "backends/cpu/kernels/avx512/i8_gemm_zmm_chunks.h"

void lig_i8_pack_b_12x32__avx512vnni(int64_t K, int64_t N, const int8_t *src, int64_t ld, void *packed,
                                     int64_t panel_bytes) {
    lig_i8_pack_u8s8_quads(NR, K, N, src, ld, packed, panel_bytes);
}

/* as u8 (a ^ 0x80), zeros up to a multiple of 64 */
static inline void stage_row(const int8_t *a, int64_t len, uint8_t *buf) {
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    for (int64_t k = 0; k < len; k += 64) {
        const __mmask64 live = len - k >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (len - k)) - 1);
        _mm512_storeu_si512(buf + k, _mm512_maskz_mov_epi8(live, _mm512_xor_si512(_mm512_maskz_loadu_epi8(live, a + k), bias)));
    }
}

/* acc += x (u8) . b (s8), as _mm512_dpbusd_epi32(acc, x, b); in asm because GCC 12 copied every
 * accumulator between registers around the intrinsic */
static inline __attribute__((always_inline)) void multiply_add_group(__m512i acc[2], __m512i x, __m512i b0,
                                                                     __m512i b1) {
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc[0]) : "v"(x), "v"(b0));
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc[1]) : "v"(x), "v"(b1));
}

/* The sums of the flipped A, then the corrections off. */
static inline __attribute__((always_inline)) void tile(const int mr, int64_t nr, int64_t kc, const int8_t *a,
                                                       int64_t lda, const void *b_panel, int32_t *c, int64_t ldc,
                                                       bool accumulate) {
    __mmask16 m0, m1;
    zmm_column_masks(nr, &m0, &m1);
    const int8_t *b = b_panel;
    int32_t sum[MR][NR] __attribute__((aligned(64))) = {{0}};
    accumulate_chunks(mr, kc, a, lda, b, sum);
    const int32_t *corr = (const int32_t *)(const void *)(b + (kc + 3) / 4 * 4 * NR);
    const __m512i corr0 = _mm512_loadu_si512(corr), corr1 = _mm512_loadu_si512(corr + 16);
#pragma GCC unroll 12
    for (int i = 0; i < mr; i++) {
        __m512i r0 = _mm512_sub_epi32(_mm512_load_si512(sum[i]), corr0);
        __m512i r1 = _mm512_sub_epi32(_mm512_load_si512(sum[i] + 16), corr1);
        if (accumulate) {
            r0 = _mm512_add_epi32(r0, _mm512_maskz_loadu_epi32(m0, c + i * ldc));
            r1 = _mm512_add_epi32(r1, _mm512_maskz_loadu_epi32(m1, c + i * ldc + 16));
        }
        _mm512_mask_storeu_epi32(c + i * ldc, m0, r0);
        _mm512_mask_storeu_epi32(c + i * ldc + 16, m1, r1);
    }
}

#include "backends/cpu/kernels/i8_gemm_rows.h"

void lig_i8_gemm_ukernel_12x32__avx512vnni(int64_t mr, int64_t nr, int64_t kc, const int8_t *a, int64_t lda,
                                           const void *b_panel, int32_t *c, int64_t ldc, bool accumulate) {
    tile_rows(mr, nr, kc, a, lda, b_panel, c, ldc, accumulate);
}

/* int8 GEMM micro-kernel, 8 key rows x 8 query columns, SMMLA (FEAT_I8MM; see kernels.h): each
 * instruction multiplies a 2 x 8 block of A (two rows, 8 values of k) by an 8 x 2 block of B
 * (two columns) into a 2 x 2 block of int32 sums, 32 products, exact.
 *
 * B panel (8 columns, kr = 8, int8, once per query block): per 8 values of k and pair of columns,
 * 16 bytes: column 2q's 8 values then column 2q+1's,
 *   panel[((k/8)*4 + j/2)*16 + (j%2)*8 + k%8] = B[k][j]      (k < K rounded up to 8, zero-padded)
 * Per 8 values of K: each pair of A rows is two 8-byte loads into one register (rows past mr are
 * zeros, row tails through a zeroed scratch), four B loads cover the 8 columns, and 16 SMMLA
 * update the 16 accumulators (row pair p x column pair q, lanes r0c0 r0c1 r1c0 r1c1), which are
 * unzipped into rows at the end. 16 accumulators + 4 A pairs + 4 B vectors of the 32 registers.
 * A lane adds 8 products of at most 2^14 each step, so with K <= 65536 every partial sum is below
 * 2^30: exact int32. */
#include <arm_neon.h>
#include <string.h>

#include "backends/cpu/kernels/neon/i8_tile_store.h"
#include "backends/cpu/kernels/neoni8mm/neoni8mm.h"

#define MR 8
#define NR 8

/* runs of 8 values of k, two columns per 16 bytes (the file's comment) */
static const lig_i8_run_layout b_layout = {.nr = NR, .kr = 8, .run = 8, .cols = 2};

void lig_i8_pack_b_8x8__neoni8mm(int64_t K, int64_t N, const int8_t *src, int64_t ld, void *packed, int64_t panel_bytes) {
    lig_i8_pack_runs(&b_layout, K, N, src, ld, packed, panel_bytes);
}

enum { PAIRS = MR / 2, QUADS = NR / 2 };

/* 8 values of K from k0: four B loads (the column pairs), then per pair of rows their 8 bytes
 * each (whole, or on the last, short step through zeroed copies; a row past mr is zeros) joined
 * into one register and multiplied into the pair's four 2 x 2 blocks */
static inline __attribute__((always_inline)) void step(const int mr, const bool tail, int64_t k0, int64_t kc,
                                                       const int8_t *a, int64_t lda, const int8_t *b,
                                                       int32x4_t acc[][QUADS]) {
    const int8_t *bp = b + k0 * NR; /* 8 values of k x NR columns per step */
    int8x16_t bv[QUADS];
#pragma GCC unroll 4
    for (int q = 0; q < QUADS; q++) bv[q] = vld1q_s8(bp + 16 * q);
#pragma GCC unroll 4
    for (int p = 0; p < (mr + 1) / 2; p++) {
        const int8_t *r0 = a + (2 * p) * lda, *r1 = r0 + lda;
        const int8x8_t x0 = tail ? i8_load8(r0, k0, kc) : vld1_s8(r0 + k0);
        const int8x8_t x1 = 2 * p + 1 >= mr ? vdup_n_s8(0) : tail ? i8_load8(r1, k0, kc) : vld1_s8(r1 + k0);
        const int8x16_t ap = vcombine_s8(x0, x1);
#pragma GCC unroll 4
        for (int q = 0; q < QUADS; q++) acc[p][q] = vmmlaq_s32(acc[p][q], ap, bv[q]);
    }
}

static inline __attribute__((always_inline)) void tile(const int mr, int64_t nr, int64_t kc, const int8_t *a,
                                                       int64_t lda, const void *b_panel, int32_t *c, int64_t ldc,
                                                       bool accumulate) {
    const int8_t *b = b_panel;
    const int pairs = (mr + 1) / 2;
    int32x4_t acc[PAIRS][QUADS];
#pragma GCC unroll 4
    for (int p = 0; p < pairs; p++)
#pragma GCC unroll 4
        for (int q = 0; q < QUADS; q++) acc[p][q] = vdupq_n_s32(0);
    int64_t k0 = 0;
    for (; k0 + 8 <= kc; k0 += 8) step(mr, false, k0, kc, a, lda, b, acc);
    if (k0 < kc) step(mr, true, k0, kc, a, lda, b, acc);
#pragma GCC unroll 4
    for (int p = 0; p < pairs; p++) {
        /* rows 2p and 2p+1, columns 0-3 and 4-7: the 64-bit halves of the 2 x 2 blocks unzipped */
        int32x4_t row[2][2];
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            const int64x2_t x = vreinterpretq_s64_s32(acc[p][2 * h]), y = vreinterpretq_s64_s32(acc[p][2 * h + 1]);
            row[0][h] = vreinterpretq_s32_s64(vzip1q_s64(x, y));
            row[1][h] = vreinterpretq_s32_s64(vzip2q_s64(x, y));
        }
#pragma GCC unroll 2
        for (int e = 0; e < 2; e++) {
            if (2 * p + e >= mr) break;
            int32_t *ci = c + (2 * p + e) * ldc;
            i8_store4(ci, row[e][0], nr, accumulate);
            if (nr > 4) i8_store4(ci + 4, row[e][1], nr - 4, accumulate);
        }
    }
}

#include "backends/cpu/kernels/i8_gemm_rows.h"

void lig_i8_gemm_ukernel_8x8__neoni8mm(int64_t mr, int64_t nr, int64_t kc, const int8_t *a, int64_t lda,
                                       const void *b_panel, int32_t *c, int64_t ldc, bool accumulate) {
    tile_rows(mr, nr, kc, a, lda, b_panel, c, ldc, accumulate);
}

/* int8 GEMM micro-kernel, 8 key rows x 8 query columns, NEON without the dot-product extension
 * (see kernels.h), exact by widening to int16 and SMLAL/SMLAL2 by element (int16 x int16 into
 * int32 lanes).
 *
 * B panel (8 columns, kr = 8, int16 sign-extended at pack time, once per query block):
 *   panel[k*8 + j] = B[k][j]      (k < K rounded up to 8, zero-padded)
 * Per 8 values of K: each of the mr rows of A is 8 bytes widened once (LD1 + SXTL); then per k
 * one B load (8 columns as int16) feeds 2 x mr multiply-adds by element (SMLAL on columns 0-3,
 * SMLAL2 on 4-7, the row's k-th value as the lane). 16 accumulators + 8 A rows + 1 B vector of
 * the 32 registers. A product is at most 2^14 in magnitude, so with K <= 65536 every partial
 * sum is below 2^30: exact int32. */
#include <arm_neon.h>
#include <string.h>

#include "backends/cpu/kernels/neon/i8_tile_store.h"
#include "backends/cpu/kernels/neon/neon.h"

#define MR 8
#define NR 8

/* panel[k*8 + j]: rows of 8 int16, one per k (the file's comment) */
static const lig_i8_run_layout b_layout = {.nr = NR, .kr = 8, .run = 1, .cols = 1, .int16 = true};

void lig_i8_pack_b_8x8__neon(int64_t K, int64_t N, const int8_t *src, int64_t ld, void *packed, int64_t panel_bytes) {
    lig_i8_pack_runs(&b_layout, K, N, src, ld, packed, panel_bytes);
}

/* acc[i] += a_i[lane] * b for the 8 columns of b (lane: a compile-time constant) */
#define MULTIPLY_ADD_LANE(lane)                                                                   \
    do {                                                                                          \
        const int16x8_t bk = vld1q_s16(bp + (lane) * NR);                                         \
        _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++) {                                    \
            acc[i][0] = vmlal_laneq_s16(acc[i][0], vget_low_s16(bk), ar[i], (lane));               \
            acc[i][1] = vmlal_high_laneq_s16(acc[i][1], bk, ar[i], (lane));                        \
        }                                                                                         \
    } while (0)

/* 8 values of K from k0: the rows' 8 bytes loaded whole, or (the last, short step) through zeroed
 * copies, widened, then the 8 values of k */
static inline __attribute__((always_inline)) void step(const int mr, const bool tail, int64_t k0, int64_t kc,
                                                       const int8_t *a, int64_t lda, const int16_t *b,
                                                       int32x4_t acc[][2]) {
    int16x8_t ar[MR];
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++) ar[i] = vmovl_s8(tail ? i8_load8(a + i * lda, k0, kc) : vld1_s8(a + i * lda + k0));
    const int16_t *bp = b + k0 * NR;
    MULTIPLY_ADD_LANE(0);
    MULTIPLY_ADD_LANE(1);
    MULTIPLY_ADD_LANE(2);
    MULTIPLY_ADD_LANE(3);
    MULTIPLY_ADD_LANE(4);
    MULTIPLY_ADD_LANE(5);
    MULTIPLY_ADD_LANE(6);
    MULTIPLY_ADD_LANE(7);
}

static inline __attribute__((always_inline)) void tile(const int mr, int64_t nr, int64_t kc, const int8_t *a,
                                                       int64_t lda, const void *b_panel, int32_t *c, int64_t ldc,
                                                       bool accumulate) {
    const int16_t *b = b_panel;
    int32x4_t acc[MR][2];
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++) acc[i][0] = acc[i][1] = vdupq_n_s32(0);
    int64_t k0 = 0;
    for (; k0 + 8 <= kc; k0 += 8) step(mr, false, k0, kc, a, lda, b, acc);
    if (k0 < kc) step(mr, true, k0, kc, a, lda, b, acc);
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++) {
        i8_store4(c + i * ldc, acc[i][0], nr, accumulate);
        if (nr > 4) i8_store4(c + i * ldc + 4, acc[i][1], nr - 4, accumulate);
    }
}

#include "backends/cpu/kernels/i8_gemm_rows.h"

void lig_i8_gemm_ukernel_8x8__neon(int64_t mr, int64_t nr, int64_t kc, const int8_t *a, int64_t lda,
                                   const void *b_panel, int32_t *c, int64_t ldc, bool accumulate) {
    tile_rows(mr, nr, kc, a, lda, b_panel, c, ldc, accumulate);
}

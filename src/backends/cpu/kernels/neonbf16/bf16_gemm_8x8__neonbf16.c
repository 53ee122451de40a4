/* bf16 GEMM micro-kernel, 8 rows x 8 columns, FEAT_BF16's BFMLALB/BFMLALT (see kernels.h). Each
 * of these widens 4 bf16 values (the even, or the odd, elements of its operands) to fp32 and does
 * an IEEE fused multiply-add: the product of two bf16 values is exact, each sum one rounding to
 * nearest even (they honour FPCR, which lig sets: no flush to zero, so subnormal inputs and
 * results are kept). BFDOT and BFMMLA are not used: they round their sums to odd and flush
 * subnormals whatever FPCR says (docs/cpu-kernels.md).
 *
 * B: the pairs layout, so a 128-bit load at pair row p gives 4 columns' pairs (B[2p][j],
 * B[2p+1][j]); A's pair (A[i][2p], A[i][2p+1]) is broadcast to every 32-bit lane (LD1R). BFMLALB
 * adds the even elements' products B[2p][j] A[i][2p], then BFMLALT the odd ones' B[2p+1][j]
 * A[i][2p+1], so every C element is one chain in k order. Per pair: 2 B loads and 8 broadcasts
 * feed 32 BFMLAL (2 column vectors x bottom and top x 8 rows) into 16 accumulators. 8 rows, not
 * 12: GCC 12 loads all the rows' broadcasts ahead of the multiply-adds, and with 12 rows (24
 * accumulators + 12 broadcasts + 2 B) it spilled accumulators in the loop. The by-element forms
 * would spare the broadcasts but need their A operand in v0-v15, which GCC 12 does not enforce
 * for them (the assembler rejects its choice). Partial columns go through zeroed copies,
 * so no pair past nr is read and no float past nr is written. */
#include <arm_neon.h>
#include <string.h>

#include "backends/cpu/kernels/neonbf16/neonbf16.h"
#include "backends/cpu/kernels/tile_rows.h"

#define MR 8

/* 4 columns' pairs from p, n of them live (<= 0: none), zeros after */
static inline bfloat16x8_t load_pairs(const uint16_t *p, int64_t n) {
    if (n >= 4) return vreinterpretq_bf16_u16(vld1q_u16(p));
    uint16_t t[8] = {0};
    if (n > 0) memcpy(t, p, sizeof(uint16_t) * 2 * (size_t)n);
    return vreinterpretq_bf16_u16(vld1q_u16(t));
}

static inline float32x4_t load_c(const float *p, int64_t n) {
    if (n >= 4) return vld1q_f32(p);
    float t[4] = {0, 0, 0, 0};
    if (n > 0) memcpy(t, p, sizeof(float) * (size_t)n);
    return vld1q_f32(t);
}

static inline void store_c(float *p, float32x4_t v, int64_t n) {
    if (n >= 4) {
        vst1q_f32(p, v);
        return;
    }
    float t[4];
    vst1q_f32(t, v);
    if (n > 0) memcpy(p, t, sizeof(float) * (size_t)n);
}

static inline __attribute__((always_inline)) void tile(const int mr, const bool full, int64_t nr, int64_t kc,
                                                       const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb,
                                                       float *c, int64_t ldc, bool accumulate) {
    float32x4_t acc[MR][2];
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++) {
        acc[i][0] = accumulate ? load_c(c + i * ldc, full ? 4 : nr) : vdupq_n_f32(0.0f);
        acc[i][1] = accumulate ? load_c(c + i * ldc + 4, full ? 4 : nr - 4) : vdupq_n_f32(0.0f);
    }
    for (int64_t p = 0; p < kc / 2; p++) {
        const uint16_t *bp = b + p * ldb * 2;
        const bfloat16x8_t b0 = full ? vreinterpretq_bf16_u16(vld1q_u16(bp)) : load_pairs(bp, nr);
        const bfloat16x8_t b1 = full ? vreinterpretq_bf16_u16(vld1q_u16(bp + 8)) : load_pairs(bp + 8, nr - 4);
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++) {
            uint32_t pair;
            memcpy(&pair, a + i * lda + 2 * p, sizeof pair);
            const bfloat16x8_t x = vreinterpretq_bf16_u32(vdupq_n_u32(pair));
            acc[i][0] = vbfmlalbq_f32(acc[i][0], b0, x);
            acc[i][1] = vbfmlalbq_f32(acc[i][1], b1, x);
            acc[i][0] = vbfmlaltq_f32(acc[i][0], b0, x);
            acc[i][1] = vbfmlaltq_f32(acc[i][1], b1, x);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++) {
        store_c(c + i * ldc, acc[i][0], full ? 4 : nr);
        store_c(c + i * ldc + 4, acc[i][1], full ? 4 : nr - 4);
    }
}

static inline __attribute__((always_inline)) void tile_rows(int64_t mr, const bool full, int64_t nr, int64_t kc,
                                                            const uint16_t *a, int64_t lda, const uint16_t *b,
                                                            int64_t ldb, float *c, int64_t ldc, bool accumulate) {
    LIG_TILE_ROWS(MR, mr, tile, full, nr, kc, a, lda, b, ldb, c, ldc, accumulate);
}

void lig_bf16_gemm_ukernel_8x8__neonbf16(int64_t mr, int64_t nr, int64_t kc, const uint16_t *a, int64_t lda,
                                         const uint16_t *b, int64_t ldb, float *c, int64_t ldc, bool accumulate) {
    if (nr == 8) tile_rows(mr, true, nr, kc, a, lda, b, ldb, c, ldc, accumulate);
    else tile_rows(mr, false, nr, kc, a, lda, b, ldb, c, ldc, accumulate);
}

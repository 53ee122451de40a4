/* int8 GEMM micro-kernel, 8 key rows x 8 query columns, SDOT (FEAT_DotProd; see kernels.h):
 * signed x signed bytes, four products per int32 lane and instruction, exact.
 *
 * B panel (8 columns, kr = 16, int8, once per query block): quads along k,
 *   panel[((k/4)*8 + j)*4 + k%4] = B[k][j]      (k < K rounded up to 16, zero-padded)
 * Per 16 values of K: each of the mr rows of A is one 16-byte load (4 quads; the row's tail
 * through a zeroed scratch, so no byte at or past column kc is read); then per quad two B loads
 * (columns 0-3, 4-7) feed 2 x mr SDOT by element (the row's quad as the lane). 16 accumulators +
 * 8 A rows + 2 B vectors of the 32 registers. A lane adds 4 products of at most 2^14 each step,
 * so with K <= 65536 every partial sum is below 2^30: exact int32. */
#include <arm_neon.h>
#include <string.h>

#include "backends/cpu/kernels/neon/i8_tile_store.h"
#include "backends/cpu/kernels/neondot/neondot.h"

#define MR 8
#define NR 8

/* quads along k (the file's comment) */
static const lig_i8_run_layout b_layout = {.nr = NR, .kr = 16, .run = 4, .cols = 1};

void lig_i8_pack_b_8x8__neondot(int64_t K, int64_t N, const int8_t *src, int64_t ld, void *packed, int64_t panel_bytes) {
    lig_i8_pack_runs(&b_layout, K, N, src, ld, packed, panel_bytes);
}

/* acc[i] += the quad `lane` of row i . the quad's 8 columns (lane: a compile-time constant). The
 * empty asm with a memory clobber keeps each quad's two B loads after the previous quad's SDOTs:
 * without it GCC 12 loads all eight first and spills accumulators. */
#define DOT_LANE(lane)                                                                            \
    do {                                                                                          \
        __asm__ volatile("" ::: "memory");                                                        \
        const int8x16_t b0 = vld1q_s8(bp + (lane) * NR * 4), b1 = vld1q_s8(bp + (lane) * NR * 4 + 16); \
        _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++) {                                    \
            acc[i][0] = vdotq_laneq_s32(acc[i][0], b0, ar[i], (lane));                            \
            acc[i][1] = vdotq_laneq_s32(acc[i][1], b1, ar[i], (lane));                            \
        }                                                                                         \
    } while (0)

/* 16 values of K from k0: the rows' 16 bytes loaded whole, or (the last, short step) through
 * zeroed copies, then the four quads */
static inline __attribute__((always_inline)) void step(const int mr, const bool tail, int64_t k0, int64_t kc,
                                                       const int8_t *a, int64_t lda, const int8_t *b,
                                                       int32x4_t acc[][2]) {
    int8x16_t ar[MR];
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++) ar[i] = tail ? i8_load16(a + i * lda, k0, kc) : vld1q_s8(a + i * lda + k0);
    const int8_t *bp = b + k0 * NR; /* quad k0 / 4, NR * 4 bytes per quad */
    DOT_LANE(0);
    DOT_LANE(1);
    DOT_LANE(2);
    DOT_LANE(3);
}

static inline __attribute__((always_inline)) void tile(const int mr, int64_t nr, int64_t kc, const int8_t *a,
                                                       int64_t lda, const void *b_panel, int32_t *c, int64_t ldc,
                                                       bool accumulate) {
    const int8_t *b = b_panel;
    int32x4_t acc[MR][2];
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++) acc[i][0] = acc[i][1] = vdupq_n_s32(0);
    int64_t k0 = 0;
    for (; k0 + 16 <= kc; k0 += 16) step(mr, false, k0, kc, a, lda, b, acc);
    if (k0 < kc) step(mr, true, k0, kc, a, lda, b, acc);
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++) {
        i8_store4(c + i * ldc, acc[i][0], nr, accumulate);
        if (nr > 4) i8_store4(c + i * ldc + 4, acc[i][1], nr - 4, accumulate);
    }
}

#include "backends/cpu/kernels/i8_gemm_rows.h"

void lig_i8_gemm_ukernel_8x8__neondot(int64_t mr, int64_t nr, int64_t kc, const int8_t *a, int64_t lda,
                                      const void *b_panel, int32_t *c, int64_t ldc, bool accumulate) {
    tile_rows(mr, nr, kc, a, lda, b_panel, c, ldc, accumulate);
}

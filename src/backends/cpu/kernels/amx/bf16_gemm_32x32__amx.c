/* bf16 GEMM micro-kernel, 32 x 32, AMX (see kernels.h): four 16 x 16 fp32 accumulator tiles
 * (tmm0-3), two A tiles of 16 rows x 32 bf16 (tmm4-5) and two B tiles of 16 pair rows x 16
 * columns (tmm6-7), so that every operand tile feeds two tile products. Full tiles with kc a
 * multiple of 32 run straight from the operands; anything smaller goes through zero-padded
 * copies (the engines pad their blocks, so that path only serves edges and tests).
 *
 * The tile configuration (all eight tiles 16 rows x 64 bytes) is loaded once per thread by
 * lig_amx_tiles_begin, not per call. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "backends/cpu/kernels/amx/amx.h"

typedef struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

/* In static storage: the compiler does not see ldtilecfg read its operand, and drops the
 * stores that fill a local one. */
static const tile_config full_tiles __attribute__((aligned(64))) = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

void lig_amx_tiles_begin(void) { _tile_loadconfig(&full_tiles); }

void lig_amx_tiles_end(void) { _tile_release(); }

/* The full 32 x 32 block: kc % 32 == 0, lda and ldb in elements / words. */
static inline __attribute__((always_inline)) void full_block(int64_t kc, const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb, float *c,
                       int64_t ldc, bool accumulate) {
    const size_t sa = (size_t)lda * 2, sb = (size_t)ldb * 4, sc = (size_t)ldc * 4;
    if (accumulate) {
        _tile_loadd(0, c, sc);
        _tile_loadd(1, c + 16, sc);
        _tile_loadd(2, c + 16 * ldc, sc);
        _tile_loadd(3, c + 16 * ldc + 16, sc);
    } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    }
    for (int64_t k = 0; k < kc; k += 32) {
        const uint16_t *bk = b + (k / 2) * ldb * 2;
        _tile_loadd(4, a + k, sa);
        _tile_loadd(5, a + 16 * lda + k, sa);
        _tile_loadd(6, bk, sb);
        _tile_loadd(7, bk + 32, sb);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, c, sc);
    _tile_stored(1, c + 16, sc);
    _tile_stored(2, c + 16 * ldc, sc);
    _tile_stored(3, c + 16 * ldc + 16, sc);
}

void lig_bf16_gemm_ukernel_32x32__amx(int64_t mr, int64_t nr, int64_t kc, const uint16_t *a, int64_t lda,
                                      const uint16_t *b, int64_t ldb, float *c, int64_t ldc, bool accumulate) {
    if (mr == 32 && nr == 32 && kc % 32 == 0) {
        full_block(kc, a, lda, b, ldb, c, ldc, accumulate);
        return;
    }
    /* an edge: pad A rows, B columns and the reduction to full tiles in local copies */
    float cp[32 * 32];
    uint16_t ap[32 * 32], bp[16 * 32 * 2];
    for (int64_t i = 0; i < 32; i++)
        for (int64_t j = 0; j < 32; j++) cp[i * 32 + j] = accumulate && i < mr && j < nr ? c[i * ldc + j] : 0.0f;
    for (int64_t k0 = 0; k0 < kc; k0 += 32) {
        const int64_t kk = kc - k0 < 32 ? kc - k0 : 32; /* even, as kc is */
        memset(ap, 0, sizeof ap);
        memset(bp, 0, sizeof bp);
        for (int64_t i = 0; i < mr; i++) memcpy(ap + i * 32, a + i * lda + k0, sizeof(uint16_t) * (size_t)kk);
        for (int64_t p = 0; p < kk / 2; p++)
            memcpy(bp + p * 64, b + ((k0 / 2 + p) * ldb) * 2, sizeof(uint16_t) * 2 * (size_t)nr);
        full_block(32, ap, 32, bp, 32, cp, 32, true);
    }
    for (int64_t i = 0; i < mr; i++) memcpy(c + i * ldc, cp + i * 32, sizeof(float) * (size_t)nr);
}

void lig_bf16_gemm_tiles__amx(int64_t M, int64_t N, int64_t K, const uint16_t *a, int64_t lda, const uint16_t *b,
                              int64_t ldb, float *c, int64_t ldc, bool accumulate) {
    for (int64_t m = 0; m < M; m += 32)
        for (int64_t n = 0; n < N; n += 32)
            full_block(K, a + m * lda, lda, b + 2 * n, ldb, c + m * ldc + n, ldc, accumulate);
}

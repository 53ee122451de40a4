/* The row dispatch every SIMD int8 GEMM micro-kernel shares (avx2, avxvnni, avx512, avx512vnni,
 * neon, neondot, neoni8mm): included by the kernel's file, after its
 *   static inline __attribute__((always_inline)) void tile(const int mr, int64_t nr, int64_t kc,
 *       const int8_t *a, int64_t lda, const void *b_panel, int32_t *c, int64_t ldc, bool accumulate);
 * and its MR (6, 8 or 12). tile_rows calls tile with the row count as a compile-time constant, so each
 * case is a tile specialised (unrolled, its accumulators in registers) for that many rows. Compiled
 * once per ISA, with that file's target flags: static inline, no symbol of its own. */
#ifndef LIG_BACKENDS_CPU_KERNELS_I8_GEMM_ROWS_H
#define LIG_BACKENDS_CPU_KERNELS_I8_GEMM_ROWS_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/cpu/kernels/tile_rows.h"

#if MR != 6 && MR != 8 && MR != 12
#error "i8_gemm_rows.h: MR must be 6, 8 or 12"
#endif

static inline void tile_rows(int64_t mr, int64_t nr, int64_t kc, const int8_t *a, int64_t lda, const void *b_panel,
                             int32_t *c, int64_t ldc, bool accumulate) {
    LIG_TILE_ROWS(MR, mr, tile, nr, kc, a, lda, b_panel, c, ldc, accumulate);
}

#endif /* LIG_BACKENDS_CPU_KERNELS_I8_GEMM_ROWS_H */

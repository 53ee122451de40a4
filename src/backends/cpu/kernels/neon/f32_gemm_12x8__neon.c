/* fp32 GEMM micro-kernel, 12 rows x 8 columns, NEON (see kernels.h): for a last column tile of 8
 * or fewer (the scores of a group of 8 heads), so that a third of every FMLA of the 8 x 12 tile
 * is not spent on zero columns. 24 accumulators + 2 B vectors + 1 broadcast; per k step 2 B
 * loads and 12 broadcasts (LD1R) feed 24 FMLA. The tile body is f32_gemm_tile.h's. */
#include "backends/cpu/kernels/neon/neon.h"

#define MR 12
#define NV 2

#include "backends/cpu/kernels/neon/f32_gemm_tile.h"

void lig_f32_gemm_ukernel_12x8__neon(int64_t mr, int64_t nr, int64_t kc, const float *a, int64_t a_rs, int64_t a_cs,
                                     const float *b, int64_t ldb, float *c, int64_t ldc, bool accumulate) {
    f32_tile_any(mr, nr, kc, a, a_rs, a_cs, b, ldb, c, ldc, accumulate);
}

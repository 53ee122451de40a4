/* fp32 GEMM micro-kernel, 8 rows x 12 columns, NEON (see kernels.h): 24 q-register accumulators
 * + 3 B vectors + 1 broadcast of the 32; per k step 3 B loads and 8 broadcasts (LD1R) feed 24
 * FMLA. The tile body is f32_gemm_tile.h's. */
#include "backends/cpu/kernels/neon/neon.h"

#define MR 8
#define NV 3

#include "backends/cpu/kernels/neon/f32_gemm_tile.h"

void lig_f32_gemm_ukernel_8x12__neon(int64_t mr, int64_t nr, int64_t kc, const float *a, int64_t a_rs, int64_t a_cs,
                                     const float *b, int64_t ldb, float *c, int64_t ldc, bool accumulate) {
    f32_tile_any(mr, nr, kc, a, a_rs, a_cs, b, ldb, c, ldc, accumulate);
}

/* The neon-i8mm set: the neon set's fp32 and FP8 families with an int8 family on SMMLA. Every
 * CPU with I8MM has the dot-product instructions too, so the set extends neon-dotprod; it shares
 * neon's families by pointer. Plain C tables (no intrinsics here). */
#include "backends/cpu/kernels/neoni8mm/neoni8mm.h"

#include "backends/cpu/kernels/config_macros.h"

#include "backends/cpu/kernels/neon/neon.h"
#include "backends/cpu/runtime/cpu_features.h"

static bool has_i8mm(void) {
    const lig_cpu_features *f = lig_cpu_features_get();
    return f->asimd && f->asimd_dotprod && f->i8mm;
}

/* int8 by SMMLA: 8 x 8 (4 row pairs x 4 column pairs of 2 x 2 blocks), B in 8-byte runs of k per
 * column, two columns per 16 bytes, kr = 8 */
const lig_i8_kernels lig_neoni8mm_i8 = {.name = "neon-i8mm", .unit = "smmla v.4s",
    .gemm = {LIG_I8_TILE(8, 8, neoni8mm), .kr = 8, .b_elem_bytes = 1, .b_panel_extra = 0, .max_k = 65536}};

const lig_kernel_set lig_kernel_set_neoni8mm = {.name = "neon-i8mm",
    .features = "Advanced SIMD, the dot-product instructions (ASIMDDP) and I8MM (SMMLA)",
    .cpu_supports = has_i8mm, .f32 = &lig_neon_f32, .i8 = &lig_neoni8mm_i8, .fp8 = &lig_neon_fp8};

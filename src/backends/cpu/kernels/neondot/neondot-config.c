/* The neon-dotprod set: the neon set's fp32 and FP8 families with an int8 family on SDOT. Plain C
 * tables (no intrinsics here). */
#include "backends/cpu/kernels/neondot/neondot.h"

#include "backends/cpu/kernels/neon/neon.h"
#include "backends/cpu/runtime/cpu_features.h"

static bool has_dotprod(void) {
    const lig_cpu_features *f = lig_cpu_features_get();
    return f->asimd && f->asimd_dotprod;
}

/* int8 by SDOT by element: 8 x 8, B in quads of int8 along k, kr = 16 (a row's 16-byte load) */
const lig_i8_kernels lig_neondot_i8 = {
    .unit = "sdot v.4s (by element)",
    .name = "neon-dotprod",
    .gemm = {.mr = 8, .nr = 8, .kr = 16, .b_elem_bytes = 1, .b_panel_extra = 0, .max_k = 65536,
             .pack_b = lig_i8_pack_b_8x8__neondot, .ukernel = lig_i8_gemm_ukernel_8x8__neondot},
};

const lig_kernel_set lig_kernel_set_neondot = {
    .name = "neon-dotprod", .features = "Advanced SIMD and the dot-product instructions (ASIMDDP: SDOT)",
    .cpu_supports = has_dotprod, .f32 = &lig_neon_f32, .i8 = &lig_neondot_i8, .fp8 = &lig_neon_fp8,
};

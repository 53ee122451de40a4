/* The neon-dotprod set: the neon set's fp32 and FP8 families with an int8 family on SDOT. Plain C
 * tables (no intrinsics here). */
#include "backends/cpu/kernels/neondot/neondot.h"

#include "backends/cpu/kernels/config_macros.h"

#include "backends/cpu/kernels/neon/neon.h"
#include "backends/cpu/runtime/cpu_features.h"

static bool has_dotprod(void) {
    const lig_cpu_features *f = lig_cpu_features_get();
    return f->asimd && f->asimd_dotprod;
}

/* int8 by SDOT by element: 8 x 8, B in quads of int8 along k, kr = 16 (a row's 16-byte load) */
const lig_i8_kernels lig_neondot_i8 = {.name = "neon-dotprod", .unit = "sdot v.4s (by element)",
    .gemm = {LIG_I8_TILE(8, 8, neondot), .kr = 16, .b_elem_bytes = 1, .b_panel_extra = 0, .max_k = 65536}};

const lig_kernel_set lig_kernel_set_neondot = {.name = "neon-dotprod",
    .features = "Advanced SIMD and the dot-product instructions (ASIMDDP: SDOT)",
    .cpu_supports = has_dotprod, .f32 = &lig_neon_f32, .i8 = &lig_neondot_i8, .fp8 = &lig_neon_fp8};

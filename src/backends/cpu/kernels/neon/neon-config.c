/* The neon set: Advanced SIMD fp32 FMA kernels, an int8 GEMM by int16 multiply-adds, and the FP8
 * conversions. Plain C tables (no intrinsics here). */
#include "backends/cpu/kernels/neon/neon.h"

#include "backends/cpu/kernels/config_macros.h"

#include "backends/cpu/runtime/cpu_features.h"

static bool has_asimd(void) { return lig_cpu_features_get()->asimd; }

/* 8 x 12: 24 accumulators of the 32 q registers; a last column tile of <= 8 (a group of 8 heads)
 * takes 12 x 8, so that a third of every FMLA is not spent on zero columns. Blocks of 48 = 6 x 8
 * = 4 x 12 slots. */
const lig_f32_kernels lig_neon_f32 = {.name = "neon", .unit = "fmla v.4s", LIG_F32_ROW_KERNELS(neon),
    .gemm = {LIG_F32_TILE(8, 12, neon), LIG_F32_NARROW_TILE(12, 8, neon)}, .grad_block = 48, .fwd_block = 48};

/* int8 by sign-extension to int16 and SMLAL by element: 8 x 8, B pre-widened to int16, kr = 8 */
const lig_i8_kernels lig_neon_i8 = {.name = "neon", .unit = "smlal v.4s (by element)",
    .gemm = {LIG_I8_TILE(8, 8, neon), .kr = 8, .b_elem_bytes = 2, .b_panel_extra = 0, .max_k = 65536}};

const lig_fp8_kernels lig_neon_fp8 = {LIG_FP8_KERNELS(neon)};

const lig_kernel_set lig_kernel_set_neon = {.name = "neon", .features = "Advanced SIMD (ASIMD)",
    .cpu_supports = has_asimd, .f32 = &lig_neon_f32, .i8 = &lig_neon_i8, .fp8 = &lig_neon_fp8};

/* The scalar set: portable C, which every CPU runs (the reference of the other sets). Plain C
 * tables, like every <isa>-config.c: compiled without the ISA's flags, so that cpu_supports runs
 * on any CPU. */
#include "backends/cpu/kernels/scalar/scalar.h"

#include "backends/cpu/kernels/config_macros.h"

static bool always(void) { return true; }

/* 4 x 4, no narrower tile */
const lig_f32_kernels lig_scalar_f32 = {.name = "scalar", .unit = "scalar fmaf", LIG_F32_ROW_KERNELS(scalar),
    .gemm = {LIG_F32_TILE(4, 4, scalar)}, .grad_block = 48, .fwd_block = 48};

/* int8: panels of 4 int8 columns, kr = 1 (the reference layout) */
const lig_i8_kernels lig_scalar_i8 = {.name = "scalar", .unit = "scalar int32 multiply-add",
    .gemm = {LIG_I8_TILE(4, 4, scalar), .kr = 1, .b_elem_bytes = 1, .b_panel_extra = 0, .max_k = 65536}};

const lig_fp8_kernels lig_scalar_fp8 = {LIG_FP8_KERNELS(scalar)};

const lig_kernel_set lig_kernel_set_scalar = {.name = "scalar", .features = "nothing",
    .cpu_supports = always, .f32 = &lig_scalar_f32, .i8 = &lig_scalar_i8, .fp8 = &lig_scalar_fp8};

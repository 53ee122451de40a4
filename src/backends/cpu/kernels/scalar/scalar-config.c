/* The scalar set: portable C, which every CPU runs (the reference of the other sets). Plain C
 * tables, like every <isa>-config.c: compiled without the ISA's flags, so that cpu_supports runs
 * on any CPU. */
#include "backends/cpu/kernels/scalar/scalar.h"

static bool always(void) { return true; }

const lig_f32_kernels lig_scalar_f32 = {
    .name = "scalar",
    .unit = "scalar fmaf",
    .gemm = {.mr = 4, .nr = 4, .ukernel = lig_f32_gemm_ukernel_4x4__scalar},
    .grad_block = 48,
    .fwd_block = 48,
    .grad_gate = lig_grad_gate__scalar,
    .fwd_scores = lig_fwd_scores__scalar,
    .quant_scores = lig_quant_scores__scalar,
    .quant_scores_i32 = lig_quant_scores_i32__scalar,
    .load_row = lig_load_row__scalar,
    .store_row = lig_store_row__scalar,
    .axpy_row = lig_axpy_row__scalar,
};

/* int8: panels of 4 int8 columns, kr = 1 (the reference layout) */
const lig_i8_kernels lig_scalar_i8 = {
    .name = "scalar",
    .unit = "scalar int32 multiply-add",
    .gemm = {.mr = 4, .nr = 4, .kr = 1, .b_elem_bytes = 1, .b_panel_extra = 0, .max_k = 65536,
             .pack_b = lig_i8_pack_b_4x4__scalar, .ukernel = lig_i8_gemm_ukernel_4x4__scalar},
};

const lig_fp8_kernels lig_scalar_fp8 = {.to_bf16 = lig_fp8_to_bf16__scalar, .to_f32 = lig_fp8_to_f32__scalar};

const lig_kernel_set lig_kernel_set_scalar = {
    .name = "scalar", .features = "nothing", .cpu_supports = always, .f32 = &lig_scalar_f32,
    .i8 = &lig_scalar_i8, .fp8 = &lig_scalar_fp8,
};

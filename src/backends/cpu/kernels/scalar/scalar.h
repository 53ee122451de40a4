/* scalar: portable C, the reference every other set is tested against, and the kernels the
 * portable engines run on every set. Its micro-kernels, and the families its configuration
 * (scalar-config.c) exports. */
#ifndef LIG_CPU_KERNELS_SCALAR_SCALAR_H
#define LIG_CPU_KERNELS_SCALAR_SCALAR_H

#include "backends/cpu/kernels/kernel_set.h"
#include "backends/cpu/kernels/kernels.h"

lig_f32_gemm_ukernel lig_f32_gemm_ukernel_4x4__scalar;
lig_grad_gate_kernel lig_grad_gate__scalar;
lig_fwd_scores_kernel lig_fwd_scores__scalar;
lig_quant_scores_kernel lig_quant_scores__scalar; /* the portable engine's on every set */
lig_quant_scores_i32_kernel lig_quant_scores_i32__scalar;
lig_load_row_kernel lig_load_row__scalar;
lig_store_row_kernel lig_store_row__scalar;
lig_axpy_row_kernel lig_axpy_row__scalar;
lig_i8_pack_b_kernel lig_i8_pack_b_4x4__scalar;
lig_i8_gemm_ukernel lig_i8_gemm_ukernel_4x4__scalar;
lig_fp8_to_bf16_kernel lig_fp8_to_bf16__scalar;
lig_fp8_to_f32_kernel lig_fp8_to_f32__scalar;
/* references of the bf16 engines' kernels, for the tests (the scalar set has no bf16 family) */
lig_bf16_gemm_ukernel lig_bf16_gemm_ukernel_4x4__scalar;
lig_bf16_pack_pairs_kernel lig_bf16_pack_pairs__scalar;
lig_bf16_gate_kernel lig_bf16_gate__scalar;
lig_bf16_dq_operand_kernel lig_bf16_dq_operand__scalar;

/* the families of the scalar set */
extern const lig_f32_kernels lig_scalar_f32;
extern const lig_i8_kernels lig_scalar_i8;
extern const lig_fp8_kernels lig_scalar_fp8;

#endif

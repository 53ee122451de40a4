/* neon: the aarch64 Advanced SIMD set (fp32 FMA, 128-bit vectors; every ARMv8-A core has it).
 * Its micro-kernels, and the families its configuration (neon-config.c) exports for the aarch64
 * sets built on it (neon-dotprod, neon-i8mm, neon-bf16). */
#ifndef LIG_BACKENDS_CPU_KERNELS_NEON_NEON_H
#define LIG_BACKENDS_CPU_KERNELS_NEON_NEON_H

#include "backends/cpu/kernels/kernel_set.h"
#include "backends/cpu/kernels/kernels.h"

lig_f32_gemm_ukernel lig_f32_gemm_ukernel_8x12__neon;
lig_f32_gemm_ukernel lig_f32_gemm_ukernel_12x8__neon;
lig_grad_gate_kernel lig_grad_gate__neon;
lig_fwd_scores_kernel lig_fwd_scores__neon;
lig_quant_scores_kernel lig_quant_scores__neon;
lig_quant_scores_i32_kernel lig_quant_scores_i32__neon;
lig_load_row_kernel lig_load_row__neon;
lig_store_row_kernel lig_store_row__neon;
lig_axpy_row_kernel lig_axpy_row__neon;
lig_i8_pack_b_kernel lig_i8_pack_b_8x8__neon;
lig_i8_gemm_ukernel lig_i8_gemm_ukernel_8x8__neon;
lig_fp8_to_bf16_kernel lig_fp8_to_bf16__neon;
lig_fp8_to_f32_kernel lig_fp8_to_f32__neon;

/* the families of the neon set, shared by the sets that extend it */
extern const lig_f32_kernels lig_neon_f32;
extern const lig_i8_kernels lig_neon_i8;
extern const lig_fp8_kernels lig_neon_fp8;

#endif /* LIG_BACKENDS_CPU_KERNELS_NEON_NEON_H */

/* avx512: AVX-512 F, BW, DQ, VL (fp32 FMA, 16 lanes). Its micro-kernels, and the families its
 * configuration (avx512-config.c) exports for the sets built on it (avx512bf16, amx-bf16). */
#ifndef LIG_CPU_KERNELS_AVX512_AVX512_H
#define LIG_CPU_KERNELS_AVX512_AVX512_H

#include "backends/cpu/kernels/kernel_set.h"
#include "backends/cpu/kernels/kernels.h"

lig_f32_gemm_ukernel lig_f32_gemm_ukernel_12x32__avx512;
lig_f32_gemm_ukernel lig_f32_gemm_ukernel_24x16__avx512;
lig_grad_gate_kernel lig_grad_gate__avx512;
lig_fwd_scores_kernel lig_fwd_scores__avx512;
lig_quant_scores_kernel lig_quant_scores__avx512;
lig_quant_scores_i32_kernel lig_quant_scores_i32__avx512;
lig_load_row_kernel lig_load_row__avx512;
lig_store_row_kernel lig_store_row__avx512;
lig_axpy_row_kernel lig_axpy_row__avx512;
lig_i8_pack_b_kernel lig_i8_pack_b_12x32__avx512;
lig_i8_gemm_ukernel lig_i8_gemm_ukernel_12x32__avx512;
lig_fp8_to_bf16_kernel lig_fp8_to_bf16__avx512;
lig_fp8_to_f32_kernel lig_fp8_to_f32__avx512;

/* the families of the avx512 set, shared by avx512bf16 and amx-bf16 */
extern const lig_f32_kernels lig_avx512_f32;
extern const lig_fp8_kernels lig_avx512_fp8;

#endif

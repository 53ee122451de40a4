/* avx2: AVX2 + FMA + F16C (fp32 FMA on ymm). Its micro-kernels, and the families its
 * configuration (avx2-config.c) exports for the sets built on it (avxvnni; avx512 takes its
 * 12 x 8 tile). */
#ifndef LIG_CPU_KERNELS_AVX2_AVX2_H
#define LIG_CPU_KERNELS_AVX2_AVX2_H

#include "backends/cpu/kernels/kernel_set.h"
#include "backends/cpu/kernels/kernels.h"

lig_f32_gemm_ukernel lig_f32_gemm_ukernel_6x16__avx2;
lig_f32_gemm_ukernel lig_f32_gemm_ukernel_12x8__avx2;
lig_grad_gate_kernel lig_grad_gate__avx2;
lig_fwd_scores_kernel lig_fwd_scores__avx2;
lig_quant_scores_kernel lig_quant_scores__avx2;
lig_quant_scores_i32_kernel lig_quant_scores_i32__avx2;
lig_load_row_kernel lig_load_row__avx2;
lig_store_row_kernel lig_store_row__avx2;
lig_axpy_row_kernel lig_axpy_row__avx2;
lig_i8_pack_b_kernel lig_i8_pack_b_6x16__avx2;
lig_i8_gemm_ukernel lig_i8_gemm_ukernel_6x16__avx2;
lig_fp8_to_bf16_kernel lig_fp8_to_bf16__avx2;
lig_fp8_to_f32_kernel lig_fp8_to_f32__avx2;
lig_mxfp4_dots_kernel lig_mxfp4_dots_6x8__avx2;
lig_mxfp4_decode_kernel lig_mxfp4_decode__avx2; /* also the avx512vnni family's */

/* the families of the avx2 set, shared by avxvnni */
extern const lig_f32_kernels lig_avx2_f32;
extern const lig_fp8_kernels lig_avx2_fp8;
/* and the MXFP4 block dots of avx2, avxvnni and avx512 */
extern const lig_mxfp4_kernels lig_avx2_mxfp4;

#endif

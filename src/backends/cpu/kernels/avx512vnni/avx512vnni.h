/* avx512vnni: AVX-512 F, BW + AVX512_VNNI (vpdpbusd zmm). No set of its own: its configuration
 * (avx512vnni-config.c) exports the int8 family of avx512bf16 and amx-bf16. */
#ifndef LIG_CPU_KERNELS_AVX512VNNI_AVX512VNNI_H
#define LIG_CPU_KERNELS_AVX512VNNI_AVX512VNNI_H

#include "backends/cpu/kernels/kernel_set.h"
#include "backends/cpu/kernels/kernels.h"

lig_i8_pack_b_kernel lig_i8_pack_b_12x32__avx512vnni;
lig_i8_gemm_ukernel lig_i8_gemm_ukernel_12x32__avx512vnni;
lig_mxfp4_dots_kernel lig_mxfp4_dots_12x16__avx512vnni;

extern const lig_i8_kernels lig_avx512vnni_i8;
extern const lig_mxfp4_kernels lig_avx512vnni_mxfp4;

#endif

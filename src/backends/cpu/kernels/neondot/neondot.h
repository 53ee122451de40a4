/* neondot: the int8 family on SDOT (FEAT_DotProd, ARMv8.2-A and later: Cortex-A55/A76 on,
 * Neoverse N1/V1/N2/V2, Apple M1 on). Its micro-kernels and the family its configuration
 * (neondot-config.c) exports for the sets built on it. */
#ifndef LIG_BACKENDS_CPU_KERNELS_NEONDOT_NEONDOT_H
#define LIG_BACKENDS_CPU_KERNELS_NEONDOT_NEONDOT_H

#include "backends/cpu/kernels/kernel_set.h"
#include "backends/cpu/kernels/kernels.h"

lig_i8_pack_b_kernel lig_i8_pack_b_8x8__neondot;
lig_i8_gemm_ukernel lig_i8_gemm_ukernel_8x8__neondot;

extern const lig_i8_kernels lig_neondot_i8;

#endif /* LIG_BACKENDS_CPU_KERNELS_NEONDOT_NEONDOT_H */

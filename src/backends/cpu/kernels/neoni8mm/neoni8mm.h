/* neoni8mm: the int8 family on SMMLA (FEAT_I8MM, ARMv8.6-A; optional from ARMv8.2-A: Neoverse
 * V1/N2/V2, Cortex-A510/A710 on, Apple M2 on). Its micro-kernels and the family its
 * configuration (neoni8mm-config.c) exports for the sets built on it. */
#ifndef LIG_BACKENDS_CPU_KERNELS_NEONI8MM_NEONI8MM_H
#define LIG_BACKENDS_CPU_KERNELS_NEONI8MM_NEONI8MM_H

#include "backends/cpu/kernels/kernel_set.h"
#include "backends/cpu/kernels/kernels.h"

lig_i8_pack_b_kernel lig_i8_pack_b_8x8__neoni8mm;
lig_i8_gemm_ukernel lig_i8_gemm_ukernel_8x8__neoni8mm;

extern const lig_i8_kernels lig_neoni8mm_i8;

#endif /* LIG_BACKENDS_CPU_KERNELS_NEONI8MM_NEONI8MM_H */

/* neonbf16: the bf16 family on FEAT_BF16 (ARMv8.6-A; Neoverse V1/N2/V2, Cortex-A510/A710 on,
 * Apple M2 on): a pairs-layout GEMM on BFMLALB/BFMLALT, the operand packing and the gate. Its
 * micro-kernels and the family its configuration (neonbf16-config.c) exports. */
#ifndef LIG_BACKENDS_CPU_KERNELS_NEONBF16_NEONBF16_H
#define LIG_BACKENDS_CPU_KERNELS_NEONBF16_NEONBF16_H

#include "backends/cpu/kernels/kernel_set.h"
#include "backends/cpu/kernels/kernels.h"

lig_bf16_gemm_ukernel lig_bf16_gemm_ukernel_8x8__neonbf16;
lig_bf16_pack_pairs_kernel lig_bf16_pack_pairs__neonbf16;
lig_bf16_gate_kernel lig_bf16_gate__neonbf16;
lig_bf16_dq_operand_kernel lig_bf16_dq_operand__neonbf16;

extern const lig_bf16_kernels lig_neonbf16_bf16;

#endif /* LIG_BACKENDS_CPU_KERNELS_NEONBF16_NEONBF16_H */

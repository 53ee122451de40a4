/* avx512bf16: avx512 + AVX512_BF16 (vdpbf16ps) + AVX512_VBMI + GFNI. Its micro-kernels, and
 * what its configuration (avx512bf16-config.c) exports for amx-bf16: the feature test, and the
 * operand packing and gate the AMX family reuses. */
#ifndef LIG_CPU_KERNELS_AVX512BF16_AVX512BF16_H
#define LIG_CPU_KERNELS_AVX512BF16_AVX512BF16_H

#include "backends/cpu/kernels/kernel_set.h"
#include "backends/cpu/kernels/kernels.h"

lig_bf16_gemm_ukernel lig_bf16_gemm_ukernel_12x32__avx512bf16;
lig_bf16_pack_pairs_kernel lig_bf16_pack_pairs__avx512bf16;
lig_bf16_gate_kernel lig_bf16_gate__avx512bf16;
lig_bf16_dq_operand_kernel lig_bf16_dq_operand__avx512bf16;

/* whether the CPU has everything the avx512bf16 set needs */
bool lig_cpu_has_avx512bf16(void);

#endif

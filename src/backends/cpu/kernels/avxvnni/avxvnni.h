/* avxvnni: AVX2 + AVX-VNNI (VEX vpdpbusd ymm). Its micro-kernels: the avxvnni set's int8
 * family (avxvnni-config.c; its other families are avx2's). */
#ifndef LIG_CPU_KERNELS_AVXVNNI_AVXVNNI_H
#define LIG_CPU_KERNELS_AVXVNNI_AVXVNNI_H

#include "backends/cpu/kernels/kernel_set.h"
#include "backends/cpu/kernels/kernels.h"

lig_i8_pack_b_kernel lig_i8_pack_b_6x16__avxvnni;
lig_i8_gemm_ukernel lig_i8_gemm_ukernel_6x16__avxvnni;

#endif

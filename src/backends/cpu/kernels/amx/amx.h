/* amx: AMX-TILE + AMX-BF16 tiles of 16 rows x 64 bytes, configured once per thread. Its
 * micro-kernels (the amx-bf16 set's bf16 product, amx-config.c). */
#ifndef LIG_CPU_KERNELS_AMX_AMX_H
#define LIG_CPU_KERNELS_AMX_AMX_H

#include "backends/cpu/kernels/kernel_set.h"
#include "backends/cpu/kernels/kernels.h"

lig_bf16_gemm_ukernel lig_bf16_gemm_ukernel_32x32__amx;
/* The whole product of M x N (multiples of 32) with K a multiple of 32, 32 x 32 blocks row by row */
lig_bf16_gemm_tiles_kernel lig_bf16_gemm_tiles__amx;
void lig_amx_tiles_begin(void); /* loads the tile configuration the AMX micro-kernels use */
void lig_amx_tiles_end(void);   /* releases the tile state */

#endif

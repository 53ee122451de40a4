/* The avx512vnni int8 family: no set of its own, the int8 family of avx512bf16 and amx-bf16
 * (every CPU with AVX512_BF16 has AVX512_VNNI). */
#include "backends/cpu/kernels/avx512vnni/avx512vnni.h"

#include "backends/cpu/kernels/config_macros.h"

#include "backends/cpu/kernels/avx2/avx2.h"

/* int8 by vpdpbusd (A + 128 as u8 times s8 B, less 128 x the column sums packed with B):
 * 12 x 32, B in quads of int8 + 32 int32 corrections per panel */
const lig_i8_kernels lig_avx512vnni_i8 = {.name = "avx512vnni", .unit = "vpdpbusd zmm",
    .gemm = {LIG_I8_TILE(12, 32, avx512vnni), .kr = 4, .b_elem_bytes = 1, .b_panel_extra = 32 * 4, .max_k = 65536}};

/* MXFP4 block dots by vpdpbusd (Q + 12 unsigned, K signed as a folded broadcast), 12 x 16 */
const lig_mxfp4_kernels lig_avx512vnni_mxfp4 = {.name = "avx512vnni", .unit = "vpdpbusd zmm", .mr = 12, .nr = 16,
    .q_offset = 12, .dots = lig_mxfp4_dots_12x16__avx512vnni, .decode = lig_mxfp4_decode__avx2};

/* The amx-bf16 set: avx512bf16 with the bf16 product on AMX tiles; every other dtype runs the
 * avx512 fp32 kernels, int8 the avx512vnni family. */
#include "backends/cpu/kernels/amx/amx.h"

#include "backends/cpu/kernels/config_macros.h"

#include "backends/cpu/kernels/avx512/avx512.h"
#include "backends/cpu/kernels/avx512bf16/avx512bf16.h"
#include "backends/cpu/kernels/avx512vnni/avx512vnni.h"
#include "backends/cpu/runtime/cpu_features.h"

static bool has_amx(void) { return lig_cpu_has_avx512bf16() && lig_cpu_features_get()->amx_bf16; }

/* AMX tiles (32 x 32 blocks of four accumulator tiles), configured per thread; the operand
 * packing and the gate are the avx512bf16 family's. The tiles win even with a group of 8 heads
 * padded to 32. Every padding is the 32 of a block (tdpbf16ps takes 32 bf16 of K per tile row),
 * so that whole products run on lig_bf16_gemm_tiles__amx. */
static const lig_bf16_kernels amx_bf16 = {.unit = "AMX tdpbf16ps", .format = LIG_OPERANDS_BF16_TILES,
    .gemm = {LIG_BF16_TILE(32, 32, amx), .kr = 32, .tiles = lig_bf16_gemm_tiles__amx,
             .thread_begin = lig_amx_tiles_begin, .thread_end = lig_amx_tiles_end},
    .col_pad = 32, .k_pad = 32, .row_pad = 32, .min_group = 1, LIG_BF16_OPERAND_KERNELS(avx512bf16)};

const lig_kernel_set lig_kernel_set_amx = {.name = "amx-bf16",
    .features = "AMX-TILE and AMX-BF16 (with the kernel's permission), and what avx512bf16 needs",
    .cpu_supports = has_amx, .f32 = &lig_avx512_f32, .bf16 = &amx_bf16, .i8 = &lig_avx512vnni_i8,
    .fp8 = &lig_avx512_fp8, .mxfp4 = &lig_avx512vnni_mxfp4};

/* The avx512 set: AVX-512 F, BW, DQ, VL, fp32 FMA on zmm and int8 by 512-bit vpmaddwd. */
#include "backends/cpu/kernels/avx512/avx512.h"

#include "backends/cpu/kernels/config_macros.h"

#include "backends/cpu/kernels/avx2/avx2.h"
#include "backends/cpu/runtime/cpu_features.h"

static bool has_avx512(void) { return lig_cpu_features_get()->avx512; }

/* 12 x 32: 24 zmm accumulators; a last column tile of <= 16 (groups of up to 16 heads) takes
 * 24 x 16, one of <= 8 the AVX2 set's 12 x 8 (eight full ymm lanes do the work of a half-masked
 * zmm, and on a 256-bit datapath twice as fast). Blocks of 48 = 4 x 12 = 2 x 24 slots. */
const lig_f32_kernels lig_avx512_f32 = {.name = "avx512", .unit = "vfmadd231ps zmm", LIG_F32_ROW_KERNELS(avx512),
    .gemm = {LIG_F32_TILE(12, 32, avx512), LIG_F32_NARROW_TILE(24, 16, avx512),
             LIG_F32_NARROWEST_TILE(12, 8, avx2)}, .grad_block = 48, .fwd_block = 48};

/* int8 by 512-bit vpmaddwd: 12 x 32 (24 zmm accumulators), B pairs pre-widened to int16 */
static const lig_i8_kernels avx512_i8 = {.name = "avx512", .unit = "vpmaddwd zmm",
    .gemm = {LIG_I8_TILE(12, 32, avx512), .kr = 2, .b_elem_bytes = 2, .b_panel_extra = 0, .max_k = 65536}};

const lig_fp8_kernels lig_avx512_fp8 = {LIG_FP8_KERNELS(avx512)};

const lig_kernel_set lig_kernel_set_avx512 = {.name = "avx512", .features = "AVX-512 F, BW, DQ and VL",
    .cpu_supports = has_avx512, .f32 = &lig_avx512_f32, .i8 = &avx512_i8, .fp8 = &lig_avx512_fp8,
    .mxfp4 = &lig_avx2_mxfp4};

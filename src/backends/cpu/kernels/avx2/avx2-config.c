/* The avx2 set: AVX2 + FMA + F16C, fp32 FMA on ymm and int8 by vpmaddwd. */
#include "backends/cpu/kernels/avx2/avx2.h"

#include "backends/cpu/kernels/config_macros.h"

#include "backends/cpu/runtime/cpu_features.h"

static bool has_avx2(void) { return lig_cpu_features_get()->avx2_fma_f16c; }

/* 6 x 16: 12 ymm accumulators + 2 B vectors + 1 broadcast. A last column tile of <= 8 (the
 * scores of a group of 8 heads) takes 12 x 8, so that half of every FMA is not spent on
 * masked-off lanes. Blocks of 48 = 8 x 6 = 4 x 12 slots. */
const lig_f32_kernels lig_avx2_f32 = {.name = "avx2", .unit = "vfmadd231ps ymm", LIG_F32_ROW_KERNELS(avx2),
    .gemm = {LIG_F32_TILE(6, 16, avx2), LIG_F32_NARROW_TILE(12, 8, avx2)}, .grad_block = 48, .fwd_block = 48};

/* int8 by sign-extension to int16 and vpmaddwd: 6 x 16, B pairs pre-widened to int16 */
static const lig_i8_kernels avx2_i8 = {.name = "avx2", .unit = "vpmaddwd ymm",
    .gemm = {LIG_I8_TILE(6, 16, avx2), .kr = 2, .b_elem_bytes = 2, .b_panel_extra = 0, .max_k = 65536}};

const lig_fp8_kernels lig_avx2_fp8 = {LIG_FP8_KERNELS(avx2)};

/* MXFP4 block dots by vpmaddubsw (Q + 12 unsigned, K signed: no pair sum saturates), 6 x 8 */
const lig_mxfp4_kernels lig_avx2_mxfp4 = {.name = "avx2", .unit = "vpmaddubsw ymm", .mr = 6, .nr = 8, .q_offset = 12,
    .dots = lig_mxfp4_dots_6x8__avx2, .decode = lig_mxfp4_decode__avx2};

const lig_kernel_set lig_kernel_set_avx2 = {.name = "avx2", .features = "AVX2, FMA and F16C",
    .cpu_supports = has_avx2, .f32 = &lig_avx2_f32, .i8 = &avx2_i8, .fp8 = &lig_avx2_fp8,
    .mxfp4 = &lig_avx2_mxfp4};

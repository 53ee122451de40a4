/* The avxvnni set: avx2 with an int8 family on VEX vpdpbusd (ymm), for CPUs with AVX-VNNI and no
 * AVX-512 (Alder Lake and later client cores), whose int8 products would otherwise take
 * vpmaddwd. Every other dtype runs the avx2 kernels. Below avx512 in the table: where both exist
 * the avx512 sets are chosen. */
#include "backends/cpu/kernels/avxvnni/avxvnni.h"

#include "backends/cpu/kernels/config_macros.h"

#include "backends/cpu/kernels/avx2/avx2.h"
#include "backends/cpu/runtime/cpu_features.h"

static bool has_avxvnni(void) {
    const lig_cpu_features *f = lig_cpu_features_get();
    return f->avx2_fma_f16c && f->avx_vnni;
}

/* int8 by VEX vpdpbusd on ymm (A + 128 as u8 times s8 B, less 128 x the column sums packed with
 * B, as avx512vnni): 6 x 16, B in quads of int8 + 16 int32 corrections per panel */
static const lig_i8_kernels avxvnni_i8 = {.name = "avxvnni", .unit = "vpdpbusd ymm (VEX)",
    .gemm = {LIG_I8_TILE(6, 16, avxvnni), .kr = 4, .b_elem_bytes = 1, .b_panel_extra = 16 * 4, .max_k = 65536}};

const lig_kernel_set lig_kernel_set_avxvnni = {.name = "avxvnni", .features = "AVX2, FMA, F16C and AVX-VNNI",
    .cpu_supports = has_avxvnni, .f32 = &lig_avx2_f32, .i8 = &avxvnni_i8, .fp8 = &lig_avx2_fp8,
    .mxfp4 = &lig_avx2_mxfp4};

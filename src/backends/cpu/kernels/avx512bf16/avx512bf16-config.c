/* The avx512bf16 set: avx512 with a bf16 family on vdpbf16ps and the avx512vnni int8 family;
 * every other dtype runs the avx512 fp32 kernels. */
#include "backends/cpu/kernels/avx512bf16/avx512bf16.h"

#include "backends/cpu/kernels/config_macros.h"

#include "backends/cpu/kernels/avx512/avx512.h"
#include "backends/cpu/kernels/avx512vnni/avx512vnni.h"
#include "backends/cpu/runtime/cpu_features.h"

/* AVX512_VNNI is required too: every CPU with AVX512_BF16 (Cooper Lake, Sapphire Rapids and
 * later, Zen 4 and 5) has it, so the set's reach is unchanged and its int8 family is vpdpbusd's. */
bool lig_cpu_has_avx512bf16(void) {
    const lig_cpu_features *f = lig_cpu_features_get();
    return f->avx512_bf16 && f->avx512_vbmi && f->gfni && f->avx512_vnni;
}

/* bf16 pairs into fp32 with vdpbf16ps (12 x 32 register tiles). Below 16 heads the padding to
 * 32 and the operand packing cost more than the pairs save. Columns pad to the tile's 32 (and
 * the gate's step of 32 heads); D and the key rows to 32 too, as the AMX family, so that the two
 * bf16 sets' scratch and sums agree. */
static const lig_bf16_kernels avx512bf16_bf16 = {.unit = "vdpbf16ps zmm", .format = LIG_OPERANDS_BF16_PAIRS,
    .gemm = {LIG_BF16_TILE(12, 32, avx512bf16), .kr = 2},
    .col_pad = 32, .k_pad = 32, .row_pad = 32, .min_group = 16, LIG_BF16_OPERAND_KERNELS(avx512bf16)};

const lig_kernel_set lig_kernel_set_avx512bf16 = {.name = "avx512bf16",
    .features = "AVX-512 F, BW, DQ, VL, AVX512_BF16, AVX512_VBMI, GFNI and AVX512_VNNI",
    .cpu_supports = lig_cpu_has_avx512bf16, .f32 = &lig_avx512_f32, .bf16 = &avx512bf16_bf16,
    .i8 = &lig_avx512vnni_i8, .fp8 = &lig_avx512_fp8,
    .mxfp4 = &lig_avx512vnni_mxfp4};

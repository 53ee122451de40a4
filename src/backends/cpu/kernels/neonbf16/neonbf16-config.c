/* The neon-bf16 set: neon-i8mm (neon's fp32 and FP8 families, the SMMLA int8 family) with a bf16
 * family on BFMLALB/BFMLALT. Every CPU with FEAT_BF16 that lig knows of has I8MM too (both are
 * ARMv8.6-A), so the set extends neon-i8mm. Plain C tables (no intrinsics here). */
#include "backends/cpu/kernels/neonbf16/neonbf16.h"

#include "backends/cpu/kernels/config_macros.h"

#include "backends/cpu/kernels/neon/neon.h"
#include "backends/cpu/kernels/neoni8mm/neoni8mm.h"
#include "backends/cpu/runtime/cpu_features.h"

static bool has_bf16(void) {
    const lig_cpu_features *f = lig_cpu_features_get();
    return f->asimd && f->asimd_dotprod && f->i8mm && f->bf16;
}

/* bf16 pairs into fp32 with BFMLALB/T by element (8 x 8 register tiles, A pairs broadcast).
 * Its multiply rate is the fp32 FMLA's (4 lanes per instruction): what it saves is the loads and
 * conversions (half-width operands: per pair 2 B loads and 8 broadcasts feed 32 BFMLAL, where the
 * fp32 12 x 8 tile takes 2 and 12 for 24 FMLA), so small groups, padded to 32 heads, stay on the
 * fp32 engine as on avx512bf16. Unmeasured on hardware (docs/cpu-kernels.md). */
const lig_bf16_kernels lig_neonbf16_bf16 = {.unit = "bfmlalb/bfmlalt v.4s", .format = LIG_OPERANDS_BF16_PAIRS,
    .gemm = {LIG_BF16_TILE(8, 8, neonbf16), .kr = 2},
    .col_pad = 32, /* the gate and dQ operand kernels step over 32 heads, as on x86 */
    .k_pad = 32, .row_pad = 32, .min_group = 16, LIG_BF16_OPERAND_KERNELS(neonbf16)};

const lig_kernel_set lig_kernel_set_neonbf16 = {.name = "neon-bf16",
    .features = "Advanced SIMD, the dot-product instructions (ASIMDDP), I8MM and BF16",
    .cpu_supports = has_bf16, .f32 = &lig_neon_f32, .bf16 = &lig_neonbf16_bf16, .i8 = &lig_neoni8mm_i8,
    .fp8 = &lig_neon_fp8};

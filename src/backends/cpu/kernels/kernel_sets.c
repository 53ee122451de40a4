/* The kernel-set table and its selection (see kernel_set.h).
 *
 * Why the families below are written out as tables, alike in shape: a family (lig_f32_kernels,
 * lig_i8_kernels, ...) names its own ISA's kernels, so no two have a field in common that one
 * could inherit (avx512_f32 takes only the AVX2 12 x 8 tile, which it names). A set that extends
 * another states only what it adds by pointing at the families it keeps: avx512bf16_set and
 * amx_set reuse &avx512_f32 and &avx512_fp8, amx_set the avx512bf16 packing and gate, avxvnni_set
 * avx2's fp32 and fp8 families. C11 has no
 * "this constant, but with" for a static initializer, so sharing is by pointer, never by copy. */
#include "backends/cpu/kernels/kernel_set.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/runtime/cpu_features.h"
#include "core/error.h"
#include "core/tuning.h"

static bool always(void) { return true; }

static const lig_f32_kernels scalar_f32 = {
    .name = "scalar",
    .gemm = {.mr = 4, .nr = 4, .ukernel = lig_f32_gemm_ukernel_4x4__scalar},
    .grad_block = 48,
    .fwd_block = 48,
    .grad_gate = lig_grad_gate__scalar,
    .fwd_scores = lig_fwd_scores__scalar,
    .quant_scores = lig_quant_scores__scalar,
    .quant_scores_i32 = lig_quant_scores_i32__scalar,
    .load_row = lig_load_row__scalar,
    .store_row = lig_store_row__scalar,
    .axpy_row = lig_axpy_row__scalar,
};

/* int8: panels of 4 int8 columns, kr = 1 (the reference layout) */
static const lig_i8_kernels scalar_i8 = {
    .name = "scalar",
    .gemm = {.mr = 4, .nr = 4, .kr = 1, .b_elem_bytes = 1, .b_panel_extra = 0, .max_k = 65536,
             .pack_b = lig_i8_pack_b_4x4__scalar, .ukernel = lig_i8_gemm_ukernel_4x4__scalar},
};

static const lig_fp8_kernels scalar_fp8 = {.to_bf16 = lig_fp8_to_bf16__scalar, .to_f32 = lig_fp8_to_f32__scalar};

static const lig_kernel_set scalar_set = {
    .name = "scalar", .features = "nothing", .cpu_supports = always, .f32 = &scalar_f32,
    .i8 = &scalar_i8, .fp8 = &scalar_fp8,
};

#if defined(LIG_HAVE_X86_KERNELS)
static bool has_avx2(void) { return lig_cpu_features_get()->avx2_fma_f16c; }

/* 6 x 16: 12 ymm accumulators + 2 B vectors + 1 broadcast. A last column tile of <= 8 (the
 * scores of a group of 8 heads) takes 12 x 8, so that half of every FMA is not spent on
 * masked-off lanes. Blocks of 48 = 8 x 6 = 4 x 12 slots. */
static const lig_f32_kernels avx2_f32 = {
    .name = "avx2",
    .gemm = {.mr = 6, .nr = 16, .ukernel = lig_f32_gemm_ukernel_6x16__avx2,
             .narrow_mr = 12, .narrow_nr = 8, .narrow_ukernel = lig_f32_gemm_ukernel_12x8__avx2},
    .grad_block = 48,
    .fwd_block = 48,
    .grad_gate = lig_grad_gate__avx2,
    .fwd_scores = lig_fwd_scores__avx2,
    .quant_scores = lig_quant_scores__avx2,
    .quant_scores_i32 = lig_quant_scores_i32__avx2,
    .load_row = lig_load_row__avx2,
    .store_row = lig_store_row__avx2,
    .axpy_row = lig_axpy_row__avx2,
};

/* int8 by sign-extension to int16 and vpmaddwd: 6 x 16, B pairs pre-widened to int16 */
static const lig_i8_kernels avx2_i8 = {
    .name = "avx2",
    .gemm = {.mr = 6, .nr = 16, .kr = 2, .b_elem_bytes = 2, .b_panel_extra = 0, .max_k = 65536,
             .pack_b = lig_i8_pack_b_6x16__avx2, .ukernel = lig_i8_gemm_ukernel_6x16__avx2},
};

static const lig_fp8_kernels avx2_fp8 = {.to_bf16 = lig_fp8_to_bf16__avx2, .to_f32 = lig_fp8_to_f32__avx2};

static const lig_kernel_set avx2_set = {
    .name = "avx2", .features = "AVX2, FMA and F16C", .cpu_supports = has_avx2, .f32 = &avx2_f32,
    .i8 = &avx2_i8, .fp8 = &avx2_fp8,
};

#if defined(LIG_HAVE_AVXVNNI_KERNELS)
static bool has_avxvnni(void) {
    const lig_cpu_features *f = lig_cpu_features_get();
    return f->avx2_fma_f16c && f->avx_vnni;
}

/* int8 by VEX vpdpbusd on ymm (A + 128 as u8 times s8 B, less 128 x the column sums packed with
 * B, as avx512vnni): 6 x 16, B in quads of int8 + 16 int32 corrections per panel */
static const lig_i8_kernels avxvnni_i8 = {
    .name = "avxvnni",
    .gemm = {.mr = 6, .nr = 16, .kr = 4, .b_elem_bytes = 1, .b_panel_extra = 16 * 4, .max_k = 65536,
             .pack_b = lig_i8_pack_b_6x16__avxvnni, .ukernel = lig_i8_gemm_ukernel_6x16__avxvnni},
};

/* avx2 + the int8 family above: for CPUs with AVX-VNNI and no AVX-512 (Alder Lake and later
 * client cores), whose int8 products would otherwise take vpmaddwd. Every other dtype runs the
 * avx2 kernels. Below avx512 in the table: where both exist the avx512 sets are chosen. */
static const lig_kernel_set avxvnni_set = {
    .name = "avxvnni", .features = "AVX2, FMA, F16C and AVX-VNNI", .cpu_supports = has_avxvnni, .f32 = &avx2_f32,
    .i8 = &avxvnni_i8, .fp8 = &avx2_fp8,
};
#endif /* LIG_HAVE_AVXVNNI_KERNELS */

static bool has_avx512(void) { return lig_cpu_features_get()->avx512; }

/* 12 x 32: 24 zmm accumulators; a last column tile of <= 16 (groups of up to 16 heads) takes
 * 24 x 16, one of <= 8 the AVX2 set's 12 x 8 (eight full ymm lanes do the work of a half-masked
 * zmm, and on a 256-bit datapath twice as fast). Blocks of 48 = 4 x 12 = 2 x 24 slots. */
static const lig_f32_kernels avx512_f32 = {
    .name = "avx512",
    .gemm = {.mr = 12, .nr = 32, .ukernel = lig_f32_gemm_ukernel_12x32__avx512,
             .narrow_mr = 24, .narrow_nr = 16, .narrow_ukernel = lig_f32_gemm_ukernel_24x16__avx512,
             .narrowest_mr = 12, .narrowest_nr = 8, .narrowest_ukernel = lig_f32_gemm_ukernel_12x8__avx2},
    .grad_block = 48,
    .fwd_block = 48,
    .grad_gate = lig_grad_gate__avx512,
    .fwd_scores = lig_fwd_scores__avx512,
    .quant_scores = lig_quant_scores__avx512,
    .quant_scores_i32 = lig_quant_scores_i32__avx512,
    .load_row = lig_load_row__avx512,
    .store_row = lig_store_row__avx512,
    .axpy_row = lig_axpy_row__avx512,
};

/* int8 by 512-bit vpmaddwd: 12 x 32 (24 zmm accumulators), B pairs pre-widened to int16 */
static const lig_i8_kernels avx512_i8 = {
    .name = "avx512",
    .gemm = {.mr = 12, .nr = 32, .kr = 2, .b_elem_bytes = 2, .b_panel_extra = 0, .max_k = 65536,
             .pack_b = lig_i8_pack_b_12x32__avx512, .ukernel = lig_i8_gemm_ukernel_12x32__avx512},
};

static const lig_fp8_kernels avx512_fp8 = {.to_bf16 = lig_fp8_to_bf16__avx512, .to_f32 = lig_fp8_to_f32__avx512};

static const lig_kernel_set avx512_set = {
    .name = "avx512", .features = "AVX-512 F, BW, DQ and VL", .cpu_supports = has_avx512, .f32 = &avx512_f32,
    .i8 = &avx512_i8, .fp8 = &avx512_fp8,
};

/* AVX512_VNNI is required too: every CPU with AVX512_BF16 (Cooper Lake, Sapphire Rapids and
 * later, Zen 4 and 5) has it, so the set's reach is unchanged and its int8 family is vpdpbusd's. */
static bool has_avx512bf16(void) {
    const lig_cpu_features *f = lig_cpu_features_get();
    return f->avx512_bf16 && f->avx512_vbmi && f->gfni && f->avx512_vnni;
}

/* int8 by vpdpbusd (A + 128 as u8 times s8 B, less 128 x the column sums packed with B):
 * 12 x 32, B in quads of int8 + 32 int32 corrections per panel */
static const lig_i8_kernels avx512vnni_i8 = {
    .name = "avx512vnni",
    .gemm = {.mr = 12, .nr = 32, .kr = 4, .b_elem_bytes = 1, .b_panel_extra = 32 * 4, .max_k = 65536,
             .pack_b = lig_i8_pack_b_12x32__avx512vnni, .ukernel = lig_i8_gemm_ukernel_12x32__avx512vnni},
};

/* bf16 pairs into fp32 with vdpbf16ps (12 x 32 register tiles). Below 16 heads the padding to
 * 32 and the operand packing cost more than the pairs save. */
static const lig_bf16_kernels avx512bf16_bf16 = {
    .format = LIG_OPERANDS_BF16_PAIRS,
    .gemm = {.mr = 12, .nr = 32, .kr = 2, .ukernel = lig_bf16_gemm_ukernel_12x32__avx512bf16},
    .min_group = 16,
    .pack_pairs = lig_bf16_pack_pairs__avx512bf16,
    .gate = lig_bf16_gate__avx512bf16,
    .dq_operand = lig_bf16_dq_operand__avx512bf16,
};

/* avx512 + the bf16 family above; every other dtype runs the avx512 fp32 kernels. */
static const lig_kernel_set avx512bf16_set = {
    .name = "avx512bf16",
    .features = "AVX-512 F, BW, DQ, VL, AVX512_BF16, AVX512_VBMI, GFNI and AVX512_VNNI",
    .cpu_supports = has_avx512bf16,
    .f32 = &avx512_f32,
    .bf16 = &avx512bf16_bf16,
    .i8 = &avx512vnni_i8,
    .fp8 = &avx512_fp8,
};

#if defined(LIG_HAVE_AMX_KERNELS)
static bool has_amx(void) { return has_avx512bf16() && lig_cpu_features_get()->amx_bf16; }

/* AMX tiles (32 x 32 blocks of four accumulator tiles), configured per thread; the operand
 * packing and the gate are the avx512bf16 family's. The tiles win even with a group of 8 heads
 * padded to 32. */
static const lig_bf16_kernels amx_bf16 = {
    .format = LIG_OPERANDS_BF16_TILES,
    .gemm = {.mr = 32, .nr = 32, .kr = 32, .ukernel = lig_bf16_gemm_ukernel_32x32__amx,
             .tiles = lig_bf16_gemm_tiles__amx,
             .thread_begin = lig_amx_tiles_begin, .thread_end = lig_amx_tiles_end},
    .min_group = 1,
    .pack_pairs = lig_bf16_pack_pairs__avx512bf16,
    .gate = lig_bf16_gate__avx512bf16,
    .dq_operand = lig_bf16_dq_operand__avx512bf16,
};

/* avx512bf16 with the AMX product; every other dtype runs the avx512 fp32 kernels. */
static const lig_kernel_set amx_set = {
    .name = "amx-bf16",
    .features = "AMX-TILE and AMX-BF16 (with the kernel's permission), and what avx512bf16 needs",
    .cpu_supports = has_amx,
    .f32 = &avx512_f32,
    .bf16 = &amx_bf16,
    .i8 = &avx512vnni_i8,
    .fp8 = &avx512_fp8,
};
#endif /* LIG_HAVE_AMX_KERNELS */
#endif

static const lig_kernel_set *const table[] = {
    &scalar_set,
#if defined(LIG_HAVE_X86_KERNELS)
    &avx2_set,
#if defined(LIG_HAVE_AVXVNNI_KERNELS)
    &avxvnni_set,
#endif
    &avx512_set,
    &avx512bf16_set,
#if defined(LIG_HAVE_AMX_KERNELS)
    &amx_set,
#endif
#endif
};
enum { TABLE_SIZE = sizeof table / sizeof table[0] };

const lig_kernel_set *const *lig_kernel_set_table(int *count) {
    *count = TABLE_SIZE;
    return table;
}

static const lig_kernel_set *find(const char *name) {
    for (int i = 0; i < TABLE_SIZE; i++)
        if (strcmp(table[i]->name, name) == 0) return table[i];
    return NULL;
}

static char supported_list[128];
static const lig_kernel_set *widest;
static const char *env_isa; /* LIG_ISA, or NULL */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static _Atomic(const lig_kernel_set *) forced;

static void init(void) {
    for (int i = 0; i < TABLE_SIZE; i++) {
        if (!table[i]->cpu_supports()) continue;
        widest = table[i];
        if (supported_list[0]) strcat(supported_list, ",");
        strcat(supported_list, table[i]->name);
    }
    env_isa = lig_tuning_environment()->isa; /* LIG_ISA, or "scalar" for LIG_DISABLE_SIMD (core/tuning.h) */
}

/* The set called `name` when the CPU supports it; otherwise fails naming `setting`. */
static lig_status lookup(const char *setting, const char *name, const lig_kernel_set **set) {
    const lig_kernel_set *ks = find(name);
    if (!ks)
        return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected a kernel set this CPU supports (%s), got \"%.32s\", which this build does not have",
                        setting, supported_list, name);
    if (!ks->cpu_supports())
        return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected a kernel set this CPU supports (%s), got \"%s\", which needs %s",
                        setting, supported_list, ks->name, ks->features);
    *set = ks;
    return LIG_SUCCESS;
}

lig_status lig_kernel_set_current(const lig_kernel_set **set) {
    pthread_once(&once, init);
    const lig_kernel_set *f = atomic_load(&forced);
    if (f) {
        *set = f;
        return LIG_SUCCESS;
    }
    if (env_isa) return lookup("LIG_ISA", env_isa, set);
    *set = widest;
    return LIG_SUCCESS;
}

lig_status lig_kernel_set_force(const char *name) {
    pthread_once(&once, init);
    if (!name || !*name) {
        atomic_store(&forced, NULL);
        return LIG_SUCCESS;
    }
    const lig_kernel_set *ks;
    lig_status st = lookup("name", name, &ks);
    if (st == LIG_SUCCESS) atomic_store(&forced, ks);
    return st;
}

const char *lig_kernel_sets_supported(void) {
    pthread_once(&once, init);
    return supported_list;
}

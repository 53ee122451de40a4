/* Initializers for the parts of a kernel set's configuration that follow from the ISA's name
 * and a tile's size. Every set names its micro-kernels lig_<kernel>[_<mr>x<nr>]__<isa> (see
 * <isa>/<isa>.h), so a tile's kernels follow from (mr, nr, isa) and a family's list of row
 * kernels from the ISA alone; writing them once here lets each <isa>-config.c state only what
 * differs between sets (its tiles, blocks, units, paddings), a few related fields to a line, and
 * a kernel added to a family is added to every set in one place. Used only inside designated
 * initializers of the structs in kernel_set.h; the arguments are the literal tile sizes (they
 * are pasted into the kernels' names). */
#ifndef LIG_CPU_KERNELS_CONFIG_MACROS_H
#define LIG_CPU_KERNELS_CONFIG_MACROS_H

/* A tile of lig_f32_gemm_config: mr x nr, run by lig_f32_gemm_ukernel_<mr>x<nr>__<isa>. The
 * main tile, then the optional last column tiles of at most narrow_nr and narrowest_nr columns
 * (a set without them leaves their fields 0: none). */
#define LIG_F32_TILE(mr_, nr_, isa) .mr = mr_, .nr = nr_, .ukernel = lig_f32_gemm_ukernel_##mr_##x##nr_##__##isa
#define LIG_F32_NARROW_TILE(mr_, nr_, isa)                                                        \
    .narrow_mr = mr_, .narrow_nr = nr_, .narrow_ukernel = lig_f32_gemm_ukernel_##mr_##x##nr_##__##isa
#define LIG_F32_NARROWEST_TILE(mr_, nr_, isa)                                                     \
    .narrowest_mr = mr_, .narrowest_nr = nr_, .narrowest_ukernel = lig_f32_gemm_ukernel_##mr_##x##nr_##__##isa

/* The tile of lig_bf16_gemm_config: mr x nr, run by lig_bf16_gemm_ukernel_<mr>x<nr>__<isa>. */
#define LIG_BF16_TILE(mr_, nr_, isa) .mr = mr_, .nr = nr_, .ukernel = lig_bf16_gemm_ukernel_##mr_##x##nr_##__##isa

/* The tile of lig_i8_gemm_config: mr x nr, B packed by lig_i8_pack_b_<mr>x<nr>__<isa> for
 * lig_i8_gemm_ukernel_<mr>x<nr>__<isa>. */
#define LIG_I8_TILE(mr_, nr_, isa)                                                                 \
    .mr = mr_, .nr = nr_, .pack_b = lig_i8_pack_b_##mr_##x##nr_##__##isa,                            \
    .ukernel = lig_i8_gemm_ukernel_##mr_##x##nr_##__##isa

/* The fp32 family's row kernels (lig_f32_kernels): gate, scores and row conversions. */
#define LIG_F32_ROW_KERNELS(isa)                                                                   \
    .grad_gate = lig_grad_gate__##isa, .fwd_scores = lig_fwd_scores__##isa,                        \
    .quant_scores = lig_quant_scores__##isa, .quant_scores_i32 = lig_quant_scores_i32__##isa,      \
    .load_row = lig_load_row__##isa, .store_row = lig_store_row__##isa, .axpy_row = lig_axpy_row__##isa

/* The bf16 family's operand kernels (lig_bf16_kernels): packing, gate and dq operand. */
#define LIG_BF16_OPERAND_KERNELS(isa)                                                              \
    .pack_pairs = lig_bf16_pack_pairs__##isa, .gate = lig_bf16_gate__##isa,                        \
    .dq_operand = lig_bf16_dq_operand__##isa

/* The FP8 conversions (lig_fp8_kernels). */
#define LIG_FP8_KERNELS(isa) .to_bf16 = lig_fp8_to_bf16__##isa, .to_f32 = lig_fp8_to_f32__##isa

#endif

/* Initializers for the parts of a kernel set's configuration that follow from the ISA's name
 * alone. Every set names its micro-kernels lig_<kernel>__<isa> (see <isa>/<isa>.h), so the list
 * of fields a family fills is the same in every <isa>-config.c; writing it once here lets each
 * config state only what differs between sets (tiles, blocks, units, paddings), and a kernel
 * added to a family is added to every set in one place. Used only inside designated
 * initializers of the structs in kernel_set.h. */
#ifndef LIG_CPU_KERNELS_CONFIG_MACROS_H
#define LIG_CPU_KERNELS_CONFIG_MACROS_H

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

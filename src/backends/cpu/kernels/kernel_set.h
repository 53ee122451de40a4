/* Kernel sets, in the manner of XNNPACK's gemm configs: one self-describing configuration per
 * ISA that names its micro-kernels, their tile sizes and operand format, and the block sizes
 * the operators' engines use, so that a plan can size its scratch for the set it will run.
 *
 * Phase 1 picks the set: lig_set_kernel_set(), else the environment variable LIG_ISA, else the
 * widest set the CPU supports; a forced set the CPU lacks is an error, never a silent fallback. */
#ifndef LIG_CPU_KERNELS_KERNEL_SET_H
#define LIG_CPU_KERNELS_KERNEL_SET_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/cpu/kernels/kernels.h"
#include "lig.h"

/* How an engine feeds the multiply units. */
typedef enum lig_operand_format {
    LIG_OPERANDS_F32 = 0,   /* every operand converted to fp32; fp32 FMA micro-kernels */
    LIG_OPERANDS_BF16_PAIRS, /* bf16 pairs into fp32 (dot-product instructions) */
    LIG_OPERANDS_BF16_TILES  /* bf16 tiles in the VNNI layout (matrix units) */
} lig_operand_format;

typedef struct lig_f32_gemm_config {
    int64_t mr, nr;                  /* the main micro-kernel's tile */
    lig_f32_gemm_ukernel_fn ukernel;
    int64_t narrow_mr, narrow_nr;    /* a last column tile of <= narrow_nr columns (0: none) */
    lig_f32_gemm_ukernel_fn narrow_ukernel;
    int64_t narrowest_mr, narrowest_nr; /* and one of <= narrowest_nr < narrow_nr columns (0: none) */
    lig_f32_gemm_ukernel_fn narrowest_ukernel;
} lig_f32_gemm_config;

typedef struct lig_bf16_gemm_config {
    int64_t mr, nr;                  /* the micro-kernel's tile */
    int64_t kr;                      /* the reduction it takes at full speed: a multiple of kr */
    lig_bf16_gemm_ukernel_fn ukernel;
    lig_bf16_gemm_tiles_fn tiles;    /* whole products of full tiles, or NULL */
    void (*thread_begin)(void);      /* per-thread setup the micro-kernel needs (tile configuration), or NULL */
    void (*thread_end)(void);
} lig_bf16_gemm_config;

/* The fp32 family, which every set has: the fp32 engines' GEMM, gate, scores and row
 * conversions, and their block sizes. */
typedef struct lig_f32_kernels {
    const char *name;     /* the set these kernels come from (the name plans of fp32 engines report) */
    lig_f32_gemm_config gemm;
    int64_t grad_block;   /* slots per block of the backward's fp32 engine (a multiple of every mr) */
    int64_t fwd_block;    /* keys per block of the forward's fp32 engine */
    lig_grad_gate_fn grad_gate;
    lig_fwd_scores_fn fwd_scores;
    lig_load_row_fn load_row;
    lig_store_row_fn store_row;
    lig_axpy_row_fn axpy_row;
} lig_f32_kernels;

/* The bf16 family: the bf16 engines' product (pairs or tiles), operand packing and gate. */
typedef struct lig_bf16_kernels {
    lig_operand_format format;
    lig_bf16_gemm_config gemm;
    int64_t min_group;    /* heads per key head from which bf16 inputs take the bf16 engine */
    lig_bf16_pack_pairs_fn pack_pairs;
    lig_bf16_gate_fn gate;
    lig_bf16_dq_operand_fn dq_operand;
} lig_bf16_kernels;

/* A kernel set: what the CPU must have, and one configuration per kernel family. A set that
 * extends another shares that one's configurations and names only what it adds. */
typedef struct lig_kernel_set {
    const char *name;     /* the LIG_ISA value, e.g. "avx2" */
    const char *features; /* what the CPU must have, for messages */
    bool (*cpu_supports)(void);
    const lig_f32_kernels *f32;
    const lig_bf16_kernels *bf16; /* NULL: bf16 inputs run the fp32 engines */
} lig_kernel_set;

/* Every set this build has, from portable to widest; *count receives how many. */
const lig_kernel_set *const *lig_kernel_set_table(int *count);

/* The set new plans use (forced or automatic). Fails (message naming the setting, the value and
 * the sets this CPU supports) when LIG_ISA names a set that is unknown or that the CPU lacks. */
lig_status lig_kernel_set_current(const lig_kernel_set **set);

/* Forces a set for new plans; NULL or "" returns to automatic selection (LIG_ISA, else the
 * widest). Fails without changing anything for an unknown set or one the CPU lacks. */
lig_status lig_kernel_set_force(const char *name);

/* The sets this CPU supports, comma-separated, portable first. */
const char *lig_kernel_sets_supported(void);

/* C (+)= A B with A read through strides (see lig_f32_gemm_ukernel_fn), tiled over the
 * config's micro-kernels: columns outermost so that a B panel stays in L1 across row tiles. */
void lig_f32_gemm(const lig_f32_gemm_config *cfg, int64_t M, int64_t N, int64_t K, const float *a, int64_t a_rs,
                  int64_t a_cs, const float *b, int64_t ldb, float *c, int64_t ldc, bool accumulate);

/* The same for a bf16 product (see lig_bf16_gemm_ukernel_fn): K even; ldb in pair words. */
void lig_bf16_gemm(const lig_bf16_gemm_config *cfg, int64_t M, int64_t N, int64_t K, const uint16_t *a, int64_t lda,
                   const uint16_t *b, int64_t ldb, float *c, int64_t ldc, bool accumulate);

#endif

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
    /* the quantized forward's scores (contract 2.4), bit for bit lig_quant_scores__scalar's */
    lig_quant_scores_fn quant_scores;
    lig_quant_scores_i32_fn quant_scores_i32;
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

/* The int8 GEMM of the quantized forward (see lig_i8_gemm_ukernel_fn): the packing of B is the
 * config's business; an engine sizes it with lig_i8_packed_b_bytes, fills it with pack_b and
 * multiplies with lig_i8_gemm, never reading the layout itself. */
typedef struct lig_i8_gemm_config {
    int64_t mr, nr;         /* the micro-kernel's tile: key rows x query columns (one B panel) */
    int64_t kr;             /* the packed reduction is K rounded up to kr, zero-padded */
    int64_t b_elem_bytes;   /* bytes per packed B element: 1 (int8) or 2 (sign-extended int16) */
    int64_t b_panel_extra;  /* bytes after each panel's elements (vpdpbusd: NR int32 column sums) */
    int64_t max_k;          /* the largest K whose int32 results (and every partial sum) are exact */
    lig_i8_pack_b_fn pack_b;
    lig_i8_gemm_ukernel_fn ukernel;
} lig_i8_gemm_config;

/* The int8 family, which every set has. */
typedef struct lig_i8_kernels {
    const char *name;       /* the ISA of the micro-kernel, e.g. "avx512vnni" */
    lig_i8_gemm_config gemm;
} lig_i8_kernels;

/* The FP8 e4m3fn conversions, which every set has: into bf16 bits for the bf16 engines, into fp32
 * for the others (a block of key rows once per block, not per query row). */
typedef struct lig_fp8_kernels {
    lig_fp8_to_bf16_fn to_bf16;
    lig_fp8_to_f32_fn to_f32;
} lig_fp8_kernels;

/* A kernel set: what the CPU must have, and one configuration per kernel family. A set that
 * extends another shares that one's configurations and names only what it adds. */
typedef struct lig_kernel_set {
    const char *name;     /* the LIG_ISA value, e.g. "avx2" */
    const char *features; /* what the CPU must have, for messages */
    bool (*cpu_supports)(void);
    const lig_f32_kernels *f32;
    const lig_bf16_kernels *bf16; /* NULL: bf16 inputs run the fp32 engines */
    const lig_i8_kernels *i8;     /* int8 q and k (every set) */
    const lig_fp8_kernels *fp8;   /* FP8 e4m3fn q and k (every set) */
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

/* Bytes of one packed B panel of a reduction of K (a multiple of 64, so panels stay aligned
 * when the buffer is), and of all ceil(N / nr) panels of N columns. */
int64_t lig_i8_panel_bytes(const lig_i8_gemm_config *cfg, int64_t K);
int64_t lig_i8_packed_b_bytes(const lig_i8_gemm_config *cfg, int64_t K, int64_t N);

/* C (+)= A B for int8 A (M x K, lda) and B packed by cfg->pack_b (K x N), int32 C (ldc): column
 * panels outermost (one panel stays in L1 across the row tiles), then row tiles. K <= max_k. */
void lig_i8_gemm(const lig_i8_gemm_config *cfg, int64_t M, int64_t N, int64_t K, const int8_t *a, int64_t lda,
                 const void *b_packed, int32_t *c, int64_t ldc, bool accumulate);

#endif

/* Operand preparation the two bf16 engines (fwd_engine_bf16.c, grad_engine_bf16.c) share: rows
 * of bf16 bits copied and zero-padded to the tile width, Q^T in the VNNI pair layout, and the
 * kernel set's per-thread setup around a thread's units. */
#ifndef LIG_CPU_OPERATORS_BF16_OPERANDS_H
#define LIG_CPU_OPERATORS_BF16_OPERANDS_H

#include <stdint.h>

#include "backends/cpu/kernels/kernel_set.h"
#include "core/size.h"

/* Columns and D of the bf16 products are padded to multiples of 32 (the tiles' width). Saturates
 * (core/size.h): a D too large to round makes the scratch too large, which the plan refuses. */
static inline int64_t lig_round32(uint64_t x) { return lig_size_round_up(x, 32); }

/* n elements of bf16 bits at src (stride in elements) into dst, zeros up to `padded`. */
void lig_bf16_copy_row(uint16_t *dst, const char *src, int64_t stride, int64_t n, int64_t padded);

/* Q^T pairs from n_rows rows of dp bf16 values (dp even): pair p of row j, the 32-bit word p of
 * the row, goes to qt[p * n_rows + j]. */
void lig_bf16_transpose_pairs(const uint16_t *rows, int64_t n_rows, int64_t dp, uint32_t *qt);

/* The set's per-thread setup of its bf16 product (a tile configuration), if it has one. */
void lig_bf16_thread_begin(const lig_kernel_set *ks);
void lig_bf16_thread_end(const lig_kernel_set *ks);

#endif

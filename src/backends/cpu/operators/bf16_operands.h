/* Operand preparation the two bf16 engines (fwd_engine_bf16.c, grad_engine_bf16.c) share: rows
 * of bf16 bits copied and zero-padded as the set's bf16 family asks, Q^T in the VNNI pair layout, and the
 * kernel set's per-thread setup around a thread's units. */
#ifndef LIG_CPU_OPERATORS_BF16_OPERANDS_H
#define LIG_CPU_OPERATORS_BF16_OPERANDS_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/cpu/kernels/kernel_set.h"
#include "backends/cpu/operators/fwd_engine.h"
#include "core/size.h"
#include "core/workspace.h"

/* x rounded up to a multiple of one of the bf16 family's paddings (lig_bf16_kernels: col_pad for
 * the products' columns, k_pad for D, row_pad for a block's key rows). Saturates (core/size.h): a D
 * too large to round makes the scratch too large, which the plan refuses. */
static inline int64_t lig_bf16_pad(uint64_t x, int64_t multiple) { return lig_size_round_up(x, (uint64_t)multiple); }

/* n elements of bf16 bits at src (stride in elements) into dst, zeros up to `padded`. */
void lig_bf16_copy_row(uint16_t *dst, const char *src, int64_t stride, int64_t n, int64_t padded);

/* Q^T pairs from n_rows rows of dp bf16 values (dp even): pair p of row j, the 32-bit word p of
 * the row, goes to qt[p * n_rows + j]. */
void lig_bf16_transpose_pairs(const uint16_t *rows, int64_t n_rows, int64_t dp, uint32_t *qt);

/* The set's per-thread setup of its bf16 product (a tile configuration), if it has one. */
void lig_bf16_thread_begin(const lig_kernel_set *ks);
void lig_bf16_thread_end(const lig_kernel_set *ks);

/* Keys per block of the forward's engines on bf16 units. */
enum { LIG_FWD_BF16_BLOCK = 64 };

/* The scratch of the forward's engines on bf16 units (fwd_engine_bf16.c, fwd_engine_fp8.c). */
typedef struct lig_fwd_bf16_layout {
    int64_t gp, dp; /* columns (rows x heads) and D, padded to the family's col_pad and k_pad */
    uint64_t qrow;  /* bf16[gp][dp] */
    uint64_t qt;    /* bf16 pairs [dp/2][gp]: Q^T in the VNNI layout (of the stripe's padded columns) */
    uint64_t wf;    /* float[gp] */
    uint64_t sq;    /* float[gp] (with_scales and has_sq) */
    uint64_t kb;    /* bf16[block rounded up to row_pad][dp] */
    uint64_t sk;    /* float[block] (with_scales) */
    uint64_t st;    /* float[block][gp] */
    uint64_t total;
} lig_fwd_bf16_layout;

static inline lig_fwd_bf16_layout lig_fwd_bf16_layout_for(const lig_fwd_ctx *c, bool with_scales) {
    lig_fwd_bf16_layout l;
    uint64_t at = 0;
    const lig_bf16_kernels *k = c->ks->bf16;
    const uint64_t nb = LIG_FWD_BF16_BLOCK, rows = (uint64_t)lig_bf16_pad(nb, k->row_pad);
    l.gp = lig_bf16_pad(lig_size_mul((uint64_t)c->rows, (uint64_t)c->G), k->col_pad);
    l.dp = lig_bf16_pad((uint64_t)c->D, k->k_pad);
    const uint64_t gp = (uint64_t)l.gp, dp = (uint64_t)l.dp;
    l.qrow = lig_ws_take(&at, lig_size_mul3(2, gp, dp));
    l.qt = lig_ws_take(&at, lig_size_mul3(2, gp, dp));
    l.wf = lig_ws_take(&at, lig_size_mul(4, gp));
    l.sq = lig_ws_take(&at, with_scales && c->has_sq ? lig_size_mul(4, gp) : 0);
    l.kb = lig_ws_take(&at, lig_size_mul3(2, rows, dp));
    l.sk = lig_ws_take(&at, with_scales ? 4 * nb : 0);
    l.st = lig_ws_take(&at, lig_size_mul3(4, nb, gp));
    l.total = at;
    return l;
}

/* Members the forward's engines on bf16 units (fwd_engine_bf16.c, fwd_engine_fp8.c) share: plans
 * report the set's name, and each thread runs the set's setup around its units. */
static inline const char *lig_fwd_bf16_kernels_name(const lig_fwd_ctx *c) { return c->ks->name; }
static inline void lig_fwd_bf16_thread_begin(const lig_fwd_ctx *c) { lig_bf16_thread_begin(c->ks); }
static inline void lig_fwd_bf16_thread_end(const lig_fwd_ctx *c) { lig_bf16_thread_end(c->ks); }

#endif

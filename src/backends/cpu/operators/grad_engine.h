/* The backward's block engines: how one unit's products are computed on a kernel set. The
 * operator (indexer_grad.c) walks a unit's slots, hands the engine blocks of counted slots and
 * routes the dK contributions the engine writes to the accumulator; the engine owns the
 * formats (fp32, bf16 pairs, tiles), the packing and its part of the thread's scratch. */
#ifndef LIG_CPU_OPERATORS_GRAD_ENGINE_H
#define LIG_CPU_OPERATORS_GRAD_ENGINE_H

#include <stdint.h>

#include "backends/cpu/kernels/kernel_set.h"
#include "lig.h"

/* What an engine needs to know of a plan: sizes, dtypes and element strides. */
typedef struct lig_grad_ctx {
    const lig_kernel_set *ks;
    int64_t G, D;
    int64_t block;                /* counted slots per block (the engine's choice) */
    int64_t contrib_ld;           /* floats between two slots' contributions (the engine's choice) */
    lig_dtype dtype;              /* q and k */
    lig_dtype w_dtype;            /* w: dtype, or FLOAT32 (the fp32 engine only) */
    int64_t q_head, q_dim;        /* query: between heads, between elements */
    int64_t w_head, k_dim;
    lig_dtype dq_dtype, dw_dtype;
    int64_t dq_head, dq_dim, dw_head;
} lig_grad_ctx;

typedef struct lig_grad_engine {
    /* The kernels a plan with this engine runs: the set's name or its fp32 kernels' name. */
    const char *(*kernels_name)(const lig_grad_ctx *c);
    /* Sets c->block and c->contrib_ld (the rest of *c is filled). */
    void (*configure)(lig_grad_ctx *c);
    /* Bytes of thread scratch the engine uses (64-byte aligned base). */
    uint64_t (*scratch_bytes)(const lig_grad_ctx *c);
    /* Around each thread's units (e.g. the tile configuration); NULL when nothing is needed. */
    void (*thread_begin)(const lig_grad_ctx *c);
    void (*thread_end)(const lig_grad_ctx *c);
    /* Loads the unit's G query heads (q points at the first, w at its weight) and clears the
     * unit's dQ and dW accumulators. */
    void (*begin_unit)(const lig_grad_ctx *c, char *scratch, const char *q, const char *w);
    /* One block of n <= c->block counted slots with key rows key[i] and gradients dy[i]:
     * accumulates dQ and dW, and writes contrib[i][0..D) (rows c->contrib_ld apart) and
     * scale[i] such that the key row of slot i receives dK += scale[i] * contrib[i]. The next
     * block's key rows (next_n of them, maybe 0) are a hint to fetch meanwhile. */
    void (*block)(const lig_grad_ctx *c, char *scratch, int64_t n, const char *const *key, const float *dy,
                  const char *const *next_key, int64_t next_n, float *contrib, float *scale);
    /* Stores the unit's dQ rows (dq at the first head) and dW, each rounded once. */
    void (*end_unit)(const lig_grad_ctx *c, char *scratch, char *dq, char *dw);
} lig_grad_engine;

/* Every operand converted to fp32; the set's fp32 GEMM, gate and conversion kernels. */
extern const lig_grad_engine lig_grad_engine_f32;
/* bf16 inputs on a set with bf16 kernels (grad_engine_bf16.c). */
extern const lig_grad_engine lig_grad_engine_bf16;

/* Asks for the n key rows (D elements of esize bytes, `stride` elements apart) to be fetched
 * into the mid-level cache: the engines' use of the next-block hint. */
static inline void lig_prefetch_rows(const char *const *row, int64_t n, int64_t D, int64_t esize, int64_t stride) {
    const int64_t bytes = stride == 1 ? D * esize : 64;
    for (int64_t i = 0; i < n; i++)
        for (int64_t off = 0; off < bytes; off += 64) __builtin_prefetch(row[i] + off, 0, 2);
}

#endif

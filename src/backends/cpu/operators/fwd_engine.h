/* The forward's block engines: the index scores of blocks of keys for one unit, on a kernel
 * set. The operator (indexer.c) walks the visible keys and keeps the best; the engine owns
 * the formats, the packing and its part of the thread's scratch. */
#ifndef LIG_CPU_OPERATORS_FWD_ENGINE_H
#define LIG_CPU_OPERATORS_FWD_ENGINE_H

#include <stdint.h>

#include "backends/cpu/kernels/kernel_set.h"
#include "lig.h"

typedef struct lig_fwd_ctx {
    const lig_kernel_set *ks;
    int64_t G, D;
    int64_t block;           /* keys per block */
    lig_dtype dtype;         /* q, k, w */
    int64_t q_head, q_dim;   /* element strides */
    int64_t w_head, k_dim;
} lig_fwd_ctx;

typedef struct lig_fwd_engine {
    /* The kernels a plan with this engine runs: the set's name or its fp32 kernels' name. */
    const char *(*kernels_name)(const lig_fwd_ctx *c);
    /* Sets c->block (the rest of *c is filled). */
    void (*configure)(lig_fwd_ctx *c);
    uint64_t (*scratch_bytes)(const lig_fwd_ctx *c);
    /* Around each thread's units (e.g. the tile configuration); NULL when nothing is needed. */
    void (*thread_begin)(const lig_fwd_ctx *c);
    void (*thread_end)(const lig_fwd_ctx *c);
    /* Loads the unit's G query heads (q points at the first, w at its weight). */
    void (*begin_unit)(const lig_fwd_ctx *c, char *scratch, const char *q, const char *w);
    /* score[i] = sum_h w_h * ReLU(q_h . k_i) for the n <= c->block key rows key[i]. */
    void (*score_block)(const lig_fwd_ctx *c, char *scratch, int64_t n, const char *const *key, float *score);
} lig_fwd_engine;

extern const lig_fwd_engine lig_fwd_engine_f32;
/* bf16 inputs on a set with bf16 kernels (fwd_engine_bf16.c). */
extern const lig_fwd_engine lig_fwd_engine_bf16;

#endif

/* The forward's block engines: the index scores of blocks of keys for a stripe (a few query rows
 * of one key head, docs/architecture.md "Words for work"), on a kernel set. The operator
 * (indexer.c) walks the keys the rows see and keeps each row's best; the engine owns the formats,
 * the packing and its part of the thread's scratch. Several rows share each block of keys so that a small head group still gives the
 * multiply units wide products (rows x heads columns). */
#ifndef LIG_CPU_OPERATORS_FWD_ENGINE_H
#define LIG_CPU_OPERATORS_FWD_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/cpu/kernels/kernel_set.h"
#include "core/problem.h"
#include "core/size.h"
#include "core/workspace.h"
#include "lig.h"

typedef struct lig_fwd_ctx {
    const lig_kernel_set *ks;
    int64_t G, D;
    int64_t block;           /* keys per block */
    int64_t rows;            /* query rows per stripe, at most (the plan's choice, see lig_fwd_rows_for) */
    lig_dtype dtype;         /* q and k (and w, except in the quantized forward) */
    int64_t q_head, q_dim;   /* element strides */
    int64_t w_head, k_dim;
    /* w's own dtype (the query's, or FLOAT32: the quantized forward, the dense lse), the
     * quantized forward's scales' dtypes and sq's head stride (contract 2.4) */
    lig_dtype w_dtype;
    bool has_sq;             /* false: every sq is 1 */
    lig_dtype sq_dtype, sk_dtype;
    int64_t sq_head;
    int64_t sq_dim, sk_dim;  /* MXFP4: the block scales' strides along their blocks (words) */
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
    /* Loads the G query heads of rows <= c->rows query rows (q[r] points at row r's first head,
     * w[r] at its weight, sq[r] at its first query scale; sq is NULL unless c->has_sq). */
    void (*begin_rows)(const lig_fwd_ctx *c, char *scratch, int64_t rows, const char *const *q, const char *const *w,
                       const char *const *sq);
    /* score[r * c->block + i] = sum_h w_rh * ReLU(q_rh . k_i) for the rows of the last
     * begin_rows and the n <= c->block key rows key[i]; in the quantized forward
     * sum_h w_rh * ReLU(sq_rh * sk_i * (q_rh . k_i)) with key_scale[i] pointing at sk_i
     * (key_scale is NULL otherwise). */
    void (*score_block)(const lig_fwd_ctx *c, char *scratch, int64_t rows, int64_t n, const char *const *key,
                        const char *const *key_scale, float *score);
} lig_fwd_engine;

extern const lig_fwd_engine lig_fwd_engine_f32;
/* bf16 inputs on a set with bf16 kernels (fwd_engine_bf16.c). */
extern const lig_fwd_engine lig_fwd_engine_bf16;
/* FLOAT8_E4M3FN / INT8 inputs on any set: converted exactly to fp32 once per stripe (queries) and
 * per block (keys), the set's fp32 GEMM, portable scores (fwd_engine_quant_portable.c). */
extern const lig_fwd_engine lig_fwd_engine_quant_portable;
/* INT8 inputs on the set's int8 GEMM, exact int32 dot products (fwd_engine_i8.c). */
extern const lig_fwd_engine lig_fwd_engine_i8;
/* FLOAT8_E4M3FN inputs on a set with bf16 units, converted once into its bf16 GEMM (fwd_engine_fp8.c). */
extern const lig_fwd_engine lig_fwd_engine_fp8;
/* FLOAT4_E2M1X2 (MXFP4) inputs on any set: exact integer block dots, one scaling a block
 * (fwd_engine_mxfp4.c). */
extern const lig_fwd_engine lig_fwd_engine_mxfp4;
/* The quantized forward's engine for q/k of `dtype` with D values per head on set ks, by what the
 * set states: INT8 the int8 engine while D <= its int8 GEMM's max_k, FP8 the FP8 engine when the
 * set has bf16 units, MXFP4 the MXFP4 engine; otherwise the portable engine. */
const lig_fwd_engine *lig_fwd_quant_engine_for(const lig_kernel_set *ks, lig_dtype dtype, int64_t D);

/* The engine for float inputs (fp32, fp16, bf16) whose stripes take `rows` query rows of G heads:
 * bf16 inputs go to the set's bf16 kernels when it has them and a stripe's columns (rows x heads)
 * are wide enough; everything else is fp32. */
static inline const lig_fwd_engine *lig_fwd_float_engine_for(const lig_kernel_set *ks, lig_dtype dtype, int64_t rows,
                                                             int64_t G) {
    const bool bf16 = dtype == LIG_BFLOAT16 && ks->bf16 != NULL &&
                      lig_size_mul((uint64_t)rows, (uint64_t)G) >= (uint64_t)ks->bf16->min_group;
    return bf16 ? &lig_fwd_engine_bf16 : &lig_fwd_engine_f32;
}

/* Whether engine e keeps per-thread tile state (the set's bf16 GEMM has a thread set-up: AMX), so
 * that it must run on lig's threads only. */
static inline bool lig_fwd_engine_own_threads(const lig_fwd_engine *e, const lig_kernel_set *ks) {
    return e->thread_begin != NULL && ks->bf16 != NULL && ks->bf16->gemm.thread_begin != NULL;
}

enum { LIG_FWD_MAX_ROWS = 8 };
/* Bytes of top-k scratch per thread beyond which a stripe takes fewer rows (one row's own is never
 * cut): 2 MiB is about 12 rows at K = 2048. */
#define LIG_FWD_TOPK_BUDGET ((uint64_t)2 << 20)

/* Query rows per stripe for a group of G heads: about 32 columns (rows x heads), at most
 * LIG_FWD_MAX_ROWS. */
static inline int64_t lig_fwd_rows_for(int64_t G) {
    const int64_t r = G > 0 ? 32 / G : 1;
    return r < 1 ? 1 : r > LIG_FWD_MAX_ROWS ? LIG_FWD_MAX_ROWS : r;
}

/* Query rows per stripe of the quantized forward's engines: about 128 columns, at most
 * LIG_FWD_MAX_ROWS. Each key block is converted (FP8) or read (INT8) once for all the stripe's rows,
 * so wider stripes pay less of it per row: with 64 heads, 2 rows measured best on Zen 5 of 1, 2,
 * 3, 4 and 8 (the FP8 engine 10-20% faster than 1 row; INT8 within the noise). */
static inline int64_t lig_fwd_quant_rows_for(int64_t G) {
    const int64_t r = G > 0 ? 128 / G : 1;
    return r < 1 ? 1 : r > LIG_FWD_MAX_ROWS ? LIG_FWD_MAX_ROWS : r;
}


/* The scratch of the engines that feed the set's fp32 GEMM (fwd_engine_f32.c, fwd_engine_quant_portable.c):
 * the stripe's query heads transposed, their weights (and query scales), the block's key rows (and
 * key scales), the block's per-head scores; `acc_bytes` more for an engine's own accumulator. */
typedef struct lig_fwd_f32_layout {
    uint64_t qt;  /* float[D][rows*G]: the stripe's query heads in fp32, transposed */
    uint64_t w;   /* float[rows*G] */
    uint64_t sq;  /* float[rows*G] (with_scales and has_sq) */
    uint64_t kp;  /* float[block*D]: the block's key rows in fp32 */
    uint64_t sk;  /* float[block] (with_scales) */
    uint64_t a;   /* float[block*rows*G]: per-head scores of the block, S^T */
    uint64_t acc; /* acc_bytes */
    uint64_t total;
} lig_fwd_f32_layout;

static inline lig_fwd_f32_layout lig_fwd_f32_layout_for(const lig_fwd_ctx *c, bool with_scales, uint64_t acc_bytes) {
    lig_fwd_f32_layout l;
    uint64_t at = 0, f = sizeof(float);
    const uint64_t cols = lig_size_mul((uint64_t)c->rows, (uint64_t)c->G), D = (uint64_t)c->D, nb = (uint64_t)c->block;
    l.qt = lig_ws_take(&at, lig_size_mul3(f, D, cols));
    l.w = lig_ws_take(&at, lig_size_mul(f, cols));
    l.sq = lig_ws_take(&at, with_scales && c->has_sq ? lig_size_mul(f, cols) : 0);
    l.kp = lig_ws_take(&at, lig_size_mul3(f, nb, D));
    l.sk = lig_ws_take(&at, with_scales ? lig_size_mul(f, nb) : 0);
    l.a = lig_ws_take(&at, lig_size_mul3(f, cols, nb));
    l.acc = lig_ws_take(&at, acc_bytes);
    l.total = at;
    return l;
}

/* The scores I of one row, the unit x, at n of its keys (entry slot[i] of x's batch and key head, or
 * x->lo + i when slot is NULL) with engine e on a stripe of that one row: the training operators'
 * I (the KL losses' dy sources), one block of keys at a time through key[] and score[] (a block
 * each, the caller's scratch); with no head or D every score is 0 (an empty sum). */
static inline void lig_fwd_score_unit(const lig_fwd_engine *e, const lig_fwd_ctx *c, char *scratch, const char **key,
                                      float *score, const lig_problem *pr, const lig_view4 *q, const lig_view4 *w,
                                      const lig_view4 *k, const lig_unit *x, const int64_t *slot, int64_t n,
                                      float *value) {
    if (pr->G == 0 || pr->D == 0) {
        memset(value, 0, sizeof(float) * (size_t)n);
        return;
    }
    const int64_t h0 = x->g * pr->G;
    const char *qrow = lig_q_row_ptr(q, pr, x->b, x->t, h0), *wrow = lig_q_row_ptr(w, pr, x->b, x->t, h0);
    e->begin_rows(c, scratch, 1, &qrow, &wrow, NULL); /* unquantized: no scales */
    for (int64_t i0 = 0; i0 < n; i0 += c->block) {
        const int64_t nb = n - i0 < c->block ? n - i0 : c->block;
        for (int64_t i = 0; i < nb; i++)
            key[i] = lig_k_row_ptr(k, pr, x->b, slot ? slot[i0 + i] : x->lo + i0 + i, x->g);
        e->score_block(c, scratch, 1, nb, key, NULL, score);
        memcpy(value + i0, score, sizeof(float) * (size_t)nb);
    }
}

#endif

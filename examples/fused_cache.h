/* The decode demo's key cache (decode_indexer.c): DeepGEMM's fused paged layout, as an inference
 * engine keeps the indexer's keys, with a block allocator and DeepSeek's act_quant quantizer.
 *
 * The pool is uint8 [num_blocks, block_kv, 1, D + 4]: each block holds its block_kv * D code bytes
 * (token-major, D per token), then its block_kv fp32 dequantization scales. Token position p of a
 * sequence lives in block table[p / block_kv], row p % block_kv (vLLM's slot = block * block_kv +
 * row). lig reads the pool in place through two strided views (fused_cache_code_view,
 * fused_cache_scale_view); nothing is copied.
 *
 * Codes are FLOAT8_E4M3FN (DeepSeek-V3.2 / DeepGEMM) or INT8 (CANN's other mode); quantization is
 * per token (one scale over the D values), DeepSeek's act_quant with one block of D values:
 *   amax = max(max |x|, 1e-4), scale = amax / 448 (FP8) or amax / 127 (INT8),
 *   codes = x / scale, cast to e4m3 (lig_float_to_float8_e4m3fn: round to nearest even, saturating)
 *   or rounded to the nearest integer (ties to even) and clamped to [-127, 127]. */
#ifndef LIG_EXAMPLES_FUSED_CACHE_H
#define LIG_EXAMPLES_FUSED_CACHE_H

#include <lig.h>
#include <stdint.h>

/* One vector of n values quantized: codes (dtype LIG_FLOAT8_E4M3FN or LIG_INT8) and the returned
 * dequantization scale (x ~ code * scale). */
float act_quant(lig_dtype codes_dtype, const float *x, int64_t n, uint8_t *codes);

/* Blocks handed out in a shuffled order, as an engine's allocator does after some traffic, so that
 * a sequence's blocks are neither contiguous nor increasing and the table matters. */
typedef struct block_allocator {
    int32_t *free_blocks;
    int64_t num_blocks, taken;
} block_allocator;

/* `shuffle(i)` returns a value in [0, i] (the demo's seeded generator). */
void block_allocator_init(block_allocator *a, int64_t num_blocks, int64_t (*shuffle)(int64_t i));
/* The next free block; exits when the pool is exhausted (the demo sizes it beforehand). */
int32_t block_allocator_take(block_allocator *a);
void block_allocator_free(block_allocator *a);

typedef struct fused_cache {
    lig_dtype codes_dtype;
    int64_t num_blocks, block_kv, D;
    uint8_t *pool; /* num_blocks * block_kv * (D + 4) bytes, 4-byte aligned */
} fused_cache;

/* D must be a multiple of 4 (so that the scales of every block are 4-byte aligned, as DeepGEMM's). */
void fused_cache_init(fused_cache *c, lig_dtype codes_dtype, int64_t num_blocks, int64_t block_kv, int64_t D);
void fused_cache_free(fused_cache *c);
/* act_quant of one token's D values into (block, row). */
void fused_cache_write(fused_cache *c, int32_t block, int64_t row, const float *x);
/* The codes as lig's paged key cache: [num_blocks, block_kv, 1, D] with element strides
 * [block_kv * (D + 4), D, D, 1]. */
lig_tensor *fused_cache_code_view(const fused_cache *c);
/* The scales: FLOAT32 [num_blocks, block_kv, 1] at byte offset block_kv * D of the pool, with
 * float strides [block_kv * (D + 4) / 4, 1, 1]. */
lig_tensor *fused_cache_scale_view(const fused_cache *c);

#endif

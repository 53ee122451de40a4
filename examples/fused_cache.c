/* The decode demo's fused paged key cache (fused_cache.h): allocator, act_quant, writer, views. */
#include "fused_cache.h"

#include "demo_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

float act_quant(lig_dtype codes_dtype, const float *x, int64_t n, uint8_t *codes) {
    float amax = 0.0f;
    for (int64_t i = 0; i < n; i++) amax = fmaxf(amax, fabsf(x[i]));
    amax = fmaxf(amax, 1e-4f); /* DeepSeek's clamp: an all-zero vector gets a usable scale */
    const float scale = amax / (codes_dtype == LIG_INT8 ? 127.0f : 448.0f);
    for (int64_t i = 0; i < n; i++) {
        const float y = x[i] / scale;
        if (codes_dtype == LIG_INT8) {
            const float r = fminf(fmaxf(nearbyintf(y), -127.0f), 127.0f);
            codes[i] = (uint8_t)(int8_t)r;
        } else {
            codes[i] = lig_float_to_float8_e4m3fn(y);
        }
    }
    return scale;
}

void block_allocator_init(block_allocator *a, int64_t num_blocks, int64_t (*shuffle)(int64_t i)) {
    a->num_blocks = num_blocks;
    a->taken = 0;
    a->free_blocks = xcalloc((size_t)num_blocks, sizeof(int32_t));
    for (int64_t i = 0; i < num_blocks; i++) a->free_blocks[i] = (int32_t)i;
    for (int64_t i = num_blocks - 1; i > 0; i--) { /* Fisher-Yates */
        const int64_t j = shuffle(i);
        const int32_t t = a->free_blocks[i];
        a->free_blocks[i] = a->free_blocks[j];
        a->free_blocks[j] = t;
    }
}

int32_t block_allocator_take(block_allocator *a) {
    if (a->taken >= a->num_blocks) {
        fprintf(stderr, "block allocator: all %lld blocks are taken\n", (long long)a->num_blocks);
        exit(1);
    }
    return a->free_blocks[a->taken++];
}

void block_allocator_free(block_allocator *a) { free(a->free_blocks); }

void fused_cache_init(fused_cache *c, lig_dtype codes_dtype, int64_t num_blocks, int64_t block_kv, int64_t D) {
    if (D % 4 != 0) {
        fprintf(stderr, "fused cache: D must be a multiple of 4 (aligned fp32 scales), got %lld\n", (long long)D);
        exit(2);
    }
    *c = (fused_cache){.codes_dtype = codes_dtype, .num_blocks = num_blocks, .block_kv = block_kv, .D = D};
    /* calloc's memory is aligned for any type; every block starts at a multiple of 4 bytes */
    c->pool = xcalloc((size_t)(num_blocks * block_kv * (D + 4)), 1);
}

void fused_cache_free(fused_cache *c) { free(c->pool); }

void fused_cache_write(fused_cache *c, int32_t block, int64_t row, const float *x) {
    uint8_t *base = c->pool + (int64_t)block * c->block_kv * (c->D + 4);
    const float scale = act_quant(c->codes_dtype, x, c->D, base + row * c->D);
    float *scales = (float *)(void *)(base + c->block_kv * c->D);
    scales[row] = scale;
}

lig_tensor *fused_cache_code_view(const fused_cache *c) {
    const int64_t shape[4] = {c->num_blocks, c->block_kv, 1, c->D};
    const int64_t strides[4] = {c->block_kv * (c->D + 4), c->D, c->D, 1};
    return lig_create_tensor(c->pool, c->codes_dtype, 4, shape, strides);
}

lig_tensor *fused_cache_scale_view(const fused_cache *c) {
    const int64_t shape[3] = {c->num_blocks, c->block_kv, 1};
    const int64_t strides[3] = {c->block_kv * (c->D + 4) / 4, 1, 1};
    return lig_create_tensor(c->pool + c->block_kv * c->D, LIG_FLOAT32, 3, shape, strides);
}

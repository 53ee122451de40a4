/* The MXFP4 quantizer (lig_mxfp4_quantize) and the writer of DeepGEMM's fused FP4 paged key cache
 * (lig_mxfp4_cache_write): host-side preparation of the data an engine hands the indexer, exactly
 * as the engines compute it (docs/contract.md section 5, "MXFP4"; the recipes and their sources
 * are in docs/inference.md). Every argument is checked before the first byte is written. */
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "core/dtype_convert.h"
#include "core/error.h"
#include "core/fp4_bits.h"
#include "core/tensor.h"

enum { MXFP4_BLOCK = 32 };

/* A row of `cols` values has ceil(cols / 32) blocks; their scale bytes are padded to whole int32
 * words, as DeepGEMM's packed ue8m0 layout (and its fused cache's 4 bytes per token) holds them. */
static int64_t scale_bytes_of(int64_t cols) {
    const int64_t blocks = cols / MXFP4_BLOCK + (cols % MXFP4_BLOCK != 0);
    return (blocks + 3) / 4 * 4;
}

static float load_x(const lig_tensor *x, int64_t r, int64_t c) {
    const char *p = (const char *)x->data + (size_t)(r * x->strides[0] + c * x->strides[1]) * lig_dtype_size(x->dtype);
    return lig_load_float(x->dtype, p);
}

/* The scale byte of one block of values v[0..n), by the recipe; 255 (NaN) when the block holds a
 * NaN or an infinity, whose codes are then all 0 (the whole block decodes to NaN). */
static uint8_t block_scale(const float *v, int64_t n, lig_mxfp4_recipe recipe) {
    float amax = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        const uint32_t a = lig_half_f32_bits(v[i]) & 0x7fffffffu;
        if (a >= 0x7f800000u) return 255u;
        const float m = lig_half_bits_f32(a);
        if (m > amax) amax = m;
    }
    if (recipe == LIG_MXFP4_RECIPE_ENGINE) {
        /* the engines' floor 6 * 2^-126 keeps the scale at or above 2^-126; the product with the
         * fp32 constant 1/6 (not a quotient) is theirs */
        const float floor_ = 6.0f * 0x1p-126f;
        return lig_e8m0_ceil_of((amax > floor_ ? amax : floor_) * (1.0f / 6.0f));
    }
    const float floor_ = 1e-4f; /* DeepGEMM's helper: amax.clamp_min(1e-4) / 6.0, both in fp32 */
    return lig_e8m0_ceil_of((amax > floor_ ? amax : floor_) / 6.0f);
}

static uint8_t encode(float y, lig_mxfp4_recipe recipe) {
    return recipe == LIG_MXFP4_RECIPE_ENGINE ? lig_f32_to_fp4e2m1(y) : lig_f32_to_fp4e2m1_ties_to_zero(y);
}

/* Quantizes row r of x into `codes` (cols / 2 bytes, byte j at codes + j * code_step) and
 * `scales` (scale_bytes_of(cols) bytes, byte j at scales + j * scale_step). */
static void quantize_row(const lig_tensor *x, int64_t r, int64_t cols, lig_mxfp4_recipe recipe, uint8_t *codes,
                         int64_t code_step, uint8_t *scales, int64_t scale_step) {
    const int64_t bytes = scale_bytes_of(cols);
    for (int64_t b = 0; b * MXFP4_BLOCK < cols; b++) {
        float v[MXFP4_BLOCK];
        const int64_t c0 = b * MXFP4_BLOCK, n = cols - c0 < MXFP4_BLOCK ? cols - c0 : MXFP4_BLOCK;
        for (int64_t i = 0; i < n; i++) v[i] = load_x(x, r, c0 + i);
        const uint8_t e = block_scale(v, n, recipe);
        scales[b * scale_step] = e;
        /* y = v / 2^(e-127): a product with an exact power of two, rounded once as the engines' */
        const float inv = e == 255u ? 0.0f : lig_e8m0_inverse(e);
        for (int64_t i = 0; i < n; i += 2) {
            const uint8_t lo = e == 255u ? 0 : encode(v[i] * inv, recipe);
            const uint8_t hi = e == 255u ? 0 : encode(v[i + 1] * inv, recipe);
            codes[(c0 + i) / 2 * code_step] = (uint8_t)(lo | (hi << 4)); /* element 2j in the low nibble */
        }
    }
    /* the padding scales of the last word: 127 (2^0), as DeepGEMM's helper writes them */
    for (int64_t b = (cols + MXFP4_BLOCK - 1) / MXFP4_BLOCK; b < bytes; b++) scales[b * scale_step] = 127u;
}

static lig_status check_host(const lig_tensor *t, const char *name) {
    if (t->device != LIG_DEVICE_HOST)
        return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected a host tensor, got a tensor on %s device %d", name,
                        lig_device_name(t->device), t->device_index);
    return LIG_SUCCESS;
}

static lig_status check_shape(const lig_tensor *t, const char *name, int64_t ndim, const int64_t *want,
                              const char *form) {
    bool ok = t->ndim == ndim;
    for (int64_t i = 0; ok && i < ndim; i++) ok = t->shape[i] == want[i];
    if (ok) return LIG_SUCCESS;
    char exp[LIG_SHAPE_BUF], got[LIG_SHAPE_BUF];
    return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected shape %s %s, got %s", name, form,
                    lig_format_shape(exp, sizeof exp, ndim, want), lig_format_shape(got, sizeof got, t->ndim, t->shape));
}

static bool overlaps(const lig_tensor *a, const lig_tensor *b) {
    uintptr_t alo, ahi, blo, bhi;
    lig_tensor_byte_range(a, &alo, &ahi);
    lig_tensor_byte_range(b, &blo, &bhi);
    return alo < ahi && blo < bhi && alo < bhi && blo < ahi;
}

static lig_status check_input_rows(const lig_tensor *x, const char *name, lig_mxfp4_recipe recipe) {
    if (recipe != LIG_MXFP4_RECIPE_ENGINE && recipe != LIG_MXFP4_RECIPE_DEEPGEMM_TEST)
        return lig_fail(LIG_ERR_PARAM_INVALID, "recipe: expected LIG_MXFP4_RECIPE_ENGINE (0) or "
                        "LIG_MXFP4_RECIPE_DEEPGEMM_TEST (1), got %d", (int)recipe);
    lig_status st = check_host(x, name);
    if (st != LIG_SUCCESS) return st;
    if (x->dtype != LIG_FLOAT32 && x->dtype != LIG_FLOAT16 && x->dtype != LIG_BFLOAT16)
        return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected dtype FLOAT32, FLOAT16 or BFLOAT16, got %s", name,
                        lig_dtype_name(x->dtype));
    if (x->ndim != 2 || x->shape[1] % 2 != 0) {
        char got[LIG_SHAPE_BUF];
        return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected shape [rows, cols] with cols even (two codes a byte), "
                        "got %s", name, lig_format_shape(got, sizeof got, x->ndim, x->shape));
    }
    return LIG_SUCCESS;
}

lig_status lig_mxfp4_quantize(const lig_tensor *x, lig_mxfp4_recipe recipe, const lig_tensor *codes,
                              const lig_tensor *scales) {
    if (!x) return lig_fail(LIG_ERR_PARAM_NULLPTR, "x: expected a [rows, cols] tensor, got NULL");
    if (!codes) return lig_fail(LIG_ERR_PARAM_NULLPTR, "codes: expected a UINT8 or INT8 [rows, cols/2] tensor, got NULL");
    if (!scales) return lig_fail(LIG_ERR_PARAM_NULLPTR, "scales: expected a UINT8 or INT32 tensor, got NULL");
    lig_status st = check_input_rows(x, "x", recipe);
    if (st == LIG_SUCCESS) st = check_host(codes, "codes");
    if (st == LIG_SUCCESS) st = check_host(scales, "scales");
    if (st != LIG_SUCCESS) return st;
    const int64_t rows = x->shape[0], cols = x->shape[1], bytes = scale_bytes_of(cols);
    if (codes->dtype != LIG_UINT8 && codes->dtype != LIG_INT8)
        return lig_fail(LIG_ERR_PARAM_INVALID, "codes: expected dtype UINT8 or INT8, got %s", lig_dtype_name(codes->dtype));
    const int64_t code_shape[2] = {rows, cols / 2};
    if ((st = check_shape(codes, "codes", 2, code_shape, "[rows, cols/2]")) != LIG_SUCCESS) return st;
    const bool words = scales->dtype == LIG_INT32;
    if (!words && scales->dtype != LIG_UINT8)
        return lig_fail(LIG_ERR_PARAM_INVALID, "scales: expected dtype UINT8 or INT32 (four packed scale bytes), got %s",
                        lig_dtype_name(scales->dtype));
    const int64_t scale_shape[2] = {rows, words ? bytes / 4 : bytes};
    if ((st = check_shape(scales, "scales", 2, scale_shape,
                          words ? "[rows, ceil(ceil(cols/32)/4)]" : "[rows, 4*ceil(ceil(cols/32)/4)]")) != LIG_SUCCESS)
        return st;
    if (words && scales->strides[1] != 1 && scales->shape[1] > 1)
        return lig_fail(LIG_ERR_PARAM_INVALID, "scales: expected INT32 words contiguous within a row (stride 1), got "
                        "stride %lld", (long long)scales->strides[1]);
    const lig_tensor *outs[2] = {codes, scales};
    const char *names[2] = {"codes", "scales"};
    for (int i = 0; i < 2; i++) {
        if (overlaps(outs[i], x))
            return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected memory apart from x, got an overlap", names[i]);
        if (lig_tensor_self_overlaps(outs[i]))
            return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected distinct elements, got a view that repeats some",
                            names[i]);
    }
    if (overlaps(codes, scales))
        return lig_fail(LIG_ERR_PARAM_INVALID, "scales: expected memory apart from codes, got an overlap");
    /* INT32 words: a row's scale bytes are made in `word_bytes`, then word j takes bytes 4j..4j+3 as its
     * bits 0-7, 8-15, 16-23, 24-31 (a value, so the same on every host; DeepGEMM's little-endian view) */
    uint8_t *word_bytes = words ? malloc((size_t)bytes) : NULL;
    if (words && !word_bytes)
        return lig_fail(LIG_ERR_RUNTIME, "scales: expected memory for %lld bytes, got none", (long long)bytes);
    for (int64_t r = 0; r < rows; r++) {
        uint8_t *c = (uint8_t *)codes->data + r * codes->strides[0];
        if (!words) {
            quantize_row(x, r, cols, recipe, c, codes->strides[1], (uint8_t *)scales->data + r * scales->strides[0],
                         scales->strides[1]);
            continue;
        }
        quantize_row(x, r, cols, recipe, c, codes->strides[1], word_bytes, 1);
        int32_t *w = (int32_t *)scales->data + r * scales->strides[0];
        for (int64_t j = 0; j < bytes / 4; j++) {
            const uint32_t u = (uint32_t)word_bytes[4 * j] | (uint32_t)word_bytes[4 * j + 1] << 8 |
                               (uint32_t)word_bytes[4 * j + 2] << 16 | (uint32_t)word_bytes[4 * j + 3] << 24;
            memcpy(w + j, &u, sizeof u);
        }
    }
    free(word_bytes);
    return LIG_SUCCESS;
}

static int compare_i64(const void *a, const void *b) {
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

lig_status lig_mxfp4_cache_write(const lig_tensor *k, const lig_tensor *slot_mapping, lig_mxfp4_recipe recipe,
                                 const lig_tensor *kv_cache) {
    if (!k) return lig_fail(LIG_ERR_PARAM_NULLPTR, "k: expected a [T, D] tensor, got NULL");
    if (!slot_mapping) return lig_fail(LIG_ERR_PARAM_NULLPTR, "slot_mapping: expected an INT32 or INT64 [T] tensor, got NULL");
    if (!kv_cache)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "kv_cache: expected a UINT8 [num_blocks, block_size, 1, D/2+4] tensor, got NULL");
    lig_status st = check_input_rows(k, "k", recipe);
    if (st == LIG_SUCCESS) st = check_host(slot_mapping, "slot_mapping");
    if (st == LIG_SUCCESS) st = check_host(kv_cache, "kv_cache");
    if (st != LIG_SUCCESS) return st;
    const int64_t T = k->shape[0], D = k->shape[1], row = D / 2 + scale_bytes_of(D);
    if (!lig_dtype_is_index(slot_mapping->dtype))
        return lig_fail(LIG_ERR_PARAM_INVALID, "slot_mapping: expected dtype INT32 or INT64, got %s",
                        lig_dtype_name(slot_mapping->dtype));
    const int64_t slot_shape[1] = {T};
    if ((st = check_shape(slot_mapping, "slot_mapping", 1, slot_shape, "[T]")) != LIG_SUCCESS) return st;
    if (kv_cache->dtype != LIG_UINT8)
        return lig_fail(LIG_ERR_PARAM_INVALID, "kv_cache: expected dtype UINT8, got %s", lig_dtype_name(kv_cache->dtype));
    const int64_t nd = kv_cache->ndim;
    const bool shaped = (nd == 3 || nd == 4) && kv_cache->shape[nd - 1] == row && (nd == 3 || kv_cache->shape[2] == 1);
    if (!shaped) {
        char got[LIG_SHAPE_BUF];
        return lig_fail(LIG_ERR_PARAM_INVALID, "kv_cache: expected shape [num_blocks, block_size, 1, %lld] or "
                        "[num_blocks, block_size, %lld] (D/2 code bytes and %lld scale bytes a token), got %s",
                        (long long)row, (long long)row, (long long)(row - D / 2),
                        lig_format_shape(got, sizeof got, nd, kv_cache->shape));
    }
    const int64_t num_blocks = kv_cache->shape[0], block_size = kv_cache->shape[1];
    /* a block's bytes are one run: its codes, token-major, then its scales (DeepGEMM's layout) */
    if (num_blocks * block_size > 0 &&
        (kv_cache->strides[nd - 1] != 1 || (block_size > 1 && kv_cache->strides[1] != row) ||
         (num_blocks > 1 && kv_cache->strides[0] < block_size * row)))
        return lig_fail(LIG_ERR_PARAM_INVALID, "kv_cache: expected each block's %lld bytes contiguous (strides [>= %lld, "
                        "%lld, ..., 1]), got strides [%lld, %lld, ..., %lld]", (long long)(block_size * row),
                        (long long)(block_size * row), (long long)row, (long long)kv_cache->strides[0],
                        (long long)kv_cache->strides[1], (long long)kv_cache->strides[nd - 1]);
    if (overlaps(kv_cache, k) || overlaps(kv_cache, slot_mapping))
        return lig_fail(LIG_ERR_PARAM_INVALID, "kv_cache: expected memory apart from %s, got an overlap",
                        overlaps(kv_cache, k) ? "k" : "slot_mapping");
    /* every slot checked, and no slot given twice (which of two writers wins would be a race in an
     * engine's kernel), before anything is written */
    int64_t *sorted = malloc(sizeof(int64_t) * (size_t)(T > 0 ? T : 1));
    if (!sorted) return lig_fail(LIG_ERR_RUNTIME, "slot_mapping: expected memory for %lld slots, got none", (long long)T);
    int64_t n = 0;
    for (int64_t t = 0; t < T; t++) {
        const int64_t s = lig_tensor_read_int_1d(slot_mapping, t);
        if (s >= num_blocks * block_size) {
            free(sorted);
            return lig_fail(LIG_ERR_PARAM_INVALID, "slot_mapping: expected slots < num_blocks * block_size = %lld (or < 0 "
                            "to skip) at [%lld], got %lld", (long long)(num_blocks * block_size), (long long)t, (long long)s);
        }
        if (s >= 0) sorted[n++] = s;
    }
    qsort(sorted, (size_t)n, sizeof(int64_t), compare_i64);
    for (int64_t i = 1; i < n; i++)
        if (sorted[i] == sorted[i - 1]) {
            const long long dup = (long long)sorted[i];
            free(sorted);
            return lig_fail(LIG_ERR_PARAM_INVALID, "slot_mapping: expected each slot at most once, got slot %lld twice", dup);
        }
    free(sorted);
    for (int64_t t = 0; t < T; t++) {
        const int64_t s = lig_tensor_read_int_1d(slot_mapping, t);
        if (s < 0) continue;
        uint8_t *block = (uint8_t *)kv_cache->data + (s / block_size) * kv_cache->strides[0];
        const int64_t off = s % block_size;
        quantize_row(k, t, D, recipe, block + off * (D / 2), 1, block + block_size * (D / 2) + off * (row - D / 2), 1);
    }
    return LIG_SUCCESS;
}

/* Loads and stores of one tensor element; the 16-bit float conversions (lig_bf16_to_f32,
 * lig_f32_to_bf16, lig_f16_to_f32, lig_f32_to_f16) are core/half_bits.h's, the 8-bit float ones
 * (lig_fp8e4m3_to_f32, lig_f32_to_fp8e4m3) core/fp8_bits.h's. */
#ifndef LIG_CORE_DTYPE_CONVERT_H
#define LIG_CORE_DTYPE_CONVERT_H

#include <stdint.h>
#include <string.h>

#include "core/fp8_bits.h"
#include "core/half_bits.h"
#include "lig.h"

/* One element of a float tensor (FLOAT32, FLOAT16, BFLOAT16 or FLOAT8_E4M3FN) or of an 8-bit integer
 * tensor (INT8, UINT8) as fp32: every value of these dtypes is exact in fp32. */
static inline float lig_load_float(lig_dtype dtype, const void *p) {
    if (dtype == LIG_FLOAT32) {
        float f;
        memcpy(&f, p, sizeof f);
        return f;
    }
    if (dtype == LIG_FLOAT8_E4M3FN || dtype == LIG_INT8 || dtype == LIG_UINT8) {
        uint8_t c;
        memcpy(&c, p, 1);
        return dtype == LIG_FLOAT8_E4M3FN ? lig_fp8e4m3_to_f32(c) : dtype == LIG_INT8 ? (float)(int8_t)c : (float)c;
    }
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return dtype == LIG_BFLOAT16 ? lig_bf16_to_f32(h) : lig_f16_to_f32(h);
}

static inline void lig_store_float(lig_dtype dtype, void *p, float f) {
    if (dtype == LIG_FLOAT32) {
        memcpy(p, &f, sizeof f);
        return;
    }
    uint16_t h = dtype == LIG_BFLOAT16 ? lig_f32_to_bf16(f) : lig_f32_to_f16(f);
    memcpy(p, &h, sizeof h);
}

/* One element of an integer tensor (INT32 or INT64). */
static inline int64_t lig_load_int(lig_dtype dtype, const void *p) {
    if (dtype == LIG_INT32) {
        int32_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    int64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

#endif

/* Scalar conversions between fp32 and the 16-bit float formats: round to nearest even,
 * NaN stays NaN (quieted, sign kept), Inf stays Inf, subnormals are exact both ways. */
#ifndef LIG_CORE_DTYPE_CONVERT_H
#define LIG_CORE_DTYPE_CONVERT_H

#include <stdint.h>
#include <string.h>

#include "lig.h"

float lig_bf16_to_f32(uint16_t h);
uint16_t lig_f32_to_bf16(float f);
float lig_f16_to_f32(uint16_t h);
uint16_t lig_f32_to_f16(float f);

/* One element of a float tensor (FLOAT32, FLOAT16 or BFLOAT16) as fp32. */
static inline float lig_load_float(lig_dtype dtype, const void *p) {
    if (dtype == LIG_FLOAT32) {
        float f;
        memcpy(&f, p, sizeof f);
        return f;
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

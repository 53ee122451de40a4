/* Portable row conversions, used for every stride and as the fallback ISA. */
#include <string.h>

#include <math.h>

#include "core/dtype_convert.h"
#include "backends/cpu/kernels/scalar/scalar.h"

void lig_load_row__scalar(lig_dtype dtype, const void *src, int64_t stride, int64_t n, float *dst) {
    const char *p = src;
    const int64_t step = stride * (int64_t)(dtype == LIG_FLOAT32 ? 4 : 2);
    for (int64_t i = 0; i < n; i++, p += step) dst[i] = lig_load_float(dtype, p);
}

void lig_store_row__scalar(const float *src, int64_t n, lig_dtype dtype, void *dst, int64_t stride) {
    char *p = dst;
    const int64_t step = stride * (int64_t)(dtype == LIG_FLOAT32 ? 4 : 2);
    for (int64_t i = 0; i < n; i++, p += step) lig_store_float(dtype, p, src[i]);
}

void lig_axpy_row__scalar(float *dst, float a, const float *x, int64_t n) {
    if (a == 1.0f) { /* the same value as fmaf, without a libm call where FMA is not an instruction */
        for (int64_t i = 0; i < n; i++) dst[i] += x[i];
        return;
    }
    for (int64_t i = 0; i < n; i++) dst[i] = fmaf(a, x[i], dst[i]);
}

bool lig_load_row_plain(lig_dtype dtype, const void *src, int64_t stride, int64_t n, float *dst) {
    if (stride != 1) lig_load_row__scalar(dtype, src, stride, n, dst);
    else if (dtype == LIG_FLOAT32) memcpy(dst, src, (size_t)n * sizeof(float));
    else return false;
    return true;
}

bool lig_store_row_plain(const float *src, int64_t n, lig_dtype dtype, void *dst, int64_t stride) {
    if (stride != 1) lig_store_row__scalar(src, n, dtype, dst, stride);
    else if (dtype == LIG_FLOAT32) memcpy(dst, src, (size_t)n * sizeof(float));
    else return false;
    return true;
}

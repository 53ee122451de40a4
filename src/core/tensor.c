#include "core/tensor.h"

#include <string.h>

#include "core/dtype_convert.h"

size_t lig_dtype_size(lig_dtype dtype) {
    switch (dtype) {
    case LIG_FLOAT32: return 4;
    case LIG_FLOAT16: return 2;
    case LIG_BFLOAT16: return 2;
    case LIG_INT32: return 4;
    case LIG_INT64: return 8;
    case LIG_FLOAT8_E4M3FN: return 1;
    case LIG_INT8: return 1;
    case LIG_UINT8: return 1;
    case LIG_FLOAT4_E2M1X2: return 1; /* one byte holds two values: shapes count bytes */
    }
    return 0;
}

const char *lig_dtype_name(lig_dtype dtype) {
    switch (dtype) {
    case LIG_FLOAT32: return "FLOAT32";
    case LIG_FLOAT16: return "FLOAT16";
    case LIG_BFLOAT16: return "BFLOAT16";
    case LIG_INT32: return "INT32";
    case LIG_INT64: return "INT64";
    case LIG_FLOAT8_E4M3FN: return "FLOAT8_E4M3FN";
    case LIG_INT8: return "INT8";
    case LIG_UINT8: return "UINT8";
    case LIG_FLOAT4_E2M1X2: return "FLOAT4_E2M1X2";
    }
    return "UNKNOWN";
}

bool lig_dtype_is_float(lig_dtype dtype) {
    return dtype == LIG_FLOAT32 || dtype == LIG_FLOAT16 || dtype == LIG_BFLOAT16;
}

bool lig_dtype_is_index(lig_dtype dtype) { return dtype == LIG_INT32 || dtype == LIG_INT64; }

int64_t lig_tensor_numel(const lig_tensor *t) {
    int64_t n = 1;
    /* innermost first, as lig_create_tensor bounded every partial product: outermost first, two
     * large extents could overflow before a zero one ([2^32, 2^32, 0]) */
    for (int64_t i = t->ndim - 1; i >= 0; i--) n *= t->shape[i];
    return n;
}

void lig_tensor_byte_range(const lig_tensor *t, uintptr_t *lo, uintptr_t *hi) {
    *lo = *hi = (uintptr_t)t->data;
    if (lig_tensor_numel(t) == 0) return;
    int64_t last = 0;
    for (int64_t i = 0; i < t->ndim; i++) last += (t->shape[i] - 1) * t->strides[i];
    *hi = *lo + (uintptr_t)((last + 1) * (int64_t)lig_dtype_size(t->dtype));
}

bool lig_tensor_self_overlaps(const lig_tensor *t) {
    /* Sort the dimensions of extent > 1 by stride; the view is injective when each stride
     * exceeds the largest offset reachable with the smaller-stride dimensions. */
    int64_t st[LIG_MAX_DIMS], ex[LIG_MAX_DIMS];
    int n = 0;
    if (lig_tensor_numel(t) == 0) return false;
    for (int64_t i = 0; i < t->ndim; i++) {
        if (t->shape[i] <= 1) continue;
        int k = n++;
        while (k > 0 && st[k - 1] > t->strides[i]) {
            st[k] = st[k - 1];
            ex[k] = ex[k - 1];
            k--;
        }
        st[k] = t->strides[i];
        ex[k] = t->shape[i];
    }
    int64_t reach = 0; /* largest offset spanned by the dimensions seen so far */
    for (int k = 0; k < n; k++) {
        if (st[k] <= reach) return true;
        reach += (ex[k] - 1) * st[k];
    }
    return false;
}

int64_t lig_tensor_read_int_1d(const lig_tensor *t, int64_t i) {
    return lig_load_int(t->dtype, (const char *)t->data + (size_t)(i * t->strides[0]) * lig_dtype_size(t->dtype));
}


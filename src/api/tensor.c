#include "api/tensor.h"

#include <stdlib.h>
#include <string.h>

#include "api/error.h"
#include "convert/dtype_convert.h"

size_t lig_dtype_size(lig_dtype dtype) {
    switch (dtype) {
    case LIG_FLOAT32: return 4;
    case LIG_FLOAT16: return 2;
    case LIG_BFLOAT16: return 2;
    case LIG_INT32: return 4;
    case LIG_INT64: return 8;
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
    }
    return "UNKNOWN";
}

bool lig_dtype_is_float(lig_dtype dtype) {
    return dtype == LIG_FLOAT32 || dtype == LIG_FLOAT16 || dtype == LIG_BFLOAT16;
}

bool lig_dtype_is_index(lig_dtype dtype) { return dtype == LIG_INT32 || dtype == LIG_INT64; }

int64_t lig_tensor_numel(const lig_tensor *t) {
    int64_t n = 1;
    for (int64_t i = 0; i < t->ndim; i++) n *= t->shape[i]; /* bounded at creation */
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

/* a * b into *out unless it exceeds INT64_MAX (both operands >= 0). */
static bool mul_nonneg(int64_t a, int64_t b, int64_t *out) {
    if (a != 0 && b > INT64_MAX / a) return false;
    *out = a * b;
    return true;
}

lig_tensor *lig_create_tensor(void *data, lig_dtype dtype, int64_t ndim, const int64_t *shape,
                              const int64_t *strides) {
    if (lig_dtype_size(dtype) == 0) {
        lig_fail(LIG_ERR_PARAM_INVALID, "dtype: expected one of FLOAT32, FLOAT16, BFLOAT16, INT32, INT64, got %d",
                 (int)dtype);
        return NULL;
    }
    if (ndim < 0 || ndim > LIG_MAX_DIMS) {
        lig_fail(LIG_ERR_PARAM_INVALID, "ndim: expected 0..%d, got %lld", LIG_MAX_DIMS, (long long)ndim);
        return NULL;
    }
    if (ndim > 0 && shape == NULL) {
        lig_fail(LIG_ERR_PARAM_NULLPTR, "shape: expected %lld extents, got NULL", (long long)ndim);
        return NULL;
    }
    lig_tensor *t = calloc(1, sizeof *t);
    if (!t) {
        lig_fail(LIG_ERR_RUNTIME, "lig_create_tensor: expected memory for a descriptor, got none");
        return NULL;
    }
    t->data = data;
    t->dtype = dtype;
    t->ndim = ndim;
    int64_t numel = 1;
    for (int64_t i = ndim - 1; i >= 0; i--) {
        if (shape[i] < 0) {
            lig_fail(LIG_ERR_PARAM_INVALID, "shape: expected extents >= 0, got %lld at dim %lld",
                     (long long)shape[i], (long long)i);
            goto bad;
        }
        t->shape[i] = shape[i];
        if (strides) {
            if (strides[i] < 0) {
                lig_fail(LIG_ERR_PARAM_INVALID, "strides: expected values >= 0, got %lld at dim %lld",
                         (long long)strides[i], (long long)i);
                goto bad;
            }
            t->strides[i] = strides[i];
        } else {
            t->strides[i] = numel; /* contiguous row-major: the extent of the inner dims */
        }
        if (!mul_nonneg(numel, shape[i], &numel)) {
            lig_fail(LIG_ERR_PARAM_INVALID, "shape: expected an element count below 2^63, got an overflow");
            goto bad;
        }
    }
    if (numel > 0) {
        /* The furthest element offset, in bytes, must be addressable. */
        int64_t last = 0, term;
        for (int64_t i = 0; i < ndim; i++) {
            if (!mul_nonneg(shape[i] - 1, t->strides[i], &term) || last > INT64_MAX - term) goto overflow;
            last += term;
        }
        if (last >= INT64_MAX / 8) goto overflow;
        if (data == NULL) {
            lig_fail(LIG_ERR_PARAM_NULLPTR, "data: expected a pointer for %lld elements, got NULL",
                     (long long)numel);
            goto bad;
        }
    }
    return t;
overflow:
    lig_fail(LIG_ERR_PARAM_INVALID, "strides: expected a byte span below 2^63, got an overflow");
bad:
    free(t);
    return NULL;
}

void lig_destroy_tensor(lig_tensor *tensor) { free(tensor); }

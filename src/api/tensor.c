/* lig_create_tensor(_on) / lig_destroy_tensor: descriptors of host or device memory, checked once here so
 * that every later layer can trust extents, strides and byte spans. */
#include <stdlib.h>

#include "core/error.h"
#include "core/tensor.h"

/* a * b into *out unless it exceeds INT64_MAX (both operands >= 0). */
static bool mul_nonneg(int64_t a, int64_t b, int64_t *out) {
    if (a != 0 && b > INT64_MAX / a) return false;
    *out = a * b;
    return true;
}

lig_tensor *lig_create_tensor(void *data, lig_dtype dtype, int64_t ndim, const int64_t *shape,
                              const int64_t *strides) {
    return lig_create_tensor_on(data, dtype, ndim, shape, strides, LIG_DEVICE_HOST, 0);
}

lig_tensor *lig_create_tensor_on(void *data, lig_dtype dtype, int64_t ndim, const int64_t *shape,
                                 const int64_t *strides, lig_device device, int device_index) {
    if (device != LIG_DEVICE_HOST && device != LIG_DEVICE_CUDA) {
        lig_fail(LIG_ERR_PARAM_INVALID, "device: expected LIG_DEVICE_HOST (0) or LIG_DEVICE_CUDA (1), got %d",
                 (int)device);
        return NULL;
    }
    if (device == LIG_DEVICE_HOST ? device_index != 0 : device_index < 0) {
        lig_fail(LIG_ERR_PARAM_INVALID, "device_index: expected %s, got %d",
                 device == LIG_DEVICE_HOST ? "0 for a host tensor" : "a CUDA device ordinal >= 0", device_index);
        return NULL;
    }
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
    t->device = device;
    t->device_index = device_index;
    t->dtype = dtype;
    t->ndim = ndim;
    /* `span`, the product of the non-zero extents, bounds every product of extents that later
     * layers form (element counts, rows), also for an empty tensor: it must fit in int64 whatever
     * dimension holds a zero. */
    int64_t numel = 1, span = 1;
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
        if (shape[i] > 0 && !mul_nonneg(span, shape[i], &span)) {
            lig_fail(LIG_ERR_PARAM_INVALID,
                     "shape: expected extents whose product (zero extents left out) is below 2^63, got an overflow");
            goto bad;
        }
        numel *= shape[i]; /* 0, or at most span */
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

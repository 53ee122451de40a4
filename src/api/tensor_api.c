/* lig_create_tensor(_on) / lig_destroy_tensor: descriptors of host or device memory, checked once here so
 * that every later layer can trust extents, strides and byte spans. */
#include <stdlib.h>

#include "backends/backend.h"
#include "core/error.h"
#include "core/size.h"
#include "core/tensor.h"

/* The furthest element offset of the view (saturating). */
static uint64_t last_offset(const lig_tensor *t) {
    uint64_t last = 0;
    for (int64_t i = 0; i < t->ndim; i++)
        last = lig_size_add(last, lig_size_mul((uint64_t)(t->shape[i] - 1), (uint64_t)t->strides[i]));
    return last;
}

lig_tensor *lig_create_tensor(void *data, lig_dtype dtype, int64_t ndim, const int64_t *shape,
                              const int64_t *strides) {
    return lig_create_tensor_on(data, dtype, ndim, shape, strides, LIG_DEVICE_HOST, 0);
}

lig_tensor *lig_create_tensor_on(void *data, lig_dtype dtype, int64_t ndim, const int64_t *shape,
                                 const int64_t *strides, lig_device device, int device_index) {
    if (!lig_device_known(device)) {
        lig_fail(LIG_ERR_PARAM_INVALID, "device: expected a device kind lig.h lists (LIG_DEVICE_HOST = 0 .. "
                 "LIG_DEVICE_ASCEND = 3), got %d", (int)device);
        return NULL;
    }
    if (device == LIG_DEVICE_HOST ? device_index != 0 : device_index < 0) {
        lig_fail(LIG_ERR_PARAM_INVALID, "device_index: expected %s, got %d",
                 device == LIG_DEVICE_HOST ? "0 for a host tensor" : "a device ordinal >= 0", device_index);
        return NULL;
    }
    if (lig_dtype_size(dtype) == 0) {
        lig_fail(LIG_ERR_PARAM_INVALID, "dtype: expected one of FLOAT32, FLOAT16, BFLOAT16, INT32, INT64, FLOAT8_E4M3FN, INT8, UINT8, "
                 "FLOAT4_E2M1X2, got %d",
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
    uint64_t numel = 1, span = 1;
    char got[LIG_SHAPE_BUF], dims[LIG_SHAPE_BUF];
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
            t->strides[i] = (int64_t)numel; /* contiguous row-major: the extent of the inner dims */
        }
        if (shape[i] > 0) span = lig_size_mul(span, (uint64_t)shape[i]);
        if (!lig_size_fits(span)) {
            lig_fail(LIG_ERR_PARAM_INVALID,
                     "shape: expected extents whose product (zero extents left out) is below 2^63, got %s (an overflow)",
                     lig_format_shape(got, sizeof got, ndim, shape));
            goto bad;
        }
        numel *= (uint64_t)shape[i]; /* 0, or at most span */
    }
    if (numel > 0) {
        /* The furthest element offset, in bytes of the widest dtype, must be addressable: every
         * element offset and byte span computed later then fits in an int64_t. */
        if (last_offset(t) >= (uint64_t)INT64_MAX / 8) {
            if (strides)
                lig_fail(LIG_ERR_PARAM_INVALID, "strides: expected a byte span below 2^63, got strides %s over shape %s",
                         lig_format_shape(got, sizeof got, ndim, strides),
                         lig_format_shape(dims, sizeof dims, ndim, shape));
            else
                lig_fail(LIG_ERR_PARAM_INVALID,
                         "shape: expected fewer than 2^60 elements (a byte span below 2^63), got %s contiguous",
                         lig_format_shape(got, sizeof got, ndim, shape));
            goto bad;
        }
        if (data == NULL) {
            lig_fail(LIG_ERR_PARAM_NULLPTR, "data: expected a pointer for %llu elements, got NULL",
                     (unsigned long long)numel);
            goto bad;
        }
    }
    return t;
bad:
    free(t);
    return NULL;
}

void lig_destroy_tensor(lig_tensor *tensor) { free(tensor); }

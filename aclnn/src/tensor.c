/* aclCreateTensor and friends. The view is checked against its declared storage when made, and
 * against the allocation its data lies in when an operator uses it. */
#include "tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checked.h"
#include "dtype.h"
#include "errmsg.h"
#include "registry.h"

static bool product(const int64_t *dims, int64_t n, int64_t *out) {
    int64_t p = 1;
    for (int64_t i = 0; i < n; i++)
        if (!fe_mul_ok(p, dims[i], &p)) return false;
    *out = p;
    return true;
}

static bool dims_ok(const char *api, const char *what, const int64_t *dims, uint64_t n) {
    if (n > FE_MAX_DIMS) {
        fe_fail(ACLNN_ERR_PARAM_INVALID, api, "%sNum: expected at most %d dimensions, got %llu", what, FE_MAX_DIMS,
                (unsigned long long)n);
        return false;
    }
    if (n && !dims) {
        fe_fail(ACLNN_ERR_PARAM_NULLPTR, api, "%s: expected %llu sizes, got NULL", what, (unsigned long long)n);
        return false;
    }
    for (uint64_t i = 0; i < n; i++)
        if (dims[i] < 0) {
            fe_fail(ACLNN_ERR_PARAM_INVALID, api, "%s[%llu]: expected a size >= 0, got %lld", what,
                    (unsigned long long)i, (long long)dims[i]);
            return false;
        }
    return true;
}

/* The storage elements the view reaches, [lo, hi]; false on overflow. */
static bool view_reach(const aclTensor *t, int64_t *lo, int64_t *hi) {
    *lo = *hi = t->offset;
    for (int64_t i = 0; i < t->ndim; i++) {
        int64_t ext;
        if (!fe_mul_ok(t->shape[i] - 1, t->strides[i], &ext)) return false;
        if (!fe_add_ok(ext < 0 ? *lo : *hi, ext, ext < 0 ? lo : hi)) return false;
    }
    return true;
}

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType, const int64_t *stride,
                           int64_t offset, aclFormat format, const int64_t *storageDims, uint64_t storageDimsNum,
                           void *tensorData) {
    const char *api = "aclCreateTensor";
    size_t esize = fe_dtype_size(dataType);
    /* FLOAT4_E2M1 counts its elements (two a byte) in every extent, stride and offset, as CANN's
     * callers pass it (vllm-ascend's packed-FP4 tensors double the last extent and the strides) */
    const bool nibbles = dataType == ACL_FLOAT4_E2M1;
    if (esize == 0 && !nibbles) {
        fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                "dataType: expected a type with whole-byte elements (or ACL_FLOAT4_E2M1), got %s (%d)",
                fe_dtype_name(dataType), (int)dataType);
        return NULL;
    }
    if (!dims_ok(api, "viewDims", viewDims, viewDimsNum) || !dims_ok(api, "storageDims", storageDims, storageDimsNum))
        return NULL;
    if (offset < 0) {
        fe_fail(ACLNN_ERR_PARAM_INVALID, api, "offset: expected an element offset >= 0, got %lld", (long long)offset);
        return NULL;
    }
    aclTensor *t = calloc(1, sizeof *t);
    if (!t) {
        fe_fail(ACLNN_ERR_INNER_NULLPTR, api, "out of memory for a tensor");
        return NULL;
    }
    t->dtype = dataType;
    t->format = format;
    t->ndim = (int64_t)viewDimsNum;
    t->offset = offset;
    t->storage_ndim = (int64_t)storageDimsNum;
    t->data = tensorData;
    if (viewDimsNum) memcpy(t->shape, viewDims, viewDimsNum * sizeof *viewDims);
    if (storageDimsNum) memcpy(t->storage_shape, storageDims, storageDimsNum * sizeof *storageDims);

    char vbuf[200], sbuf[200], tbuf[200];
    int64_t storage_numel, storage_bytes;
    bool ok = product(t->shape, t->ndim, &t->numel) && product(t->storage_shape, t->storage_ndim, &storage_numel) &&
              (nibbles || fe_mul_ok(storage_numel, (int64_t)esize, &storage_bytes));
    if (ok && stride) {
        memcpy(t->strides, stride, viewDimsNum * sizeof *stride);
    } else if (ok) { /* contiguous row-major */
        int64_t s = 1;
        for (int64_t i = t->ndim - 1; i >= 0 && ok; i--) {
            t->strides[i] = s;
            ok = fe_mul_ok(s, t->shape[i] > 1 ? t->shape[i] : 1, &s);
        }
    }
    if (!ok) {
        fe_fail(ACLNN_ERR_PARAM_INVALID, api, "viewDims %s / storageDims %s: element counts overflow 64 bits",
                lig_format_shape(vbuf, sizeof vbuf, t->ndim, t->shape),
                lig_format_shape(sbuf, sizeof sbuf, t->storage_ndim, t->storage_shape));
        free(t);
        return NULL;
    }
    if (t->numel > 0) {
        if (!view_reach(t, &t->lo, &t->hi) || t->lo < 0 || t->hi >= storage_numel) {
            fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                    "the view (viewDims %s, stride %s, offset %lld) reaches outside its storage (storageDims %s, "
                    "%lld elements)",
                    lig_format_shape(vbuf, sizeof vbuf, t->ndim, t->shape),
                    lig_format_shape(tbuf, sizeof tbuf, t->ndim, t->strides), (long long)offset,
                    lig_format_shape(sbuf, sizeof sbuf, t->storage_ndim, t->storage_shape), (long long)storage_numel);
            free(t);
            return NULL;
        }
    }
    if (!fe_reg_add(t, 0, FE_KIND_TENSOR)) {
        fe_fail(ACLNN_ERR_INNER_NULLPTR, api, "out of memory recording a tensor");
        free(t);
        return NULL;
    }
    return t;
}

void fe_tensor_release(aclTensor *tensor) { free(tensor); }

/* What aclDestroyTensor and aclDestroyIntArray refuse: a pointer that is not a live `what` made
 * by `maker`; the object leaves the registry otherwise (the caller frees it). */
static aclnnStatus unregister(const void *p, fe_kind kind, const char *api, const char *what, const char *maker) {
    if (!fe_reg_remove(p, kind))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                       "%s: %p is not a live %s from %s (never made, or already destroyed)", what, p, what, maker);
    return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyTensor(const aclTensor *tensor) {
    if (!tensor) return ACLNN_SUCCESS; /* as free(NULL): cleanup code calls it for tensors never made */
    aclnnStatus st = unregister(tensor, FE_KIND_TENSOR, "aclDestroyTensor", "tensor", "aclCreateTensor");
    if (st == ACLNN_SUCCESS) fe_tensor_release((aclTensor *)tensor);
    return st;
}

static aclnnStatus check_live(const aclTensor *t, const void *out, const char *api) {
    if (!t || !out) return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api, "expected a tensor and an output pointer, got NULL");
    if (!fe_reg_has(t, FE_KIND_TENSOR))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "tensor: %p is not a live tensor from aclCreateTensor",
                       (const void *)t);
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetViewOffset(const aclTensor *tensor, int64_t *offset) {
    aclnnStatus st = check_live(tensor, offset, "aclGetViewOffset");
    if (st == ACLNN_SUCCESS) *offset = tensor->offset;
    return st;
}

aclnnStatus aclGetFormat(const aclTensor *tensor, aclFormat *format) {
    aclnnStatus st = check_live(tensor, format, "aclGetFormat");
    if (st == ACLNN_SUCCESS) *format = tensor->format;
    return st;
}

aclnnStatus aclGetDataType(const aclTensor *tensor, aclDataType *dataType) {
    aclnnStatus st = check_live(tensor, dataType, "aclGetDataType");
    if (st == ACLNN_SUCCESS) *dataType = tensor->dtype;
    return st;
}

aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size) {
    const char *api = "aclCreateIntArray";
    if (size && !value) {
        fe_fail(ACLNN_ERR_PARAM_NULLPTR, api, "value: expected %llu integers, got NULL", (unsigned long long)size);
        return NULL;
    }
    if (size > (SIZE_MAX - sizeof(aclIntArray)) / sizeof(int64_t)) {
        fe_fail(ACLNN_ERR_PARAM_INVALID, api, "size: %llu integers do not fit in memory", (unsigned long long)size);
        return NULL;
    }
    aclIntArray *a = malloc(sizeof *a + (size_t)size * sizeof(int64_t));
    if (!a || !fe_reg_add(a, 0, FE_KIND_INT_ARRAY)) {
        free(a);
        fe_fail(ACLNN_ERR_INNER_NULLPTR, api, "out of memory for %llu integers", (unsigned long long)size);
        return NULL;
    }
    a->size = size;
    if (size) memcpy(a->values, value, (size_t)size * sizeof(int64_t));
    return a;
}

void fe_int_array_release(aclIntArray *array) { free(array); }

aclnnStatus aclDestroyIntArray(const aclIntArray *array) {
    if (!array) return ACLNN_SUCCESS;
    aclnnStatus st = unregister(array, FE_KIND_INT_ARRAY, "aclDestroyIntArray", "array", "aclCreateIntArray");
    if (st == ACLNN_SUCCESS) fe_int_array_release((aclIntArray *)array);
    return st;
}

aclnnStatus aclGetIntArraySize(const aclIntArray *array, uint64_t *size) {
    const char *api = "aclGetIntArraySize";
    if (!array || !size) return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api, "expected an array and a size pointer, got NULL");
    if (!fe_reg_has(array, FE_KIND_INT_ARRAY))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "array: %p is not a live array from aclCreateIntArray",
                       (const void *)array);
    *size = array->size;
    return ACLNN_SUCCESS;
}

bool fe_byte_view(const aclTensor *t, int64_t shape[FE_MAX_DIMS], int64_t strides[FE_MAX_DIMS], size_t *start) {
    memcpy(shape, t->shape, sizeof t->shape);
    memcpy(strides, t->strides, sizeof t->strides);
    if (t->dtype != ACL_FLOAT4_E2M1) {
        *start = (size_t)t->offset * fe_dtype_size(t->dtype);
        return true;
    }
    const int64_t last = t->ndim - 1;
    if (last < 0 || t->offset % 2 || shape[last] % 2 || (shape[last] > 1 && strides[last] != 1)) return false;
    for (int64_t d = 0; d < last; d++)
        if (shape[d] > 1 && strides[d] % 2) return false;
    for (int64_t d = 0; d < last; d++) strides[d] /= 2;
    shape[last] /= 2;
    strides[last] = 1;
    *start = (size_t)(t->offset / 2);
    return true;
}

aclnnStatus fe_tensor_bind(const aclTensor *t, const char *name, const char *api, fe_bound *out) {
    if (!fe_reg_has(t, FE_KIND_TENSOR))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                       "%s: %p is not a live tensor from aclCreateTensor (never made, or already destroyed)", name,
                       (const void *)t);
    lig_dtype dtype;
    if (t->dtype == ACL_HIFLOAT8)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                       "%s: got ACL_HIFLOAT8, and lig does not support HiFloat8 (Huawei's 8-bit float format); "
                       "quantize to ACL_FLOAT8_E4M3FN or ACL_INT8 instead",
                       name);
    if (!fe_dtype_to_lig(t->dtype, &dtype))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                       "%s: expected dtype ACL_FLOAT16, ACL_BF16, ACL_FLOAT, ACL_INT32, ACL_INT64, ACL_INT8, "
                       "ACL_FLOAT8_E4M3FN, ACL_FLOAT4_E2M1 or ACL_FLOAT8_E8M0, got %s",
                       name, fe_dtype_name(t->dtype));
    if (!fe_format_is_plain(t->format))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                       "%s: expected format ACL_FORMAT_ND (or another plain row-major format), got %s", name,
                       fe_format_name(t->format));
    int64_t shape[FE_MAX_DIMS], strides[FE_MAX_DIMS];
    size_t start = 0;
    if (!fe_byte_view(t, shape, strides, &start))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                       "%s: an ACL_FLOAT4_E2M1 view must cover whole bytes: an even last extent with stride 1, "
                       "even strides and an even offset",
                       name);
    const bool nibbles = t->dtype == ACL_FLOAT4_E2M1;
    size_t esize = nibbles ? 1 : fe_dtype_size(t->dtype);
    void *data = t->data;
    uintptr_t lo = 0, hi = 0;
    if (t->numel > 0) {
        if (!t->data)
            return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api, "%s: its data is NULL, but its view has %lld elements", name,
                           (long long)t->numel);
        /* the storage check at creation bounds lo and hi by a byte count that fits in int64 */
        lo = (uintptr_t)t->data + (uintptr_t)(nibbles ? t->lo / 2 : t->lo) * esize;
        hi = (uintptr_t)t->data + ((uintptr_t)(nibbles ? t->hi / 2 : t->hi) + 1) * esize;
        fe_entry e;
        if (!fe_reg_find_mem((const void *)lo, &e))
            return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                           "%s: its elements start at %p, which is not in memory from aclrtMalloc (never allocated, "
                           "or already freed)",
                           name, (void *)lo);
        if (hi > e.addr + e.size)
            return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                           "%s: its elements span %llu bytes from %p, past the end of their allocation (%zu bytes "
                           "at %p)",
                           name, (unsigned long long)(hi - lo), (void *)lo, e.size, (void *)e.addr);
        data = (char *)t->data + start;
    }
    lig_tensor *lt = lig_create_tensor(data, dtype, t->ndim, shape, strides);
    if (!lt) return fe_fail_lig_param(LIG_ERR_PARAM_INVALID, api, name);
    *out = (fe_bound){.lt = lt, .lo = lo, .hi = hi, .name = name};
    return ACLNN_SUCCESS;
}

bool fe_bound_still_valid(const fe_bound *b) {
    if (b->lo == b->hi) return true;
    fe_entry e;
    return fe_reg_find_mem((const void *)b->lo, &e) && b->hi <= e.addr + e.size;
}

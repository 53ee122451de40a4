/* The tensor descriptor behind the opaque lig_tensor, and the queries every layer needs. */
#ifndef LIG_CORE_TENSOR_H
#define LIG_CORE_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lig.h"


struct lig_tensor {
    void *data;
    lig_dtype dtype;
    int64_t ndim;
    int64_t shape[LIG_MAX_DIMS];
    int64_t strides[LIG_MAX_DIMS]; /* in elements, >= 0 */
    lig_device device; /* where the data lives (public enum, lig.h); phase 1 picks the backend */
    int device_index;  /* CUDA device ordinal; 0 for host tensors */
};

size_t lig_dtype_size(lig_dtype dtype);
const char *lig_dtype_name(lig_dtype dtype);
bool lig_dtype_is_float(lig_dtype dtype);
bool lig_dtype_is_index(lig_dtype dtype);

int64_t lig_tensor_numel(const lig_tensor *t);

/* Byte range [*lo, *hi) the view can touch; empty (lo == hi) when it has no elements. */
void lig_tensor_byte_range(const lig_tensor *t, uintptr_t *lo, uintptr_t *hi);

/* True when two distinct index tuples of the view address the same element. */
bool lig_tensor_self_overlaps(const lig_tensor *t);

/* Reads element i of a 1-D integer tensor (INT32 or INT64) in host memory. */
int64_t lig_tensor_read_int_1d(const lig_tensor *t, int64_t i);

#endif

/* aclTensor and aclIntArray, and the step that turns an aclTensor argument into a lig_tensor. */
#ifndef LIG_ACLNN_TENSOR_H
#define LIG_ACLNN_TENSOR_H

#include <stdbool.h>
#include <stdint.h>

#include <lig.h>

#include "../include/aclnn/aclnn_base.h"

#define FE_MAX_DIMS 8

struct aclTensor {
    aclDataType dtype;
    aclFormat format;
    int64_t ndim;
    int64_t shape[FE_MAX_DIMS];
    int64_t strides[FE_MAX_DIMS];
    int64_t offset;
    int64_t storage_ndim;
    int64_t storage_shape[FE_MAX_DIMS];
    void *data;
    int64_t numel;
    int64_t lo, hi; /* the lowest and highest storage element the view reaches (when numel > 0) */
};

struct aclIntArray {
    uint64_t size;
    int64_t values[];
};

void fe_tensor_release(aclTensor *tensor);
void fe_int_array_release(aclIntArray *array);

/* An operator argument as lig sees it, plus the bytes it touches (lo == hi when none). */
typedef struct fe_bound {
    lig_tensor *lt;
    uintptr_t lo, hi;
    const char *name;
} fe_bound;

/* Checks that `tensor` is live, of a dtype and format lig reads, and that its view lies inside
 * one tracked allocation; then makes the lig_tensor. ACLNN_SUCCESS or a status with the message
 * set (naming `name`). */
aclnnStatus fe_tensor_bind(const aclTensor *tensor, const char *name, const char *api, fe_bound *out);
/* The view lig reads: extents, element strides and the byte offset of the first element. For
 * ACL_FLOAT4_E2M1 (elements counted in nibbles) that is lig's FLOAT4_E2M1X2 view, two codes a byte:
 * false unless the view covers whole bytes (even last extent with stride 1, even strides and offset). */
bool fe_byte_view(const aclTensor *t, int64_t shape[FE_MAX_DIMS], int64_t strides[FE_MAX_DIMS], size_t *start);
/* Whether the bytes of a bound tensor are still inside a live allocation (phase 2 re-checks). */
bool fe_bound_still_valid(const fe_bound *bound);

#endif /* LIG_ACLNN_TENSOR_H */

/*
 * lig-aclnn: aclnn's tensor and executor handles, after CANN 8.1.RC1's public
 * include/aclnn/acl_meta.h (C and C++: CANN's header needs C++; this one uses <stdint.h>).
 * Only the calls lig's front end implements are declared.
 */
#ifndef LIG_ACLNN_ACL_META_H
#define LIG_ACLNN_ACL_META_H

#include <stdint.h>
#include <stdlib.h>

#include "../acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ACLNN_META
#define ACLNN_META
typedef struct aclOpExecutor aclOpExecutor;
typedef struct aclTensor aclTensor;
typedef struct aclScalar aclScalar;
typedef struct aclIntArray aclIntArray;
typedef struct aclFloatArray aclFloatArray;
typedef struct aclBoolArray aclBoolArray;
typedef struct aclTensorList aclTensorList;
typedef struct aclScalarList aclScalarList;

typedef int32_t aclnnStatus;
#ifdef __cplusplus
constexpr aclnnStatus OK = 0;
#endif
#endif

/*
 * A view of `viewDims` over `tensorData`: element i sits at element offset
 * offset + sum(i[k] * stride[k]) of the storage (stride NULL = contiguous), and the whole view
 * must lie inside the storage of shape storageDims. NULL (aclGetRecentErrMsg says why) when an
 * argument is invalid. The data pointer is checked when an operator uses the tensor: it must lie
 * in memory from aclrtMalloc / aclrtMallocHost, with the view inside that allocation.
 */
ACL_FUNC_VISIBILITY aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                                               const int64_t *stride, int64_t offset, aclFormat format,
                                               const int64_t *storageDims, uint64_t storageDimsNum,
                                               void *tensorData);
ACL_FUNC_VISIBILITY aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size);

ACL_FUNC_VISIBILITY aclnnStatus aclDestroyTensor(const aclTensor *tensor);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyIntArray(const aclIntArray *array);
ACL_FUNC_VISIBILITY aclnnStatus aclGetIntArraySize(const aclIntArray *array, uint64_t *size);
ACL_FUNC_VISIBILITY aclnnStatus aclGetViewOffset(const aclTensor *tensor, int64_t *offset);
ACL_FUNC_VISIBILITY aclnnStatus aclGetFormat(const aclTensor *tensor, aclFormat *format);
ACL_FUNC_VISIBILITY aclnnStatus aclGetDataType(const aclTensor *tensor, aclDataType *dataType);
/* Frees an executor from a *GetWorkspaceSize call that will never be run (running one frees it). */
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor);

#ifdef __cplusplus
}
#endif

#endif /* LIG_ACLNN_ACL_META_H */

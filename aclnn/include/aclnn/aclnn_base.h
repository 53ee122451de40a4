/*
 * lig-aclnn: what CANN's operator headers (aclnnop/aclnn_*.h) include: the tensor and executor
 * handles of acl_meta.h and the ACLNN_* status codes of opdev/op_errno.h.
 */
#ifndef LIG_ACLNN_ACLNN_BASE_H
#define LIG_ACLNN_ACLNN_BASE_H

#include "acl_meta.h"
#include "opdev/op_errno.h"

#endif /* LIG_ACLNN_ACLNN_BASE_H */

/*
 * lig-aclnn: CANN's AscendCL entry header, for the lightning indexer operators on lig.
 *
 * Code written for CANN's aclnnLightningIndexerGrad / aclnnLightningIndexer includes this header
 * and aclnnop/aclnn_lightning_indexer{,_grad}.h; against lig it needs only different include and
 * link flags (pkg-config lig-aclnn, or CMake lig::aclnn). Declarations follow CANN 8.1.RC1's
 * public include/acl/acl.h; CANN's model and single-op (acl_mdl.h, acl_op.h) APIs are not part
 * of the subset.
 */
#ifndef LIG_ACLNN_ACL_H
#define LIG_ACLNN_ACL_H

#include "acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The AscendCL interface version these declarations follow (CANN 8.1.RC1's acl.h). */
#define ACL_MAJOR_VERSION 1
#define ACL_MINOR_VERSION 13
#define ACL_PATCH_VERSION 0

/* configPath may be NULL; a non-NULL path is not read (lig has nothing to configure). */
ACL_FUNC_VISIBILITY aclError aclInit(const char *configPath);
/* Releases every allocation, stream, context, tensor and executor still alive. */
ACL_FUNC_VISIBILITY aclError aclFinalize(void);
ACL_FUNC_VISIBILITY aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion, int32_t *patchVersion);

/* The message of this thread's latest failed acl / aclnn call (lig's own message for operator
 * errors), cleared by the call; NULL when there is none. The pointer stays valid until the next
 * call to aclGetRecentErrMsg in the same thread. */
ACL_FUNC_VISIBILITY const char *aclGetRecentErrMsg(void);

#ifdef __cplusplus
}
#endif

#endif /* LIG_ACLNN_ACL_H */

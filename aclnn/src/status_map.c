/* The values happen to coincide (lig took them from CANN's op_errno.h); the switch keeps the
 * mapping correct should either side ever renumber. */
#include "status_map.h"

#include <lig.h>

#include "../include/aclnn/opdev/op_errno.h"

int32_t fe_status_from_lig(int lig_status_value) {
    switch (lig_status_value) {
    case LIG_SUCCESS: return ACLNN_SUCCESS;
    case LIG_ERR_PARAM_NULLPTR: return ACLNN_ERR_PARAM_NULLPTR;
    case LIG_ERR_PARAM_INVALID: return ACLNN_ERR_PARAM_INVALID;
    case LIG_ERR_RUNTIME: return ACLNN_ERR_RUNTIME_ERROR;
    case LIG_ERR_INNER: return ACLNN_ERR_INNER;
    default: return ACLNN_ERR_INNER;
    }
}

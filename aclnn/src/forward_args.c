#include "forward_args.h"

#include <string.h>

#include "errmsg.h"

aclnnStatus fe_check_forward_args(const char *api, const uint64_t *workspaceSize, aclOpExecutor *const *executor,
                                  const char **lq, const char **lk, const aclTensor *blockTable,
                                  const aclTensor *actualSeqLengthsKey, bool *paged) {
    if (!workspaceSize || !executor)
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api, "%s: expected a pointer, got nullptr",
                       workspaceSize ? "executor" : "workspaceSize");
    if (!*lq) *lq = "BSND";
    if (!*lk) *lk = "BSND";
    if (strcmp(*lq, "BSND") && strcmp(*lq, "TND"))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "layoutQueryOptional: expected \"BSND\" or \"TND\", got \"%s\"",
                       *lq);
    *paged = !strcmp(*lk, "PA_BSND");
    if (!*paged && strcmp(*lk, *lq))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                       "layoutKeyOptional: expected \"%s\" (layoutQueryOptional's layout) or \"PA_BSND\", got \"%s\"",
                       *lq, *lk);
    if (*paged) {
        if (!blockTable)
            return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api,
                           "blockTableOptional: expected a [B, maxBlocksPerSeq] tensor when layoutKeyOptional is "
                           "\"PA_BSND\", got nullptr");
        if (!actualSeqLengthsKey)
            return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api,
                           "actualSeqLengthsKeyOptional: expected the [B] key lengths when layoutKeyOptional is "
                           "\"PA_BSND\", got nullptr");
    } else if (blockTable) {
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                       "blockTableOptional: expected nullptr when layoutKeyOptional is \"%s\" (a block table is only "
                       "read with \"PA_BSND\"), got a tensor",
                       *lk);
    }
    return ACLNN_SUCCESS;
}

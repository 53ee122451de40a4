/* What CANN's two forwards (aclnnLightningIndexer, aclnnQuantLightningIndexer) check alike before
 * binding tensors: the output pointers, the layouts as CANN's tiling checks them, and the arguments
 * a paged key cache needs. */
#ifndef LIG_ACLNN_FORWARD_ARGS_H
#define LIG_ACLNN_FORWARD_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "../include/aclnn/aclnn_base.h"

/* workspaceSize and executor are pointers; layoutQueryOptional *lq is "BSND" or "TND"; layoutKeyOptional *lk is the query's layout or
 * "PA_BSND" (NULL: the documented default "BSND" for either; *lq and *lk are set to what is used).
 * PA_BSND needs blockTableOptional and actualSeqLengthsKeyOptional; any other key layout refuses
 * a block table. *paged says whether the key is a paged cache. */
aclnnStatus fe_check_forward_args(const char *api, const uint64_t *workspaceSize, aclOpExecutor *const *executor,
                                  const char **lq, const char **lk, const aclTensor *blockTable,
                                  const aclTensor *actualSeqLengthsKey, bool *paged);

#endif /* LIG_ACLNN_FORWARD_ARGS_H */

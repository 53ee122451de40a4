/* The layout attributes of CANN's two forwards (aclnnLightningIndexer, aclnnQuantLightningIndexer),
 * checked as CANN's tiling checks them, with the arguments a paged key cache needs. */
#ifndef LIG_ACLNN_LAYOUTS_H
#define LIG_ACLNN_LAYOUTS_H

#include <stdbool.h>

#include "../include/aclnn/aclnn_base.h"

/* layoutQueryOptional *lq is "BSND" or "TND"; layoutKeyOptional *lk is the query's layout or
 * "PA_BSND" (NULL: the documented default "BSND" for either; *lq and *lk are set to what is used).
 * PA_BSND needs blockTableOptional and actualSeqLengthsKeyOptional; any other key layout refuses
 * a block table. *paged says whether the key is a paged cache. */
aclnnStatus fe_check_layouts(const char *api, const char **lq, const char **lk, const aclTensor *blockTable,
                             const aclTensor *actualSeqLengthsKey, bool *paged);

#endif /* LIG_ACLNN_LAYOUTS_H */

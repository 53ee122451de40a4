/* What the operators need from the runtime subset. */
#ifndef LIG_ACLNN_RUNTIME_H
#define LIG_ACLNN_RUNTIME_H

#include <stdbool.h>

#include "../include/acl/acl_base.h"

/* NULL (the default stream) or a live stream from aclrtCreateStream. */
bool fe_stream_is_valid(aclrtStream stream);

#endif /* LIG_ACLNN_RUNTIME_H */

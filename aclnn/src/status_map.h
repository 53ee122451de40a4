/* lig's statuses as aclnn statuses. */
#ifndef LIG_ACLNN_STATUS_MAP_H
#define LIG_ACLNN_STATUS_MAP_H

#include <stdint.h>

/* Takes an int so that an out-of-range value (a newer lig status) maps to ACLNN_ERR_INNER. */
int32_t fe_status_from_lig(int lig_status_value);

#endif /* LIG_ACLNN_STATUS_MAP_H */

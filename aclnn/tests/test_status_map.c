/* lig's statuses reach aclnn callers as the ACLNN_ERR_* codes of the same meaning, including the
 * two (runtime, inner) that no argument can provoke; an unknown status is an inner error. */
#include <lig.h>

#include <aclnn/aclnn_base.h>

#include "../src/status_map.h"
#include "check.h"

int main(void) {
    CHECK_EQ_INT(fe_status_from_lig(LIG_SUCCESS), ACLNN_SUCCESS);
    CHECK_EQ_INT(fe_status_from_lig(LIG_ERR_PARAM_NULLPTR), ACLNN_ERR_PARAM_NULLPTR);
    CHECK_EQ_INT(fe_status_from_lig(LIG_ERR_PARAM_INVALID), ACLNN_ERR_PARAM_INVALID);
    CHECK_EQ_INT(fe_status_from_lig(LIG_ERR_RUNTIME), ACLNN_ERR_RUNTIME_ERROR);
    CHECK_EQ_INT(fe_status_from_lig(LIG_ERR_INNER), ACLNN_ERR_INNER);
    CHECK_EQ_INT(fe_status_from_lig(123456), ACLNN_ERR_INNER);
    return check_report("aclnn-status-map");
}

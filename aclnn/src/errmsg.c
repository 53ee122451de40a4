/* aclGetRecentErrMsg: CANN's semantics are "obtain and clear", per thread, with the returned
 * pointer valid until the next call; two buffers give exactly that. */
#include "errmsg.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include <lig.h>

#include "../include/acl/acl.h"
#include "status_map.h"

static _Thread_local char pending[2048];
static _Thread_local bool has_pending;
static _Thread_local char handed_out[2048];

int fe_fail(int code, const char *api, const char *fmt, ...) {
    int n = snprintf(pending, sizeof pending, "%s: ", api);
    if (n < 0 || (size_t)n >= sizeof pending) n = 0;
    va_list args;
    va_start(args, fmt);
    vsnprintf(pending + n, sizeof pending - (size_t)n, fmt, args);
    va_end(args);
    has_pending = true;
    return code;
}

int fe_fail_lig(int lig_status_value, const char *api) {
    return fe_fail(fe_status_from_lig(lig_status_value), api, "%s", lig_get_last_error());
}

int fe_fail_lig_param(int lig_status_value, const char *api, const char *param) {
    return fe_fail(fe_status_from_lig(lig_status_value), api, "%s: %s", param, lig_get_last_error());
}

const char *aclGetRecentErrMsg(void) {
    if (!has_pending) return NULL;
    snprintf(handed_out, sizeof handed_out, "%s", pending);
    has_pending = false;
    return handed_out;
}

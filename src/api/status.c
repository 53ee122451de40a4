/* Status strings, the last error and the version: the public face of core/error.c. */
#include "core/error.h"
#include "lig.h"

const char *lig_get_last_error(void) { return lig_error_message(); }

const char *lig_status_string(lig_status status) {
    switch (status) {
    case LIG_SUCCESS: return "success";
    case LIG_ERR_PARAM_NULLPTR: return "a required pointer argument is NULL";
    case LIG_ERR_PARAM_INVALID: return "an argument is invalid";
    case LIG_ERR_RUNTIME: return "runtime failure (resources or backend)";
    case LIG_ERR_INNER: return "internal error";
    }
    return "unknown status";
}

const char *lig_version(void) { return LIG_VERSION_STRING; }

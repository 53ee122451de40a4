#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[1024];

lig_status lig_fail(lig_status status, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, args);
    va_end(args);
    return status;
}

const char *lig_error_message(void) { return last_error; }

const char *lig_format_shape(char *buf, size_t cap, int64_t ndim, const int64_t *shape) {
    size_t used = 0;
    int n = snprintf(buf, cap, "[");
    used = n > 0 ? (size_t)n : 0;
    for (int64_t i = 0; i < ndim && used < cap; i++) {
        n = snprintf(buf + used, cap - used, "%s%lld", i ? "," : "", (long long)shape[i]);
        if (n < 0) break;
        used += (size_t)n;
    }
    if (used < cap) snprintf(buf + used, cap - used, "]");
    return buf;
}

#include "core/size.h"

#include <stdio.h>

#include "core/error.h"

lig_status lig_size_check(uint64_t size, const char *operand, const char *what, const char *detail) {
    if (lig_size_fits(size)) return LIG_SUCCESS;
    char got[48];
    if (size == LIG_SIZE_HUGE) snprintf(got, sizeof got, "an overflow past 2^64");
    else snprintf(got, sizeof got, "%llu", (unsigned long long)size);
    return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected %s below 2^63, got %s (%s)", operand, what, got, detail);
}

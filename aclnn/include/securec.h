/*
 * lig-aclnn: the two calls of Huawei's secure C library (securec.h, shipped in CANN's include
 * directory) that CANN's operator samples use, so that those samples build unchanged.
 * Semantics of the library: EOK on success; on a bad argument an error code, and dest is
 * cleared when it is valid.
 */
#ifndef LIG_ACLNN_SECUREC_H
#define LIG_ACLNN_SECUREC_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef EOK
#define EOK 0
#endif

typedef int errno_t;

static inline errno_t memcpy_s(void *dest, size_t destMax, const void *src, size_t count) {
    if (dest == NULL || destMax > (size_t)PTRDIFF_MAX) return EINVAL;
    if (src == NULL) {
        memset(dest, 0, destMax);
        return EINVAL;
    }
    if (count > destMax) {
        memset(dest, 0, destMax);
        return ERANGE;
    }
    const char *s = (const char *)src;
    char *d = (char *)dest;
    if ((s < d && s + count > d) || (d < s && d + count > s)) {
        memset(dest, 0, destMax);
        return EINVAL;
    }
    if (count) memcpy(dest, src, count);
    return EOK;
}

/* Platforms with C11 Annex K (or Apple's libc) declare their own memset_s in <string.h>. */
#if !defined(__STDC_LIB_EXT1__) && !defined(__APPLE__)
static inline errno_t memset_s(void *dest, size_t destMax, int c, size_t count) {
    if (dest == NULL || destMax > (size_t)PTRDIFF_MAX) return EINVAL;
    if (count > destMax) {
        memset(dest, c, destMax);
        return ERANGE;
    }
    memset(dest, c, count);
    return EOK;
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* LIG_ACLNN_SECUREC_H */

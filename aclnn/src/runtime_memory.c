/*
 * Memory: "device" and "host" allocations are host memory that the registry tracks, so a copy
 * or fill that would run past the allocation a tracked pointer lies in is refused before any
 * byte moves. Untracked pointers are the caller's own host memory: destMax / maxCount bound them,
 * as on CANN.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../include/acl/acl.h"
#include "errmsg.h"
#include "registry.h"

static aclError do_malloc(const char *api, void **ptr, size_t size, fe_kind kind) {
    if (!ptr) return fe_fail(ACL_ERROR_INVALID_PARAM, api, "expected a pointer to receive the address, got NULL");
    if (size == 0) return fe_fail(ACL_ERROR_INVALID_PARAM, api, "size: expected at least 1 byte, got 0");
    void *p = malloc(size);
    if (!p || !fe_reg_add(p, size, kind)) {
        free(p);
        return fe_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, api, "out of memory for %zu bytes", size);
    }
    *ptr = p;
    return ACL_SUCCESS;
}

static aclError do_free(const char *api, void *p, fe_kind kind, const char *maker, const char *other_api) {
    if (!p) return fe_fail(ACL_ERROR_INVALID_PARAM, api, "expected an address, got NULL");
    if (fe_reg_remove(p, kind)) {
        free(p);
        return ACL_SUCCESS;
    }
    fe_entry e;
    if (fe_reg_has(p, kind == FE_KIND_DEVICE_MEM ? FE_KIND_HOST_MEM : FE_KIND_DEVICE_MEM))
        return fe_fail(ACL_ERROR_INVALID_PARAM, api, "%p was allocated by the other allocator; free it with %s", p,
                       other_api);
    if (fe_reg_find_mem(p, &e))
        return fe_fail(ACL_ERROR_INVALID_PARAM, api,
                       "%p lies %zu bytes inside the allocation at %p; free that address instead", p,
                       (size_t)((uintptr_t)p - e.addr), (void *)e.addr);
    return fe_fail(ACL_ERROR_INVALID_PARAM, api, "%p is not a live allocation from %s (never made, or already freed)",
                   p, maker);
}

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    (void)policy; /* huge pages, P2P and bandwidth classes mean nothing for host memory */
    return do_malloc("aclrtMalloc", devPtr, size, FE_KIND_DEVICE_MEM);
}

aclError aclrtFree(void *devPtr) {
    return do_free("aclrtFree", devPtr, FE_KIND_DEVICE_MEM, "aclrtMalloc", "aclrtFreeHost");
}

aclError aclrtMallocHost(void **hostPtr, size_t size) {
    return do_malloc("aclrtMallocHost", hostPtr, size, FE_KIND_HOST_MEM);
}

aclError aclrtFreeHost(void *hostPtr) {
    return do_free("aclrtFreeHost", hostPtr, FE_KIND_HOST_MEM, "aclrtMallocHost", "aclrtFree");
}

static const char *kind_name(aclrtMemcpyKind kind) {
    switch (kind) {
    case ACL_MEMCPY_HOST_TO_HOST: return "ACL_MEMCPY_HOST_TO_HOST";
    case ACL_MEMCPY_HOST_TO_DEVICE: return "ACL_MEMCPY_HOST_TO_DEVICE";
    case ACL_MEMCPY_DEVICE_TO_HOST: return "ACL_MEMCPY_DEVICE_TO_HOST";
    case ACL_MEMCPY_DEVICE_TO_DEVICE: return "ACL_MEMCPY_DEVICE_TO_DEVICE";
    case ACL_MEMCPY_DEFAULT: return "ACL_MEMCPY_DEFAULT";
    case ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE: return "ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE";
    case ACL_MEMCPY_INNER_DEVICE_TO_DEVICE: return "ACL_MEMCPY_INNER_DEVICE_TO_DEVICE";
    case ACL_MEMCPY_INTER_DEVICE_TO_DEVICE: return "ACL_MEMCPY_INTER_DEVICE_TO_DEVICE";
    }
    return NULL;
}

/* Whether `kind` says the destination (or source) is device memory; DEFAULT lets the address tell. */
static bool dst_is_device(aclrtMemcpyKind kind) {
    return kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE ||
           kind == ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE || kind == ACL_MEMCPY_INNER_DEVICE_TO_DEVICE ||
           kind == ACL_MEMCPY_INTER_DEVICE_TO_DEVICE;
}

static bool src_is_device(aclrtMemcpyKind kind) {
    return kind == ACL_MEMCPY_DEVICE_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_DEVICE ||
           kind == ACL_MEMCPY_INNER_DEVICE_TO_DEVICE || kind == ACL_MEMCPY_INTER_DEVICE_TO_DEVICE;
}

/* Checks `count` bytes at p: inside its allocation when tracked; an error when untracked but
 * `kind` says it is device memory. */
static aclError check_side(const char *api, const char *side, const void *p, size_t count, bool must_be_device,
                           const char *kname) {
    fe_entry e;
    if (fe_reg_find_mem(p, &e)) {
        size_t avail = e.size - (size_t)((uintptr_t)p - e.addr);
        if (count > avail)
            return fe_fail(ACL_ERROR_INVALID_PARAM, api,
                           "%s: %zu bytes at %p run past the end of its allocation (%zu bytes at %p, %zu of them "
                           "from %p on); nothing was written",
                           side, count, p, e.size, (void *)e.addr, avail, p);
        return ACL_SUCCESS;
    }
    if (must_be_device)
        return fe_fail(ACL_ERROR_INVALID_PARAM, api,
                       "%s: %p is not in memory from aclrtMalloc, but %s says it is device memory; nothing was written",
                       side, p, kname);
    return ACL_SUCCESS;
}

static aclError do_memcpy(const char *api, void *dst, size_t destMax, const void *src, size_t count,
                          aclrtMemcpyKind kind) {
    const char *kname = kind_name(kind);
    if (!kname) return fe_fail(ACL_ERROR_INVALID_PARAM, api, "kind: expected an aclrtMemcpyKind, got %d", (int)kind);
    if (!dst || !src)
        return fe_fail(ACL_ERROR_INVALID_PARAM, api, "%s: expected an address, got NULL", dst ? "src" : "dst");
    if (count > destMax)
        return fe_fail(ACL_ERROR_INVALID_PARAM, api,
                       "count: %zu bytes exceed destMax, the %zu bytes dst holds; nothing was copied", count, destMax);
    aclError st = check_side(api, "dst", dst, count, dst_is_device(kind), kname);
    if (st == ACL_SUCCESS) st = check_side(api, "src", src, count, src_is_device(kind), kname);
    if (st != ACL_SUCCESS) return st;
    if (count) memmove(dst, src, count);
    return ACL_SUCCESS;
}

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
    return do_memcpy("aclrtMemcpy", dst, destMax, src, count, kind);
}

aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
    if (stream && !fe_reg_has(stream, FE_KIND_STREAM))
        return fe_fail(ACL_ERROR_RT_INVALID_HANDLE, "aclrtMemcpyAsync",
                       "stream: %p is not a live stream from aclrtCreateStream; nothing was copied", stream);
    return do_memcpy("aclrtMemcpyAsync", dst, destMax, src, count, kind);
}

aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
    const char *api = "aclrtMemset";
    if (!devPtr) return fe_fail(ACL_ERROR_INVALID_PARAM, api, "devPtr: expected an address, got NULL");
    if (count > maxCount)
        return fe_fail(ACL_ERROR_INVALID_PARAM, api,
                       "count: %zu bytes exceed maxCount, the %zu bytes devPtr holds; nothing was set", count,
                       maxCount);
    aclError st = check_side(api, "devPtr", devPtr, count, false, NULL);
    if (st != ACL_SUCCESS) return st;
    if (count) memset(devPtr, (unsigned char)value, count);
    return ACL_SUCCESS;
}

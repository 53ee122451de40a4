/*
 * aclInit / aclFinalize, the one device, contexts and streams. Streams run synchronously (every
 * operator has finished when its call returns), so a stream is only a handle to validate.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "../include/acl/acl.h"
#include "errmsg.h"
#include "executor.h"
#include "registry.h"
#include "runtime.h"
#include "tensor.h"

#define FE_DEVICE_COUNT 1

typedef struct fe_context {
    int32_t device;
} fe_context;

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static bool initialized;
static int device_refs; /* aclrtSetDevice calls not yet matched by aclrtResetDevice */
/* The context aclrtSetDevice makes current; registered while device_refs > 0. */
static fe_context default_context = {.device = 0};

static _Thread_local aclrtContext current_context;
static _Thread_local int32_t current_device = -1;

static bool device_id_ok(int32_t id) { return id >= 0 && id < FE_DEVICE_COUNT; }

static aclError bad_device(const char *api, int32_t id) {
    return fe_fail(ACL_ERROR_RT_INVALID_DEVICEID, api,
                   "deviceId: expected 0 (lig's runtime has one device, the host), got %d", (int)id);
}

aclError aclInit(const char *configPath) {
    (void)configPath; /* nothing to configure: no dump, profiling or op paths */
    pthread_mutex_lock(&state_lock);
    bool again = initialized;
    initialized = true;
    pthread_mutex_unlock(&state_lock);
    if (again) return fe_fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit", "aclInit was already called (and not finalized)");
    return ACL_SUCCESS;
}

static void release(const fe_entry *e) {
    void *p = (void *)e->addr;
    switch (e->kind) {
    case FE_KIND_DEVICE_MEM:
    case FE_KIND_HOST_MEM:
    case FE_KIND_STREAM: free(p); break;
    case FE_KIND_CONTEXT:
        if (p != &default_context) free(p);
        break;
    case FE_KIND_TENSOR: fe_tensor_release(p); break;
    case FE_KIND_INT_ARRAY: fe_int_array_release(p); break;
    case FE_KIND_EXECUTOR: fe_executor_release(p); break;
    }
}

aclError aclFinalize(void) {
    pthread_mutex_lock(&state_lock);
    bool was = initialized;
    if (was) {
        initialized = false;
        device_refs = 0;
    }
    pthread_mutex_unlock(&state_lock);
    if (!was) return fe_fail(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize", "aclInit was not called, or aclFinalize already ran");
    size_t n;
    fe_entry *all = fe_reg_take_all(&n);
    for (size_t i = 0; i < n; i++) release(&all[i]);
    free(all);
    current_context = NULL;
    current_device = -1;
    return ACL_SUCCESS;
}

aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion, int32_t *patchVersion) {
    if (!majorVersion || !minorVersion || !patchVersion)
        return fe_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetVersion", "expected three version pointers, got a NULL one");
    *majorVersion = ACL_MAJOR_VERSION;
    *minorVersion = ACL_MINOR_VERSION;
    *patchVersion = ACL_PATCH_VERSION;
    return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t deviceId) {
    if (!device_id_ok(deviceId)) return bad_device("aclrtSetDevice", deviceId);
    bool ok = true;
    pthread_mutex_lock(&state_lock);
    if (device_refs == 0) ok = fe_reg_add(&default_context, 0, FE_KIND_CONTEXT);
    if (ok) device_refs++;
    pthread_mutex_unlock(&state_lock);
    if (!ok) return fe_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtSetDevice", "out of memory recording the device's context");
    current_context = &default_context;
    current_device = deviceId;
    return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId) {
    if (!device_id_ok(deviceId)) return bad_device("aclrtResetDevice", deviceId);
    pthread_mutex_lock(&state_lock);
    bool was_set = device_refs > 0;
    if (was_set && --device_refs == 0) fe_reg_remove(&default_context, FE_KIND_CONTEXT);
    pthread_mutex_unlock(&state_lock);
    if (!was_set)
        return fe_fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtResetDevice",
                       "deviceId: device %d is not set (every aclrtSetDevice was already matched by a reset)",
                       (int)deviceId);
    if (current_context == &default_context && !fe_reg_has(&default_context, FE_KIND_CONTEXT)) {
        current_context = NULL;
        current_device = -1;
    }
    return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t *deviceId) {
    if (!deviceId) return fe_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice", "deviceId: expected a pointer, got NULL");
    if (current_device < 0)
        return fe_fail(ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetDevice",
                       "no device is set in this thread (call aclrtSetDevice or aclrtSetCurrentContext)");
    *deviceId = current_device;
    return ACL_SUCCESS;
}

aclError aclrtGetDeviceCount(uint32_t *count) {
    if (!count) return fe_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount", "count: expected a pointer, got NULL");
    *count = FE_DEVICE_COUNT;
    return ACL_SUCCESS;
}

aclError aclrtGetRunMode(aclrtRunMode *runMode) {
    if (!runMode) return fe_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetRunMode", "runMode: expected a pointer, got NULL");
    *runMode = ACL_HOST; /* the program runs on the host, as with a PCIe-attached NPU */
    return ACL_SUCCESS;
}

aclError aclrtSynchronizeDevice(void) { return ACL_SUCCESS; }

aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId) {
    if (!context) return fe_fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateContext", "context: expected a pointer, got NULL");
    if (!device_id_ok(deviceId)) return bad_device("aclrtCreateContext", deviceId);
    fe_context *c = malloc(sizeof *c);
    if (!c || !fe_reg_add(c, 0, FE_KIND_CONTEXT)) {
        free(c);
        return fe_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtCreateContext", "out of memory for a context");
    }
    c->device = deviceId;
    current_context = c;
    current_device = deviceId;
    *context = c;
    return ACL_SUCCESS;
}

static aclError bad_handle(const char *api, const char *what, const void *h, const char *maker) {
    return fe_fail(ACL_ERROR_RT_INVALID_HANDLE, api,
                   "%s: %p is not a live %s from %s (never made, or already destroyed); passing the "
                   "address of the handle variable (&%s) instead of its value is a common cause",
                   what, h, what, maker, what);
}

aclError aclrtDestroyContext(aclrtContext context) {
    const char *api = "aclrtDestroyContext";
    if (!context) return fe_fail(ACL_ERROR_INVALID_PARAM, api, "context: expected a context, got NULL");
    if (context == &default_context)
        return fe_fail(ACL_ERROR_RT_INVALID_HANDLE, api,
                       "context: %p is the default context of device 0, which aclrtResetDevice releases", context);
    if (!fe_reg_remove(context, FE_KIND_CONTEXT)) return bad_handle(api, "context", context, "aclrtCreateContext");
    if (current_context == context) {
        current_context = NULL;
        current_device = -1;
    }
    free(context);
    return ACL_SUCCESS;
}

aclError aclrtSetCurrentContext(aclrtContext context) {
    const char *api = "aclrtSetCurrentContext";
    if (!context) return fe_fail(ACL_ERROR_INVALID_PARAM, api, "context: expected a context, got NULL");
    if (!fe_reg_has(context, FE_KIND_CONTEXT)) return bad_handle(api, "context", context, "aclrtCreateContext");
    current_context = context;
    current_device = 0; /* the only device */
    return ACL_SUCCESS;
}

aclError aclrtGetCurrentContext(aclrtContext *context) {
    const char *api = "aclrtGetCurrentContext";
    if (!context) return fe_fail(ACL_ERROR_INVALID_PARAM, api, "context: expected a pointer, got NULL");
    if (!current_context || !fe_reg_has(current_context, FE_KIND_CONTEXT))
        return fe_fail(ACL_ERROR_RT_CONTEXT_NULL, api, "this thread has no current context");
    *context = current_context;
    return ACL_SUCCESS;
}

aclError aclrtCreateStream(aclrtStream *stream) {
    if (!stream) return fe_fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream", "stream: expected a pointer, got NULL");
    void *s = malloc(1); /* a stream is only an identity: work runs when it is issued */
    if (!s || !fe_reg_add(s, 0, FE_KIND_STREAM)) {
        free(s);
        return fe_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtCreateStream", "out of memory for a stream");
    }
    *stream = s;
    return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream) {
    const char *api = "aclrtDestroyStream";
    if (!stream) return fe_fail(ACL_ERROR_INVALID_PARAM, api, "stream: NULL is the default stream, which is not destroyed");
    if (!fe_reg_remove(stream, FE_KIND_STREAM)) return bad_handle(api, "stream", stream, "aclrtCreateStream");
    free(stream);
    return ACL_SUCCESS;
}

bool fe_stream_is_valid(aclrtStream stream) { return !stream || fe_reg_has(stream, FE_KIND_STREAM); }

aclError aclrtSynchronizeStream(aclrtStream stream) {
    if (!fe_stream_is_valid(stream)) return bad_handle("aclrtSynchronizeStream", "stream", stream, "aclrtCreateStream");
    return ACL_SUCCESS;
}

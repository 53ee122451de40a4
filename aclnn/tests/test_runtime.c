/* The acl runtime subset on host memory: return codes, handle checks, allocation bounds, and the
 * error-message protocol. Compiled as C11 to prove the headers are C as well as C++. */
#include <stdint.h>
#include <string.h>

#include <acl/acl.h>
#include <aclnn/aclnn_base.h>

#include "check.h"

static void test_init_and_messages(void) {
    CHECK(aclGetRecentErrMsg() == NULL); /* nothing failed yet */
    CHECK_EQ_INT(aclInit(NULL), ACL_SUCCESS);
    CHECK_EQ_INT(aclInit(NULL), ACL_ERROR_REPEAT_INITIALIZE);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "aclInit");
    CHECK(aclGetRecentErrMsg() == NULL); /* obtained and cleared */
    int32_t major = 0, minor = 0, patch = -1;
    CHECK_EQ_INT(aclrtGetVersion(&major, &minor, &patch), ACL_SUCCESS);
    CHECK(major == ACL_MAJOR_VERSION && minor == ACL_MINOR_VERSION && patch == ACL_PATCH_VERSION);
    CHECK_EQ_INT(aclrtGetVersion(NULL, &minor, &patch), ACL_ERROR_INVALID_PARAM);
}

static void test_devices(void) {
    int32_t dev = -7;
    uint32_t count = 0;
    CHECK_EQ_INT(aclrtGetDevice(&dev), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK_EQ_INT(aclrtSetDevice(1), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "deviceId: expected 0");
    CHECK_EQ_INT(aclrtSetDevice(-1), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_EQ_INT(aclrtSetDevice(0), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtGetDevice(&dev), ACL_SUCCESS);
    CHECK_EQ_INT(dev, 0);
    CHECK_EQ_INT(aclrtGetDeviceCount(&count), ACL_SUCCESS);
    CHECK_EQ_INT(count, 1);
    aclrtRunMode mode = ACL_DEVICE;
    CHECK_EQ_INT(aclrtGetRunMode(&mode), ACL_SUCCESS);
    CHECK_EQ_INT(mode, ACL_HOST);
    aclrtContext current = NULL;
    CHECK_EQ_INT(aclrtGetCurrentContext(&current), ACL_SUCCESS);
    CHECK(current != NULL); /* the device's default context */
    CHECK_EQ_INT(aclrtDestroyContext(current), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "aclrtResetDevice");
    CHECK_EQ_INT(aclrtSetDevice(0), ACL_SUCCESS); /* counted: two resets match two sets */
    CHECK_EQ_INT(aclrtResetDevice(0), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtResetDevice(0), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtResetDevice(0), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_EQ_INT(aclrtSetCurrentContext(current), ACL_ERROR_RT_INVALID_HANDLE); /* released with the device */
    CHECK_EQ_INT(aclrtSynchronizeDevice(), ACL_SUCCESS);
}

static void test_contexts(void) {
    aclrtContext ctx = NULL, got = NULL;
    CHECK_EQ_INT(aclrtCreateContext(&ctx, 3), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_EQ_INT(aclrtCreateContext(NULL, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ_INT(aclrtCreateContext(&ctx, 0), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtSetCurrentContext(ctx), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtGetCurrentContext(&got), ACL_SUCCESS);
    CHECK(got == ctx);
    /* CANN's samples pass &context where the context is meant: an error, never a free of the stack */
    CHECK_EQ_INT(aclrtDestroyContext(&ctx), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "&context");
    CHECK_EQ_INT(aclrtSetCurrentContext(&ctx), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_EQ_INT(aclrtDestroyContext(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ_INT(aclrtDestroyContext(ctx), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtDestroyContext(ctx), ACL_ERROR_RT_INVALID_HANDLE); /* no double free */
    CHECK_EQ_INT(aclrtGetCurrentContext(&got), ACL_ERROR_RT_CONTEXT_NULL);
}

static void test_streams(void) {
    aclrtStream s = NULL;
    int not_a_stream = 0;
    CHECK_EQ_INT(aclrtCreateStream(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ_INT(aclrtCreateStream(&s), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtSynchronizeStream(s), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtSynchronizeStream(NULL), ACL_SUCCESS); /* the default stream */
    CHECK_EQ_INT(aclrtSynchronizeStream(&not_a_stream), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_EQ_INT(aclrtDestroyStream(&s), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "&stream");
    CHECK_EQ_INT(aclrtDestroyStream((aclrtStream)(uintptr_t)0x1000), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_EQ_INT(aclrtDestroyStream(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ_INT(aclrtDestroyStream(s), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtDestroyStream(s), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_EQ_INT(aclrtSynchronizeStream(s), ACL_ERROR_RT_INVALID_HANDLE);
}

static void test_memory(void) {
    void *dev = NULL, *host = NULL;
    unsigned char src[64], dst[64];
    for (int i = 0; i < 64; i++) src[i] = (unsigned char)(i + 1);
    memset(dst, 0xAB, sizeof dst);

    CHECK_EQ_INT(aclrtMalloc(NULL, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ_INT(aclrtMalloc(&dev, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ_INT(aclrtMalloc(&dev, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtMemcpy(dev, 16, src, 16, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);

    /* reading 32 bytes out of a 16-byte allocation (an fp16 result copied as float) */
    CHECK_EQ_INT(aclrtMemcpy(dst, sizeof dst, dev, 32, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "run past the end of its allocation (16 bytes");
    CHECK(dst[0] == 0xAB); /* nothing was copied */
    CHECK_EQ_INT(aclrtMemcpy(dst, sizeof dst, (char *)dev + 8, 9, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ_INT(aclrtMemcpy(dst, sizeof dst, (char *)dev + 8, 8, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    CHECK(dst[0] == 9 && dst[7] == 16 && dst[8] == 0xAB);
    /* writing past the allocation, and past destMax */
    CHECK_EQ_INT(aclrtMemcpy(dev, 64, src, 17, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ_INT(aclrtMemcpy(dev, 8, src, 16, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "destMax");
    /* a host array where the kind says device memory */
    CHECK_EQ_INT(aclrtMemcpy(dst, sizeof dst, src, 4, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "not in memory from aclrtMalloc");
    CHECK_EQ_INT(aclrtMemcpy(dst, sizeof dst, src, 4, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtMemcpy(dst, sizeof dst, dev, 32, ACL_MEMCPY_DEFAULT), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ_INT(aclrtMemcpy(dst, sizeof dst, dev, 16, (aclrtMemcpyKind)99), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ_INT(aclrtMemcpy(NULL, 16, dev, 16, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM);
    aclrtStream s = NULL;
    CHECK_EQ_INT(aclrtCreateStream(&s), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtMemcpyAsync(dst, sizeof dst, dev, 16, ACL_MEMCPY_DEVICE_TO_HOST, s), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtMemcpyAsync(dst, sizeof dst, dev, 16, ACL_MEMCPY_DEVICE_TO_HOST, &s), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_EQ_INT(aclrtDestroyStream(s), ACL_SUCCESS);

    CHECK_EQ_INT(aclrtMemset(dev, 16, 0x5A, 16), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtMemset(dev, 64, 0, 17), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ_INT(aclrtMemset(dev, 8, 0, 16), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ_INT(aclrtMemcpy(dst, sizeof dst, dev, 16, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    CHECK(dst[0] == 0x5A && dst[15] == 0x5A);

    CHECK_EQ_INT(aclrtMallocHost(&host, 8), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtFree(host), ACL_ERROR_INVALID_PARAM); /* the other allocator */
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "aclrtFreeHost");
    CHECK_EQ_INT(aclrtFreeHost(host), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtFree((char *)dev + 4), ACL_ERROR_INVALID_PARAM);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "inside the allocation");
    CHECK_EQ_INT(aclrtFree(src), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ_INT(aclrtFree(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ_INT(aclrtFree(dev), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtFree(dev), ACL_ERROR_INVALID_PARAM); /* no double free */
    CHECK_EQ_INT(aclrtMemcpy(dst, sizeof dst, dev, 4, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM);
}

/* aclFinalize releases what is still alive; handles used afterwards are errors, not double frees. */
static void test_finalize(void) {
    void *dev = NULL;
    aclrtStream s = NULL;
    aclrtContext ctx = NULL;
    CHECK_EQ_INT(aclrtSetDevice(0), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtMalloc(&dev, 100, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtCreateStream(&s), ACL_SUCCESS);
    CHECK_EQ_INT(aclrtCreateContext(&ctx, 0), ACL_SUCCESS);
    int64_t shape[2] = {2, 3};
    aclTensor *t = aclCreateTensor(shape, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, shape, 2, dev);
    CHECK(t != NULL);
    CHECK_EQ_INT(aclFinalize(), ACL_SUCCESS);
    CHECK_EQ_INT(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
    CHECK_EQ_INT(aclrtFree(dev), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ_INT(aclrtDestroyStream(s), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_EQ_INT(aclrtDestroyContext(ctx), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_EQ_INT(aclDestroyTensor(t), ACLNN_ERR_PARAM_INVALID);
    CHECK_EQ_INT(aclInit(NULL), ACL_SUCCESS); /* a later init starts afresh */
    CHECK_EQ_INT(aclFinalize(), ACL_SUCCESS);
}

int main(void) {
    test_init_and_messages();
    test_devices();
    test_contexts();
    test_streams();
    test_memory();
    test_finalize();
    return check_report("aclnn-runtime");
}

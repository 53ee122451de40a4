// Helpers for the CANN-style samples: the boilerplate CANN's operator samples write (Init,
// CreateAclTensor, CHECK_RET/LOG_PRINT), plus what the samples need to check their results
// against lig's own API: seeded data, lig tensors over host vectors, bitwise comparison.
#ifndef LIG_ACLNN_SAMPLE_UTIL_H
#define LIG_ACLNN_SAMPLE_UTIL_H

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "lig.h"

#define CHECK_RET(cond, return_expr) \
    do {                             \
        if (!(cond)) {               \
            return_expr;             \
        }                            \
    } while (0)

#define LOG_PRINT(message, ...)         \
    do {                                \
        printf(message, ##__VA_ARGS__); \
    } while (0)

inline int64_t GetShapeSize(const std::vector<int64_t> &shape) {
    int64_t shapeSize = 1;
    for (auto i : shape) shapeSize *= i;
    return shapeSize;
}

inline std::vector<int64_t> ContiguousStrides(const std::vector<int64_t> &shape) {
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
    return strides;
}

// aclInit, device, context, stream: the fixed preamble of CANN's samples.
inline int Init(int32_t deviceId, aclrtContext *context, aclrtStream *stream) {
    auto ret = aclInit(nullptr);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSetDevice(deviceId);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return ret);
    ret = aclrtCreateContext(context, deviceId);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateContext failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSetCurrentContext(*context);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetCurrentContext failed. ERROR: %d\n", ret); return ret);
    ret = aclrtCreateStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret); return ret);
    return 0;
}

// The end of a sample's run, in CANN's order: tensors, memory (the addresses not null), stream,
// context (when one was made), device, runtime; -1 at the first failure.
inline int Release(std::initializer_list<aclTensor *> tensors, std::initializer_list<void *> addrs, aclrtStream stream,
                   aclrtContext context, int32_t deviceId) {
    for (aclTensor *t : tensors) CHECK_RET(aclDestroyTensor(t) == ACL_SUCCESS, return -1);
    for (void *a : addrs)
        if (a != nullptr) CHECK_RET(aclrtFree(a) == ACL_SUCCESS, return -1);
    CHECK_RET(aclrtDestroyStream(stream) == ACL_SUCCESS, return -1);
    if (context != nullptr) CHECK_RET(aclrtDestroyContext(context) == ACL_SUCCESS, return -1);
    CHECK_RET(aclrtResetDevice(deviceId) == ACL_SUCCESS, return -1);
    CHECK_RET(aclFinalize() == ACL_SUCCESS, return -1);
    return 0;
}

// Device memory holding hostData, and a contiguous ND tensor over it.
template <typename T>
int CreateAclTensor(const std::vector<T> &hostData, const std::vector<int64_t> &shape, void **deviceAddr,
                    aclDataType dataType, aclTensor **tensor) {
    auto size = GetShapeSize(shape) * sizeof(T);
    auto ret = aclrtMalloc(deviceAddr, size, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
    ret = aclrtMemcpy(*deviceAddr, size, hostData.data(), size, ACL_MEMCPY_HOST_TO_DEVICE);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
    std::vector<int64_t> strides = ContiguousStrides(shape);
    *tensor = aclCreateTensor(shape.data(), shape.size(), dataType, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                              shape.size(), *deviceAddr);
    CHECK_RET(*tensor != nullptr, LOG_PRINT("aclCreateTensor failed: %s\n", aclGetRecentErrMsg()); return -1);
    return 0;
}

// Device memory holding `storage`, and a tensor viewing it with the given shape, strides and
// element offset: how a sample passes a non-contiguous argument.
template <typename T>
int CreateAclView(const std::vector<T> &storage, const std::vector<int64_t> &shape, const std::vector<int64_t> &strides,
                  int64_t offset, void **deviceAddr, aclDataType dataType, aclTensor **tensor) {
    auto size = storage.size() * sizeof(T);
    auto ret = aclrtMalloc(deviceAddr, size, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
    ret = aclrtMemcpy(*deviceAddr, size, storage.data(), size, ACL_MEMCPY_HOST_TO_DEVICE);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
    int64_t storageDims[1] = {static_cast<int64_t>(storage.size())};
    *tensor = aclCreateTensor(shape.data(), shape.size(), dataType, strides.data(), offset, ACL_FORMAT_ND,
                              storageDims, 1, *deviceAddr);
    CHECK_RET(*tensor != nullptr, LOG_PRINT("aclCreateTensor failed: %s\n", aclGetRecentErrMsg()); return -1);
    return 0;
}

// Phase 2 of an operator whose phase 1 succeeded, as CANN's samples run it: the workspace from
// aclrtMalloc (kept in *workspaceAddr for Release), the run, the stream synchronized.
inline int RunPhase2(const char *name, aclnnStatus (*run)(void *, uint64_t, aclOpExecutor *, aclrtStream),
                     uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream, void **workspaceAddr) {
    int ret = ACL_SUCCESS;
    if (workspaceSize > 0) {
        ret = aclrtMalloc(workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
    }
    ret = run(*workspaceAddr, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("%s failed. ERROR: %d (%s)\n", name, ret, aclGetRecentErrMsg()); return ret);
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);
    return 0;
}

// Copies n elements of a device result back to the host.
template <typename T>
int CopyOut(std::vector<T> &host, const void *deviceAddr, size_t n) {
    host.assign(n, T());
    auto ret = aclrtMemcpy(host.data(), n * sizeof(T), deviceAddr, n * sizeof(T), ACL_MEMCPY_DEVICE_TO_HOST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d (%s)\n", ret,
                                            aclGetRecentErrMsg());
              return ret);
    return 0;
}

// A 64-bit LCG: the same data on every platform, so failures reproduce.
class Lcg {
public:
    explicit Lcg(uint64_t seed) : state_(seed * 6364136223846793005ULL + 1442695040888963407ULL) {}
    uint32_t Next() {
        state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<uint32_t>(state_ >> 33);
    }
    float Uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(Next() % 65536) / 65536.0f; }
    int64_t Below(int64_t n) { return static_cast<int64_t>(Next() % static_cast<uint32_t>(n)); }

private:
    uint64_t state_;
};

inline uint16_t ToBf16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(x >> 16);
}

// The value of a FLOAT16 or BFLOAT16 bit pattern.
inline float HalfToFloat(uint16_t h, aclDataType dtype) {
    if (dtype == ACL_FLOAT16) return aclFloat16ToFloat(h);
    uint32_t x = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &x, sizeof f);
    return f;
}

// Random half-precision values: fp16 through aclFloatToFloat16, bf16 by rounding.
inline std::vector<uint16_t> RandomHalf(Lcg &rng, int64_t n, aclDataType dtype, float lo = -1.0f, float hi = 1.0f) {
    std::vector<uint16_t> v(static_cast<size_t>(n));
    for (auto &x : v) {
        float f = rng.Uniform(lo, hi);
        x = dtype == ACL_BF16 ? ToBf16(f) : aclFloatToFloat16(f);
    }
    return v;
}

// A lig tensor over host data (contiguous).
template <typename T>
lig_tensor *LigTensor(std::vector<T> &host, lig_dtype dtype, const std::vector<int64_t> &shape) {
    return lig_create_tensor(host.data(), dtype, static_cast<int64_t>(shape.size()), shape.data(), nullptr);
}

inline lig_dtype LigDtype(aclDataType dtype) {
    return dtype == ACL_BF16 ? LIG_BFLOAT16 : dtype == ACL_FLOAT16 ? LIG_FLOAT16 : LIG_FLOAT32;
}

// Runs a lig plan in a malloc'd workspace (lig's phase 2 consumes the plan).
inline lig_status LigRun(lig_status planned, uint64_t ws, lig_executor *plan,
                         lig_status (*run)(void *, uint64_t, lig_executor *, void *)) {
    if (planned != LIG_SUCCESS) return planned;
    std::vector<unsigned char> workspace(ws ? ws : 1);
    return run(workspace.data(), ws, plan, nullptr);
}

// lig_indexer through lig's own API, every key the sparse mode leaves visible (no token band): the
// reference the forward samples compare with. A failure is reported as `what`'s.
inline lig_status LigIndexer(const char *what, const lig_tensor *q, const lig_tensor *k, const lig_tensor *w,
                             const lig_tensor *aq, const lig_tensor *ak, const char *layout, int64_t sparseCount,
                             int64_t sparseMode, const lig_tensor *idx, const lig_tensor *val) {
    uint64_t ws = 0;
    lig_executor *plan = nullptr;
    lig_status st = lig_indexer_get_workspace_size(q, k, w, aq, ak, layout, sparseCount, sparseMode, INT64_MAX,
                                                   INT64_MAX, idx, val, &ws, &plan);
    st = LigRun(st, ws, plan, lig_indexer);
    if (st != LIG_SUCCESS) LOG_PRINT("%s failed: %s\n", what, lig_get_last_error());
    return st;
}

// Counts the elements whose bytes differ, and reports the first.
template <typename T>
int64_t CountMismatches(const char *what, const std::vector<T> &got, const std::vector<T> &want) {
    int64_t bad = 0;
    if (got.size() != want.size()) {
        LOG_PRINT("%s: %zu elements, expected %zu\n", what, got.size(), want.size());
        return 1;
    }
    for (size_t i = 0; i < got.size(); i++) {
        if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
            if (bad == 0) LOG_PRINT("%s: element %zu differs from lig's own result\n", what, i);
            bad++;
        }
    }
    return bad;
}

// 1 (said) when no slot selects a key: indices of nothing but padding would match a run that did
// nothing.
inline int64_t NoneSelected(const std::vector<int32_t> &indices) {
    for (int32_t v : indices)
        if (v >= 0) return 0;
    LOG_PRINT("no key was selected\n");
    return 1;
}

// A case's last line, "name: FAILED" or "name: <what it matched>", with its mismatch count; 1 when any.
inline int Verdict(const char *name, int64_t bad, const char *matched) {
    LOG_PRINT("%s: %s (%lld mismatches)\n", name, bad ? "FAILED" : matched, static_cast<long long>(bad));
    return bad ? 1 : 0;
}

#endif  // LIG_ACLNN_SAMPLE_UTIL_H

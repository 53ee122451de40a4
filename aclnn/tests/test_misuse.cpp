// What CANN's own aclnnLightningIndexerGrad / aclnnLightningIndexer samples get wrong, reproduced in
// their style: each must be an error code with a message (or, where CANN computes anyway, a
// result), never a crash, an out-of-bounds access or a free of garbage. Runs under ASan + UBSan in
// `make test-asan`, whose leak checker also sees that aclFinalize releases what the sample leaks.
#include <cmath>
#include <cstdint>
#include <vector>

#include "aclnnop/aclnn_lightning_indexer.h"
#include "aclnnop/aclnn_lightning_indexer_grad.h"
#include "check.h"
#include "sample_util.h"

namespace {

const int64_t kB = 2, kS1 = 3, kS2 = 8, kN1 = 4, kD = 16, kK = 6;

struct Tensor {
    void *addr = nullptr;
    aclTensor *tensor = nullptr;
};

template <typename T>
Tensor Make(const std::vector<T> &host, const std::vector<int64_t> &shape, aclDataType dtype) {
    Tensor t;
    CHECK(CreateAclTensor(host, shape, &t.addr, dtype, &t.tensor) == 0);
    return t;
}

void Release(Tensor &t) {
    CHECK_EQ_INT(aclDestroyTensor(t.tensor), ACLNN_SUCCESS);
    CHECK_EQ_INT(aclrtFree(t.addr), ACL_SUCCESS);
    t = Tensor();
}

// The grad sample's data: fp16 vectors filled with 1.0, which for aclFloat16 (a uint16_t) is the
// bit pattern 1, the value 2^-24, as on CANN.
void AclFloat16IsABitPattern() {
    std::vector<aclFloat16> v(4, 1.0);
    CHECK_EQ_INT(v[0], 1);
    CHECK(aclFloat16ToFloat(v[0]) == std::ldexp(1.0f, -24));
    CHECK_EQ_INT(aclFloatToFloat16(1.0f), 0x3C00);
}

// dy shaped as CANN's documentation shows it, [B,S1,N1,D], instead of one value per selected slot.
void DyShapedAsDocumented(aclrtStream stream) {
    std::vector<int64_t> qShape{kB, kS1, kN1, kD}, kShape{kB, kS2, 1, kD}, slotShape{kB, kS1, kK}, wShape{kB, kS1, kN1};
    Tensor q = Make(std::vector<aclFloat16>(static_cast<size_t>(GetShapeSize(qShape)), aclFloatToFloat16(0.5f)),
                    qShape, ACL_FLOAT16);
    Tensor k = Make(std::vector<aclFloat16>(static_cast<size_t>(GetShapeSize(kShape)), aclFloatToFloat16(0.25f)),
                    kShape, ACL_FLOAT16);
    Tensor dyDoc = Make(std::vector<aclFloat16>(static_cast<size_t>(GetShapeSize(qShape)), 1.0), qShape, ACL_FLOAT16);
    Tensor dy = Make(std::vector<aclFloat16>(static_cast<size_t>(GetShapeSize(slotShape)), aclFloatToFloat16(1.0f)),
                     slotShape, ACL_FLOAT16);
    Tensor idx = Make(std::vector<int32_t>(static_cast<size_t>(GetShapeSize(slotShape)), 1), slotShape, ACL_INT32);
    Tensor w = Make(std::vector<aclFloat16>(static_cast<size_t>(GetShapeSize(wShape)), aclFloatToFloat16(1.0f)),
                    wShape, ACL_FLOAT16);
    Tensor dq = Make(std::vector<aclFloat16>(static_cast<size_t>(GetShapeSize(qShape))), qShape, ACL_FLOAT16);
    Tensor dk = Make(std::vector<aclFloat16>(static_cast<size_t>(GetShapeSize(kShape))), kShape, ACL_FLOAT16);
    Tensor dw = Make(std::vector<aclFloat16>(static_cast<size_t>(GetShapeSize(wShape))), wShape, ACL_FLOAT16);
    char layout[] = "BSND";
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor;  // uninitialised, as in the sample: phase 1 must not need it set
    auto ret = aclnnLightningIndexerGradGetWorkspaceSize(q.tensor, k.tensor, dyDoc.tensor, idx.tensor, w.tensor,
                                                         nullptr, nullptr, kN1, layout, 3, 65536, 65536, true,
                                                         dq.tensor, dk.tensor, dw.tensor, &workspaceSize, &executor);
    CHECK_EQ_INT(ret, ACLNN_ERR_PARAM_INVALID);
    const char *msg = aclGetRecentErrMsg();
    CHECK_MSG_HAS(msg, "dy: got shape [2,3,4,16]");
    CHECK_MSG_HAS(msg, "[B,S1,N1,D]");
    CHECK_MSG_HAS(msg, "shaped like sparseIndices: [2,3,6]");
    CHECK_EQ_INT(workspaceSize, 0);

    // An executor that is not one (the sample's uninitialised variable, here a stack address).
    uint64_t garbage = 0;
    CHECK_EQ_INT(aclnnLightningIndexerGrad(nullptr, 0, reinterpret_cast<aclOpExecutor *>(&garbage), stream),
                 ACLNN_ERR_PARAM_INVALID);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "not a live executor");

    // With dy shaped as the kernels read it, the same call runs.
    ret = aclnnLightningIndexerGradGetWorkspaceSize(q.tensor, k.tensor, dy.tensor, idx.tensor, w.tensor, nullptr,
                                                    nullptr, kN1, layout, 3, 65536, 65536, true, dq.tensor, dk.tensor,
                                                    dw.tensor, &workspaceSize, &executor);
    CHECK_EQ_INT(ret, ACLNN_SUCCESS);
    void *workspaceAddr = nullptr;
    if (ret == ACLNN_SUCCESS && workspaceSize > 0)
        CHECK_EQ_INT(aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    if (ret == ACLNN_SUCCESS) CHECK_EQ_INT(aclnnLightningIndexerGrad(workspaceAddr, workspaceSize, executor, stream), ACLNN_SUCCESS);
    CHECK_EQ_INT(aclrtSynchronizeStream(stream), ACL_SUCCESS);

    // The sample's PrintOutResult reads the fp16 dQuery as float: twice the bytes the allocation
    // holds. An error, and the host buffer untouched.
    auto size = GetShapeSize(qShape);
    std::vector<float> resultData(static_cast<size_t>(size), 0);
    CHECK_EQ_INT(aclrtMemcpy(resultData.data(), resultData.size() * sizeof(resultData[0]), dq.addr,
                             static_cast<size_t>(size) * sizeof(resultData[0]), ACL_MEMCPY_DEVICE_TO_HOST),
                 ACL_ERROR_INVALID_PARAM);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "run past the end of its allocation");
    bool untouched = true;
    for (float f : resultData) untouched = untouched && f == 0.0f;
    CHECK(untouched);
    // Read as what it is, the result is there: 0.5 * 0.25 * 16 > 0, so every dQuery element is w * k.
    std::vector<aclFloat16> dqHost;
    CHECK(CopyOut(dqHost, dq.addr, static_cast<size_t>(size)) == 0);
    CHECK(!dqHost.empty() && aclFloat16ToFloat(dqHost[0]) > 0.0f);

    if (workspaceAddr) CHECK_EQ_INT(aclrtFree(workspaceAddr), ACL_SUCCESS);
    Tensor *all[] = {&q, &k, &dyDoc, &dy, &idx, &w, &dq, &dk, &dw};
    for (Tensor *t : all) Release(*t);
}

// The forward sample fills fp16 tensors from std::vector<float>: the bytes are reinterpreted (as on
// CANN), the allocation is twice what the tensor needs, and the operator runs.
void FloatVectorsAsFp16(aclrtStream stream) {
    std::vector<int64_t> qShape{1, 2, 1, 128}, wShape{1, 2, 1}, outShape{1, 2, 1, 2048};
    Tensor q = Make(std::vector<float>(256, 1), qShape, ACL_FLOAT16);
    Tensor k = Make(std::vector<float>(256, 1), qShape, ACL_FLOAT16);
    Tensor w = Make(std::vector<float>(2, 1), wShape, ACL_FLOAT16);
    Tensor idx = Make(std::vector<int32_t>(4096, 1), outShape, ACL_INT32);
    Tensor val = Make(std::vector<float>(4096, 1), outShape, ACL_FLOAT16);
    char layoutQuery[] = "BSND", layoutKey[] = "BSND";
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    auto ret = aclnnLightningIndexerGetWorkspaceSize(q.tensor, k.tensor, w.tensor, nullptr, nullptr, nullptr,
                                                     layoutQuery, layoutKey, 2048, 3, INT64_MAX, INT64_MAX, true,
                                                     idx.tensor, val.tensor, &workspaceSize, &executor);
    CHECK_EQ_INT(ret, ACLNN_SUCCESS);
    void *workspaceAddr = nullptr;
    if (ret == ACLNN_SUCCESS && workspaceSize > 0)
        CHECK_EQ_INT(aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    if (ret == ACLNN_SUCCESS) CHECK_EQ_INT(aclnnLightningIndexer(workspaceAddr, workspaceSize, executor, stream), ACLNN_SUCCESS);
    std::vector<int32_t> indices;
    CHECK(CopyOut(indices, idx.addr, 4096) == 0);
    // sparse mode 3 with S1 = S2 = 2: row 0 sees key 0, row 1 keys 0 and 1; the rest is padding
    CHECK(indices.size() == 4096 && indices[0] == 0 && indices[1] == -1 && indices[2048 + 2] == -1);
    if (workspaceAddr) CHECK_EQ_INT(aclrtFree(workspaceAddr), ACL_SUCCESS);
    Tensor *all[] = {&q, &k, &w, &idx, &val};
    for (Tensor *t : all) Release(*t);
}

}  // namespace

int main() {
    int32_t deviceId = 0;
    aclrtContext context;
    aclrtStream stream;
    CHECK_EQ_INT(Init(deviceId, &context, &stream), 0);
    AclFloat16IsABitPattern();
    DyShapedAsDocumented(stream);
    FloatVectorsAsFp16(stream);

    // The sample's FreeResource receives &context and &stream and passes them on.
    aclrtStream *streamPtr = &stream;
    aclrtContext *contextPtr = &context;
    CHECK_EQ_INT(aclrtDestroyStream(streamPtr), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "&stream");
    CHECK_EQ_INT(aclrtDestroyContext(contextPtr), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_MSG_HAS(aclGetRecentErrMsg(), "&context");
    CHECK_EQ_INT(aclrtResetDevice(deviceId), ACL_SUCCESS);
    CHECK_EQ_INT(aclFinalize(), ACL_SUCCESS);  // releases the stream and context the sample leaked
    return check_report("aclnn-misuse");
}

// aclnnLightningIndexerGrad, called the way CANN's operator samples call it (device, context,
// stream, aclrtMalloc + aclrtMemcpy, aclCreateTensor, the two phases, synchronize, copy back,
// destroy everything), then checked element for element against lig_indexer_grad on the same data.
//   case 1: BSND, FLOAT16, INT32 indices, sparse mode 3 (CANN's documented configuration, smaller)
//   case 2: TND, BFLOAT16, INT64 indices, N2 = 2, FLOAT32 dWeights, a token band, a query that is a
//           strided view and a dQuery at an element offset (the front end must honour both)
#include <algorithm>
#include <cstdint>
#include <vector>

#include "aclnnop/aclnn_lightning_indexer_grad.h"
#include "sample_util.h"

namespace {

struct GradCase {
    const char *name;
    const char *layout;
    aclDataType dtype, indexType, dWeightsType;
    int64_t batch, s1, s2;  // BSND: per-batch lengths; TND: s1 = T1, s2 = T2
    int64_t n1, n2, d, topK;
    std::vector<int64_t> cumQ, cumK;  // TND's cumulative ends
    int64_t sparseMode, preTokens, nextTokens;
    bool stridedQuery;
    int64_t dQueryPad;  // elements of dQuery's allocation before its view
};

struct Shapes {
    std::vector<int64_t> q, k, slots, w;
};

Shapes ShapesOf(const GradCase &c) {
    bool tnd = c.layout[0] == 'T';
    std::vector<int64_t> rows = tnd ? std::vector<int64_t>{c.s1} : std::vector<int64_t>{c.batch, c.s1};
    std::vector<int64_t> keys = tnd ? std::vector<int64_t>{c.s2} : std::vector<int64_t>{c.batch, c.s2};
    Shapes s;
    s.q = rows, s.k = keys, s.slots = rows, s.w = rows;
    s.q.insert(s.q.end(), {c.n1, c.d});
    s.k.insert(s.k.end(), {c.n2, c.d});
    if (c.n2 > 1) s.slots.push_back(c.n2);
    s.slots.push_back(c.topK);
    s.w.push_back(c.n1);
    return s;
}

// Indices a forward pass could have produced: distinct keys of the row's batch, visible under
// sparse mode 3 when it is on, -1 in slots left over.
std::vector<int64_t> MakeIndices(const GradCase &c, Lcg &rng) {
    bool tnd = c.layout[0] == 'T';
    int64_t rows = tnd ? c.s1 : c.batch * c.s1;
    std::vector<int64_t> idx(static_cast<size_t>(rows * c.n2 * c.topK), -1);
    for (int64_t r = 0; r < rows; r++) {
        int64_t b = 0, t = r, lq = c.s1, lk = c.s2;
        if (tnd) {
            while (r >= c.cumQ[b]) b++;
            int64_t q0 = b ? c.cumQ[b - 1] : 0, k0 = b ? c.cumK[b - 1] : 0;
            t = r - q0, lq = c.cumQ[b] - q0, lk = c.cumK[b] - k0;
        } else {
            b = r / c.s1, t = r % c.s1;
        }
        int64_t visible = c.sparseMode == 3 ? lk - lq + t + 1 : lk;
        for (int64_t g = 0; g < c.n2; g++) {
            std::vector<int64_t> pool;
            for (int64_t s = 0; s < visible; s++) pool.push_back(s);
            int64_t take = visible < c.topK ? visible : c.topK;
            if (r == 0 && take > 2) take -= 2;  // some padding in every case
            for (int64_t j = 0; j < take; j++) {
                int64_t pick = j + rng.Below(static_cast<int64_t>(pool.size()) - j);
                std::swap(pool[static_cast<size_t>(j)], pool[static_cast<size_t>(pick)]);
                idx[static_cast<size_t>((r * c.n2 + g) * c.topK + j)] = pool[static_cast<size_t>(j)];
            }
        }
    }
    return idx;
}

template <typename I>
std::vector<I> As(const std::vector<int64_t> &v) {
    return std::vector<I>(v.begin(), v.end());
}

struct Inputs {
    std::vector<uint16_t> q, k, dy, w;
    std::vector<int64_t> idx;
};

// dQuery, dKey, dWeights as the front end produced them, and as lig's own API did.
struct Outputs {
    std::vector<uint16_t> dq, dk;
    std::vector<unsigned char> dw;  // dWeights' bytes (half or float)
    std::vector<uint16_t> dqPadding;
};

int RunAclnn(const GradCase &c, const Inputs &in, Outputs &out) {
    Shapes sh = ShapesOf(c);
    int32_t deviceId = 0;
    aclrtContext context = nullptr;
    aclrtStream stream = nullptr;
    auto ret = Init(deviceId, &context, &stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

    void *qAddr = nullptr, *kAddr = nullptr, *dyAddr = nullptr, *idxAddr = nullptr, *wAddr = nullptr;
    void *dqAddr = nullptr, *dkAddr = nullptr, *dwAddr = nullptr, *aqAddr = nullptr, *akAddr = nullptr;
    aclTensor *q = nullptr, *k = nullptr, *dy = nullptr, *idx = nullptr, *w = nullptr;
    aclTensor *dq = nullptr, *dk = nullptr, *dw = nullptr, *aq = nullptr, *ak = nullptr;
    int64_t nq = GetShapeSize(sh.q), nk = GetShapeSize(sh.k), nw = GetShapeSize(sh.w);

    if (c.stridedQuery) {  // the query is the second half of each [.., 2D] row of a wider tensor
        std::vector<uint16_t> storage(static_cast<size_t>(nq * 2), 0x7fc0);  // NaN as fp16 and bf16
        for (int64_t i = 0; i < nq; i++) storage[static_cast<size_t>((i / c.d) * 2 * c.d + c.d + i % c.d)] = in.q[i];
        std::vector<int64_t> strides = ContiguousStrides(sh.q);
        for (size_t i = 0; i + 1 < strides.size(); i++) strides[i] *= 2;
        ret = CreateAclView(storage, sh.q, strides, c.d, &qAddr, c.dtype, &q);
    } else {
        ret = CreateAclTensor(in.q, sh.q, &qAddr, c.dtype, &q);
    }
    CHECK_RET(ret == 0, return ret);
    CHECK_RET(CreateAclTensor(in.k, sh.k, &kAddr, c.dtype, &k) == 0, return -1);
    CHECK_RET(CreateAclTensor(in.dy, sh.slots, &dyAddr, c.dtype, &dy) == 0, return -1);
    if (c.indexType == ACL_INT32)
        ret = CreateAclTensor(As<int32_t>(in.idx), sh.slots, &idxAddr, ACL_INT32, &idx);
    else
        ret = CreateAclTensor(in.idx, sh.slots, &idxAddr, ACL_INT64, &idx);
    CHECK_RET(ret == 0, return ret);
    CHECK_RET(CreateAclTensor(in.w, sh.w, &wAddr, c.dtype, &w) == 0, return -1);
    if (!c.cumQ.empty()) {
        CHECK_RET(CreateAclTensor(c.cumQ, {static_cast<int64_t>(c.cumQ.size())}, &aqAddr, ACL_INT64, &aq) == 0,
                  return -1);
        CHECK_RET(CreateAclTensor(c.cumK, {static_cast<int64_t>(c.cumK.size())}, &akAddr, ACL_INT64, &ak) == 0,
                  return -1);
    }
    // dQuery lives dQueryPad elements into its allocation; the padding must come back untouched.
    std::vector<uint16_t> dqStorage(static_cast<size_t>(nq + c.dQueryPad), 0x5555);
    CHECK_RET(CreateAclView(dqStorage, sh.q, ContiguousStrides(sh.q), c.dQueryPad, &dqAddr, c.dtype, &dq) == 0,
              return -1);
    CHECK_RET(CreateAclTensor(std::vector<uint16_t>(static_cast<size_t>(nk)), sh.k, &dkAddr, c.dtype, &dk) == 0,
              return -1);
    CHECK_RET(CreateAclTensor(std::vector<float>(static_cast<size_t>(nw)), sh.w, &dwAddr, c.dWeightsType, &dw) == 0,
              return -1);

    // Phase 1, workspace, phase 2, synchronize: the operator's two-phase protocol.
    std::vector<char> layout(c.layout, c.layout + std::strlen(c.layout) + 1);
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    ret = aclnnLightningIndexerGradGetWorkspaceSize(q, k, dy, idx, w, aq, ak, c.n1, layout.data(), c.sparseMode,
                                                    c.preTokens, c.nextTokens, true, dq, dk, dw, &workspaceSize,
                                                    &executor);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnLightningIndexerGradGetWorkspaceSize failed. ERROR: %d (%s)\n", ret,
                                            aclGetRecentErrMsg());
              return ret);
    void *workspaceAddr = nullptr;
    if (workspaceSize > 0) {
        ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
    }
    ret = aclnnLightningIndexerGrad(workspaceAddr, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS,
              LOG_PRINT("aclnnLightningIndexerGrad failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
              return ret);
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

    std::vector<uint16_t> dqAll;
    CHECK_RET(CopyOut(dqAll, dqAddr, static_cast<size_t>(nq + c.dQueryPad)) == 0, return -1);
    out.dqPadding.assign(dqAll.begin(), dqAll.begin() + c.dQueryPad);
    out.dq.assign(dqAll.begin() + c.dQueryPad, dqAll.end());
    CHECK_RET(CopyOut(out.dk, dkAddr, static_cast<size_t>(nk)) == 0, return -1);
    CHECK_RET(CopyOut(out.dw, dwAddr, static_cast<size_t>(nw) * aclDataTypeSize(c.dWeightsType)) == 0, return -1);

    return Release({q, k, dy, idx, w, dq, dk, dw, aq, ak},
                   {qAddr, kAddr, dyAddr, idxAddr, wAddr, dqAddr, dkAddr, dwAddr, aqAddr, akAddr, workspaceAddr},
                   stream, context, deviceId);
}

// The same computation through lig's own API, on contiguous host copies.
int RunLig(const GradCase &c, Inputs in, Outputs &out) {
    Shapes sh = ShapesOf(c);
    lig_dtype dt = LigDtype(c.dtype), dwt = LigDtype(c.dWeightsType);
    std::vector<int32_t> idx32 = As<int32_t>(in.idx);
    std::vector<int64_t> cumQ = c.cumQ, cumK = c.cumK;
    out.dq.assign(static_cast<size_t>(GetShapeSize(sh.q)), 0);
    out.dk.assign(static_cast<size_t>(GetShapeSize(sh.k)), 0);
    out.dw.assign(static_cast<size_t>(GetShapeSize(sh.w)) * aclDataTypeSize(c.dWeightsType), 0);
    lig_tensor *q = LigTensor(in.q, dt, sh.q), *k = LigTensor(in.k, dt, sh.k), *dy = LigTensor(in.dy, dt, sh.slots);
    lig_tensor *idx = c.indexType == ACL_INT32 ? LigTensor(idx32, LIG_INT32, sh.slots) : LigTensor(in.idx, LIG_INT64, sh.slots);
    lig_tensor *w = LigTensor(in.w, dt, sh.w);
    lig_tensor *aq = cumQ.empty() ? nullptr : LigTensor(cumQ, LIG_INT64, {static_cast<int64_t>(cumQ.size())});
    lig_tensor *ak = cumK.empty() ? nullptr : LigTensor(cumK, LIG_INT64, {static_cast<int64_t>(cumK.size())});
    lig_tensor *dq = LigTensor(out.dq, dt, sh.q), *dk = LigTensor(out.dk, dt, sh.k);
    lig_tensor *dw = lig_create_tensor(out.dw.data(), dwt, static_cast<int64_t>(sh.w.size()), sh.w.data(), nullptr);
    uint64_t ws = 0;
    lig_executor *plan = nullptr;
    lig_status st = lig_indexer_grad_get_workspace_size(q, k, dy, idx, w, aq, ak, c.n1, c.layout, c.sparseMode,
                                                        c.preTokens, c.nextTokens, true, dq, dk, dw, &ws, &plan);
    st = LigRun(st, ws, plan, lig_indexer_grad);
    if (st != LIG_SUCCESS) LOG_PRINT("lig_indexer_grad failed: %s\n", lig_get_last_error());
    lig_tensor *all[] = {q, k, dy, idx, w, aq, ak, dq, dk, dw};
    for (lig_tensor *t : all) lig_destroy_tensor(t);
    return st == LIG_SUCCESS ? 0 : 1;
}

int RunCase(const GradCase &c, uint64_t seed) {
    Shapes sh = ShapesOf(c);
    Lcg rng(seed);
    Inputs in;
    in.q = RandomHalf(rng, GetShapeSize(sh.q), c.dtype);
    in.k = RandomHalf(rng, GetShapeSize(sh.k), c.dtype);
    in.dy = RandomHalf(rng, GetShapeSize(sh.slots), c.dtype);
    in.w = RandomHalf(rng, GetShapeSize(sh.w), c.dtype, 0.0f, 1.0f);
    in.idx = MakeIndices(c, rng);

    Outputs got, want;
    if (RunAclnn(c, in, got) != 0 || RunLig(c, in, want) != 0) return 1;
    int64_t bad = CountMismatches("dQuery", got.dq, want.dq) + CountMismatches("dKey", got.dk, want.dk) +
                  CountMismatches("dWeights", got.dw, want.dw);
    int64_t written = 0;
    for (uint16_t v : got.dqPadding) written += v != 0x5555;
    if (written) {
        bad += written;
        LOG_PRINT("dQuery: %lld elements before its view were written\n", static_cast<long long>(written));
    }
    bool nonzero = false;  // a result of all zeros would match a run that did nothing
    for (uint16_t v : got.dq) nonzero = nonzero || (v & 0x7fff) != 0;
    if (!nonzero) {
        bad++;
        LOG_PRINT("dQuery is all zeros\n");
    }
    return Verdict(c.name, bad, "matches lig_indexer_grad bit for bit");
}

}  // namespace

int main() {
    GradCase bsnd{"BSND fp16", "BSND", ACL_FLOAT16, ACL_INT32, ACL_FLOAT16, 2, 3, 64, 8, 1, 32, 16, {}, {},
                  3, 65536, 65536, false, 0};
    GradCase tnd{"TND bf16 strided", "TND", ACL_BF16, ACL_INT64, ACL_FLOAT, 2, 5, 20, 4, 2, 16, 4, {2, 5}, {8, 20},
                 0, 5, 2, true, 7};
    int failed = RunCase(bsnd, 1) + RunCase(tnd, 2);
    return failed ? 1 : 0;
}

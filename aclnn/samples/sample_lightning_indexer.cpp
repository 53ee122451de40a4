// aclnnLightningIndexer (scores + top-k), called the way CANN's operator sample calls it (aclInit,
// device, stream, layouts copied with memcpy_s, aclrtMalloc + aclCreateTensor, the two phases),
// then checked against lig_indexer on the same data.
//   case 1: BSND, FLOAT16, per-batch key lengths, sparse mode 3, returnValues true
//   case 2: TND, BFLOAT16, cumulative lengths, sparse mode 0, returnValues false (sparseValuesOut
//           is passed, as CANN's sample does, and must come back untouched)
//   case 3: BSND, FLOAT16 query and key with FLOAT32 weights (CANN's A2/A3 kernels take this mix),
//           checked against lig run in FLOAT32 on the widened inputs, scores rounded to FLOAT16
#include <cstdint>
#include <vector>

#include "aclnnop/aclnn_lightning_indexer.h"
#include "sample_util.h"
#include "securec.h"

namespace {

struct FwdCase {
    const char *name;
    const char *layout;
    aclDataType dtype, weightsType;
    int64_t batch, s1, s2;  // TND: s1 = T1, s2 = T2
    int64_t n1, n2, d, sparseCount;
    std::vector<int32_t> lenQ, lenK;  // BSND: per-batch lengths (optional); TND: cumulative ends
    int64_t sparseMode;
    bool returnValues;
};

struct Shapes {
    std::vector<int64_t> q, k, w, out;
};

Shapes ShapesOf(const FwdCase &c) {
    bool tnd = c.layout[0] == 'T';
    std::vector<int64_t> rows = tnd ? std::vector<int64_t>{c.s1} : std::vector<int64_t>{c.batch, c.s1};
    Shapes s;
    s.q = s.w = s.out = rows;
    s.k = tnd ? std::vector<int64_t>{c.s2} : std::vector<int64_t>{c.batch, c.s2};
    s.q.insert(s.q.end(), {c.n1, c.d});
    s.k.insert(s.k.end(), {c.n2, c.d});
    s.w.push_back(c.n1);
    s.out.insert(s.out.end(), {c.n2, c.sparseCount});
    return s;
}

struct Result {
    std::vector<int32_t> indices;
    std::vector<uint16_t> values;
};

const uint16_t kUntouched = 0x5a5a;

// Weights in the case's weights dtype: half bits, or floats.
struct Weights {
    std::vector<uint16_t> half;
    std::vector<float> full;
};

int RunAclnn(const FwdCase &c, std::vector<uint16_t> &q, std::vector<uint16_t> &k, const Weights &w, Result &out) {
    Shapes sh = ShapesOf(c);
    int32_t deviceId = 0;
    aclrtStream stream = nullptr;
    auto ret = aclInit(nullptr);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSetDevice(deviceId);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return ret);
    ret = aclrtCreateStream(&stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret); return ret);

    void *qAddr = nullptr, *kAddr = nullptr, *wAddr = nullptr, *idxAddr = nullptr, *valAddr = nullptr;
    void *aqAddr = nullptr, *akAddr = nullptr;
    aclTensor *qT = nullptr, *kT = nullptr, *wT = nullptr, *idxT = nullptr, *valT = nullptr, *aqT = nullptr,
              *akT = nullptr;
    int64_t nOut = GetShapeSize(sh.out);
    CHECK_RET(CreateAclTensor(q, sh.q, &qAddr, c.dtype, &qT) == 0, return -1);
    CHECK_RET(CreateAclTensor(k, sh.k, &kAddr, c.dtype, &kT) == 0, return -1);
    if (c.weightsType == ACL_FLOAT)
        CHECK_RET(CreateAclTensor(w.full, sh.w, &wAddr, ACL_FLOAT, &wT) == 0, return -1);
    else
        CHECK_RET(CreateAclTensor(w.half, sh.w, &wAddr, c.weightsType, &wT) == 0, return -1);
    CHECK_RET(CreateAclTensor(std::vector<int32_t>(static_cast<size_t>(nOut), 7), sh.out, &idxAddr, ACL_INT32, &idxT) == 0,
              return -1);
    CHECK_RET(CreateAclTensor(std::vector<uint16_t>(static_cast<size_t>(nOut), kUntouched), sh.out, &valAddr, c.dtype,
                              &valT) == 0,
              return -1);
    if (!c.lenQ.empty())
        CHECK_RET(CreateAclTensor(c.lenQ, {static_cast<int64_t>(c.lenQ.size())}, &aqAddr, ACL_INT32, &aqT) == 0,
                  return -1);
    if (!c.lenK.empty())
        CHECK_RET(CreateAclTensor(c.lenK, {static_cast<int64_t>(c.lenK.size())}, &akAddr, ACL_INT32, &akT) == 0,
                  return -1);

    char layoutQuery[8], layoutKey[8];
    CHECK_RET(memcpy_s(layoutQuery, sizeof layoutQuery, c.layout, std::strlen(c.layout) + 1) == EOK, return -1);
    CHECK_RET(memcpy_s(layoutKey, sizeof layoutKey, c.layout, std::strlen(c.layout) + 1) == EOK, return -1);
    int64_t preTokens = INT64_MAX, nextTokens = INT64_MAX;
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    ret = aclnnLightningIndexerGetWorkspaceSize(qT, kT, wT, aqT, akT, nullptr, layoutQuery, layoutKey, c.sparseCount,
                                                c.sparseMode, preTokens, nextTokens, c.returnValues, idxT, valT,
                                                &workspaceSize, &executor);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnLightningIndexerGetWorkspaceSize failed. ERROR: %d (%s)\n", ret,
                                            aclGetRecentErrMsg());
              return ret);
    void *workspaceAddr = nullptr;
    if (workspaceSize > 0ULL) {
        ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
    }
    ret = aclnnLightningIndexer(workspaceAddr, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS,
              LOG_PRINT("aclnnLightningIndexer failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg()); return ret);
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);
    CHECK_RET(CopyOut(out.indices, idxAddr, static_cast<size_t>(nOut)) == 0, return -1);
    CHECK_RET(CopyOut(out.values, valAddr, static_cast<size_t>(nOut)) == 0, return -1);

    return Release({qT, kT, wT, idxT, valT, aqT, akT},
                   {qAddr, kAddr, wAddr, idxAddr, valAddr, aqAddr, akAddr, workspaceAddr}, stream, nullptr, deviceId);
}

float Widen(uint16_t h, aclDataType dtype) { return HalfToFloat(h, dtype); }

// lig's own API on the same data: in the case's dtype, or, with FLOAT32 weights, in FLOAT32 on the
// widened query and key with the scores rounded to the query's dtype afterwards.
int RunLig(const FwdCase &c, std::vector<uint16_t> &q, std::vector<uint16_t> &k, Weights w, Result &out) {
    Shapes sh = ShapesOf(c);
    bool widen = c.weightsType == ACL_FLOAT;
    lig_dtype dt = widen ? LIG_FLOAT32 : LigDtype(c.dtype);
    std::vector<float> qf, kf, vf;
    for (uint16_t h : q) qf.push_back(Widen(h, c.dtype));
    for (uint16_t h : k) kf.push_back(Widen(h, c.dtype));
    std::vector<int32_t> lenQ = c.lenQ, lenK = c.lenK;
    out.indices.assign(static_cast<size_t>(GetShapeSize(sh.out)), 0);
    out.values.assign(out.indices.size(), kUntouched);
    vf.assign(out.indices.size(), 0.0f);
    lig_tensor *qT = widen ? LigTensor(qf, dt, sh.q) : LigTensor(q, dt, sh.q);
    lig_tensor *kT = widen ? LigTensor(kf, dt, sh.k) : LigTensor(k, dt, sh.k);
    lig_tensor *wT = widen ? LigTensor(w.full, dt, sh.w) : LigTensor(w.half, dt, sh.w);
    lig_tensor *aqT = lenQ.empty() ? nullptr : LigTensor(lenQ, LIG_INT32, {static_cast<int64_t>(lenQ.size())});
    lig_tensor *akT = lenK.empty() ? nullptr : LigTensor(lenK, LIG_INT32, {static_cast<int64_t>(lenK.size())});
    lig_tensor *idxT = LigTensor(out.indices, LIG_INT32, sh.out);
    lig_tensor *valT = !c.returnValues ? nullptr : widen ? LigTensor(vf, dt, sh.out) : LigTensor(out.values, dt, sh.out);
    lig_status st = LigIndexer("lig_indexer", qT, kT, wT, aqT, akT, c.layout, c.sparseCount, c.sparseMode, idxT, valT);
    if (widen && c.returnValues)
        for (size_t i = 0; i < vf.size(); i++)
            out.values[i] = c.dtype == ACL_BF16 ? ToBf16(vf[i]) : aclFloatToFloat16(vf[i]);
    lig_tensor *all[] = {qT, kT, wT, aqT, akT, idxT, valT};
    for (lig_tensor *t : all) lig_destroy_tensor(t);
    return st == LIG_SUCCESS ? 0 : 1;
}

// Sparse mode 3 pads exactly the slots a row cannot fill: K - (Lk - Lq + t + 1) of them.
int64_t CheckPadding(const FwdCase &c, const std::vector<int32_t> &indices) {
    if (c.sparseMode != 3 || c.layout[0] != 'B') return 0;
    int64_t bad = 0;
    for (int64_t b = 0; b < c.batch; b++) {
        int64_t lk = c.lenK.empty() ? c.s2 : c.lenK[static_cast<size_t>(b)];
        for (int64_t t = 0; t < c.s1; t++) {
            int64_t visible = lk - c.s1 + t + 1;
            visible = visible < 0 ? 0 : visible;
            int64_t pads = 0;
            for (int64_t j = 0; j < c.sparseCount; j++) {
                int32_t v = indices[static_cast<size_t>((b * c.s1 + t) * c.sparseCount + j)];
                pads += v == -1;
                if (v < -1 || v >= visible) bad++;
            }
            int64_t want = c.sparseCount > visible ? c.sparseCount - visible : 0;
            if (pads != want) bad++;
        }
    }
    if (bad) LOG_PRINT("sparse mode 3: %lld rows or indices outside the visible keys\n", static_cast<long long>(bad));
    return bad;
}

int RunCase(const FwdCase &c, uint64_t seed) {
    Shapes sh = ShapesOf(c);
    Lcg rng(seed);
    std::vector<uint16_t> q = RandomHalf(rng, GetShapeSize(sh.q), c.dtype);
    std::vector<uint16_t> k = RandomHalf(rng, GetShapeSize(sh.k), c.dtype);
    Weights w;
    if (c.weightsType == ACL_FLOAT)
        for (int64_t i = 0; i < GetShapeSize(sh.w); i++) w.full.push_back(rng.Uniform(0.0f, 1.0f));
    else
        w.half = RandomHalf(rng, GetShapeSize(sh.w), c.weightsType, 0.0f, 1.0f);
    Result got, want;
    if (RunAclnn(c, q, k, w, got) != 0 || RunLig(c, q, k, w, want) != 0) return 1;
    int64_t bad = CountMismatches("sparseIndicesOut", got.indices, want.indices) +
                  CountMismatches("sparseValuesOut", got.values, want.values) + CheckPadding(c, got.indices);
    bad += NoneSelected(got.indices);
    return Verdict(c.name, bad, "matches lig_indexer bit for bit");
}

}  // namespace

int main() {
    FwdCase bsnd{"BSND fp16", "BSND", ACL_FLOAT16, ACL_FLOAT16, 2, 4, 48, 8, 1, 32, 16, {}, {48, 29}, 3, true};
    FwdCase tnd{"TND bf16", "TND", ACL_BF16, ACL_BF16, 2, 7, 45, 4, 1, 16, 8, {3, 7}, {20, 45}, 0, false};
    FwdCase mixed{"BSND fp16 with fp32 weights", "BSND", ACL_FLOAT16, ACL_FLOAT, 2, 3, 40, 8, 1, 32, 12, {}, {40, 17},
                  3, true};
    int failed = RunCase(bsnd, 11) + RunCase(tnd, 12) + RunCase(mixed, 13);
    return failed ? 1 : 0;
}

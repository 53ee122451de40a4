// aclnnLightningIndexerV2 (CANN's V4-era indexer over compressed keys), called the way CANN's
// sample calls it, checked against a float64 evaluation of CANN's formula written here:
//   I[t,s] = sum over the heads h of  w[t,h] * ReLU(q[t,h,:] . k[s,:])   over the entries row t sees
// (sample_v2_check.h counts them entry by entry), with the bound |I - I_exact| <= 2 (D + G + 4) 2^-24
// sum |w q_d k_d| (q and k are widened exactly and scored in fp32): every index set the bounds
// decide must be the reference's exactly, no left-out entry may certainly outrank a selected one,
// each value must lie within its score's bound, unused slots hold -1 and -inf.
//   case 1: CANN's doc sample: FLOAT16, BSND, B 2, S1 64, N1 16, D 128, topk 32, cmpRatio 4, 130
//           original keys (32 entries, residual 2), maskMode 3, returnValue 1
//   case 2: BFLOAT16, TND with cuSeqlens and shorter sequsedQ, residuals 3/0/1, outputIdxOffset,
//           returnValue 0 with a values tensor (filled with -inf), a trailing row outside every batch
//   case 3: FLOAT16, BSND query (S1 3: MTP) over a PA_BBND cache (shuffled blocks), maskMode 0
// Each case runs the 950's workflow: aclnnLightningIndexerV2Metadata first, its output handed to the
// indexer (lig-aclnn writes a description there and the indexer does not read it).
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "aclnnop/aclnn_lightning_indexer_v2.h"
#include "aclnnop/aclnn_lightning_indexer_v2_metadata.h"
#include "sample_v2_check.h"

namespace {

struct V2Case {
    const char *name;
    aclDataType dtype;
    V2Shape shape;
    std::vector<int32_t> residual;  // empty: not passed
    int64_t n1, d, topk, cmpRatio, maskMode;
    bool offset, returnValue, fillValues;
};

int RunCase(const V2Case &c, uint64_t seed) {
    Lcg rng(seed);
    const V2Shape &sh = c.shape;
    V2Layout p = BuildLayout(sh, rng);
    const int64_t g = c.n1;  // N2 is 1, as CANN's V2 requires
    std::vector<uint16_t> q = RandomHalf(rng, p.rows * c.n1 * c.d, c.dtype);
    std::vector<uint16_t> k = RandomHalf(rng, p.keyRows * c.d, c.dtype);
    std::vector<float> w(static_cast<size_t>(p.rows * c.n1));
    for (auto &x : w) x = rng.Uniform(-1.0f, 1.0f);
    const std::vector<int32_t> offset = RandomOffsets(rng, p.rows, 1000);
    const std::vector<int64_t> outShape = Extend(RowExtents(sh, p), {1, c.topk});
    const int64_t nOut = GetShapeSize(outShape);

    int32_t deviceId = 0;
    aclrtContext context = nullptr;
    aclrtStream stream = nullptr;
    CHECK_RET(Init(deviceId, &context, &stream) == 0, return 1);
    void *qAddr = nullptr, *kAddr = nullptr, *wAddr = nullptr, *idxAddr = nullptr, *valAddr = nullptr,
         *workspaceAddr = nullptr;
    aclTensor *qT = nullptr, *kT = nullptr, *wT = nullptr, *idxT = nullptr, *valT = nullptr;
    V2Lengths len;
    CHECK_RET(CreateAclTensor(q, Extend(RowExtents(sh, p), {c.n1, c.d}), &qAddr, c.dtype, &qT) == 0, return 1);
    CHECK_RET(CreateAclTensor(k, Extend(KeyExtents(sh, p), {1, c.d}), &kAddr, c.dtype, &kT) == 0, return 1);
    CHECK_RET(CreateAclTensor(w, Extend(RowExtents(sh, p), {c.n1}), &wAddr, ACL_FLOAT, &wT) == 0, return 1);
    CHECK_RET(len.Create(sh, p, c.residual, c.offset ? &offset : nullptr) == 0, return 1);
    CHECK_RET(CreateAclTensor(std::vector<int32_t>(static_cast<size_t>(nOut), 7), outShape, &idxAddr, ACL_INT32, &idxT) == 0,
              return 1);
    if (c.returnValue || c.fillValues)
        CHECK_RET(CreateAclTensor(std::vector<float>(static_cast<size_t>(nOut), 7.0f), outShape, &valAddr, ACL_FLOAT, &valT) == 0,
                  return 1);

    std::vector<char> layoutQ(sh.layoutQ, sh.layoutQ + std::strlen(sh.layoutQ) + 1);
    std::vector<char> layoutK(sh.layoutK, sh.layoutK + std::strlen(sh.layoutK) + 1);
    // the 950's workflow: the metadata op first, its output handed to the indexer
    void *metaAddr = nullptr, *metaWorkspace = nullptr;
    aclTensor *metaT = nullptr;
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    CHECK_RET(CreateAclTensor(std::vector<int32_t>(1024, 0), {1024}, &metaAddr, ACL_INT32, &metaT) == 0, return 1);
    int planned = aclnnLightningIndexerV2MetadataGetWorkspaceSize(
        len.cuQ, len.cuK, len.usedQ, len.usedK, len.residual, c.n1, 1, c.d, c.topk, sh.batch, p.rows, p.keyRows,
        layoutQ.data(), layoutK.data(), c.maskMode, c.cmpRatio, metaT, &workspaceSize, &executor);
    CHECK_RET(RunV2(c.name, "aclnnLightningIndexerV2Metadata", planned, aclnnLightningIndexerV2Metadata, workspaceSize,
                    executor, stream, &metaWorkspace) == 0,
              return 1);
    planned = aclnnLightningIndexerV2GetWorkspaceSize(qT, kT, wT, len.cuQ, len.cuK, len.usedQ, len.usedK, len.residual,
                                                      len.table, len.offset, metaT, c.topk, p.rows, layoutQ.data(),
                                                      layoutK.data(), c.maskMode, c.cmpRatio, c.returnValue ? 1 : 0,
                                                      idxT, valT, &workspaceSize, &executor);
    CHECK_RET(RunV2(c.name, "aclnnLightningIndexerV2", planned, aclnnLightningIndexerV2, workspaceSize, executor, stream,
                    &workspaceAddr) == 0,
              return 1);
    std::vector<int32_t> idx;
    std::vector<float> val;
    CHECK_RET(CopyOut(idx, idxAddr, static_cast<size_t>(nOut)) == 0, return 1);
    if (valT) CHECK_RET(CopyOut(val, valAddr, static_cast<size_t>(nOut)) == 0, return 1);

    const double unit = 2.0 * static_cast<double>(c.d + g + 4) * std::ldexp(1.0, -24);
    auto score = [&](int64_t r, int64_t b, int64_t s) {
        const uint16_t *kr = &k[static_cast<size_t>(p.KeyRow(sh, b, s) * c.d)];
        double total = 0, mag = 0;
        for (int64_t h = 0; h < c.n1; h++) {
            const uint16_t *qr = &q[static_cast<size_t>((r * c.n1 + h) * c.d)];
            double dot = 0, m = 0;
            for (int64_t e = 0; e < c.d; e++) {
                double prod = static_cast<double>(HalfToFloat(qr[e], c.dtype)) * HalfToFloat(kr[e], c.dtype);
                dot += prod, m += std::fabs(prod);
            }
            const double wv = w[static_cast<size_t>(r * c.n1 + h)];
            total += wv * std::max(dot, 0.0);
            mag += std::fabs(wv) * m;
        }
        return Scored{s, total, unit * mag};
    };
    const V2Run run{c.residual, c.cmpRatio, c.maskMode, c.topk, c.offset ? &offset : nullptr, c.returnValue,
                    c.fillValues, 0.0};
    const int verdict = CheckRows(c.name, sh, p, run, idx, std::vector<double>(val.begin(), val.end()), score);
    CHECK_RET(len.Destroy() == 0, return 1);
    CHECK_RET(Release({qT, kT, wT, idxT, valT, metaT}, {qAddr, kAddr, wAddr, idxAddr, valAddr, workspaceAddr, metaAddr,
                                                       metaWorkspace},
                      stream, context, deviceId) == 0,
              return 1);
    return verdict;
}

}  // namespace

int main() {
    const V2Case cases[] = {
        {"doc sample: FLOAT16 BSND, cmpRatio 4, residual 2, maskMode 3", ACL_FLOAT16,
         {"BSND", "BSND", 2, 64, 32, {64, 64}, {32, 32}, false, 0}, {2, 2}, 16, 128, 32, 4, 3, false, true, false},
        {"BFLOAT16 TND, sequsedQ, outputIdxOffset, returnValue 0", ACL_BF16,
         {"TND", "TND", 3, 0, 0, {5, 9, 4}, {40, 7, 21}, true, 0}, {3, 0, 1}, 8, 64, 8, 4, 3, true, false, true},
        {"FLOAT16 BSND query, PA_BBND cache, maskMode 0", ACL_FLOAT16,
         {"BSND", "PA_BBND", 2, 3, 0, {3, 3}, {50, 13}, false, 16}, {}, 4, 128, 16, 4, 0, false, true, false},
    };
    int failed = 0;
    uint64_t seed = 11;
    for (const V2Case &c : cases) failed += RunCase(c, seed++);
    return failed ? 1 : 0;
}

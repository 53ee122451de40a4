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
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "aclnnop/aclnn_lightning_indexer_v2.h"
#include "sample_v2_check.h"

namespace {

struct V2Case {
    const char *name;
    aclDataType dtype;
    const char *layoutQ, *layoutK;
    int64_t batch, s1, s2;             // BSND extents (s2: key capacity)
    std::vector<int64_t> lenQ, lenK;   // used rows, compressed entries
    std::vector<int32_t> residual;     // empty: not passed
    int64_t n1, d, topk, cmpRatio, maskMode;
    bool usedQ, offset, returnValue, fillValues;
    int64_t blockSize;                 // PA_BBND
};

struct Built {
    bool tndQ, tndK, paged;
    int64_t rows, keyRows;
    std::vector<int32_t> cuQ, cuK, usedQ, usedK, table;
    std::vector<int64_t> rowBatch, rowT;  // -1: outside every batch
    std::vector<int64_t> keyBase;         // per batch (TND)
    int64_t maxBlocks = 0, blockNum = 0;

    int64_t KeyRow(const V2Case &c, int64_t b, int64_t s) const {
        if (paged) return table[static_cast<size_t>(b * maxBlocks + s / c.blockSize)] * c.blockSize + s % c.blockSize;
        return tndK ? keyBase[static_cast<size_t>(b)] + s : b * c.s2 + s;
    }
};

Built Build(const V2Case &c, Lcg &rng) {
    Built p;
    p.tndQ = c.layoutQ[0] == 'T';
    p.tndK = c.layoutK[0] == 'T';
    p.paged = c.layoutK[0] == 'P';
    if (p.tndQ) {
        p.cuQ.push_back(0);
        for (int64_t b = 0; b < c.batch; b++) {
            int64_t seg = c.lenQ[b] + (c.usedQ ? 2 : 0);
            for (int64_t t = 0; t < seg; t++) p.rowBatch.push_back(b), p.rowT.push_back(t);
            p.cuQ.push_back(p.cuQ.back() + static_cast<int32_t>(seg));
        }
        p.rowBatch.push_back(-1), p.rowT.push_back(0);  // a row past cuSeqlensQ[B]
        p.rows = static_cast<int64_t>(p.rowBatch.size());
    } else {
        for (int64_t b = 0; b < c.batch; b++)
            for (int64_t t = 0; t < c.s1; t++) p.rowBatch.push_back(b), p.rowT.push_back(t);
        p.rows = c.batch * c.s1;
    }
    for (int64_t b = 0; b < c.batch; b++) p.usedQ.push_back(static_cast<int32_t>(c.lenQ[b]));
    for (int64_t b = 0; b < c.batch; b++) p.usedK.push_back(static_cast<int32_t>(c.lenK[b]));
    if (p.tndK) {
        p.cuK.push_back(0);
        for (int64_t b = 0; b < c.batch; b++) {
            p.keyBase.push_back(p.cuK.back());
            p.cuK.push_back(p.cuK.back() + static_cast<int32_t>(c.lenK[b]));
        }
        p.keyRows = p.cuK.back();
    } else if (p.paged) {
        for (int64_t b = 0; b < c.batch; b++)
            p.maxBlocks = std::max<int64_t>(p.maxBlocks, (c.lenK[b] + c.blockSize - 1) / c.blockSize);
        p.blockNum = c.batch * p.maxBlocks + 3;  // spare blocks nobody reads
        std::vector<int32_t> pool(static_cast<size_t>(p.blockNum));
        std::iota(pool.begin(), pool.end(), 0);
        for (size_t i = pool.size() - 1; i > 0; i--) std::swap(pool[i], pool[static_cast<size_t>(rng.Below(static_cast<int64_t>(i) + 1))]);
        p.table.assign(pool.begin(), pool.begin() + c.batch * p.maxBlocks);
        p.keyRows = p.blockNum * c.blockSize;
    } else {
        p.keyRows = c.batch * c.s2;
    }
    return p;
}

int RunCase(const V2Case &c, uint64_t seed) {
    Lcg rng(seed);
    Built p = Build(c, rng);
    const int64_t n2 = 1, g = c.n1 / n2;
    std::vector<uint16_t> q = RandomHalf(rng, p.rows * c.n1 * c.d, c.dtype);
    std::vector<uint16_t> k = RandomHalf(rng, p.keyRows * n2 * c.d, c.dtype);
    std::vector<float> w(static_cast<size_t>(p.rows * c.n1));
    for (auto &x : w) x = rng.Uniform(-1.0f, 1.0f);
    std::vector<int32_t> offset(static_cast<size_t>(p.rows * n2));
    for (auto &x : offset) x = static_cast<int32_t>(rng.Below(1000));

    std::vector<int64_t> rowShape = p.tndQ ? std::vector<int64_t>{p.rows} : std::vector<int64_t>{c.batch, c.s1};
    std::vector<int64_t> qShape = rowShape, wShape = rowShape, outShape = rowShape, offShape = rowShape;
    qShape.insert(qShape.end(), {c.n1, c.d});
    wShape.push_back(c.n1);
    outShape.insert(outShape.end(), {n2, c.topk});
    offShape.push_back(n2);
    std::vector<int64_t> kShape = p.tndK ? std::vector<int64_t>{p.keyRows, n2, c.d}
                                  : p.paged ? std::vector<int64_t>{p.blockNum, c.blockSize, n2, c.d}
                                            : std::vector<int64_t>{c.batch, c.s2, n2, c.d};
    const int64_t nOut = GetShapeSize(outShape);

    int32_t deviceId = 0;
    aclrtContext context = nullptr;
    aclrtStream stream = nullptr;
    CHECK_RET(Init(deviceId, &context, &stream) == 0, return 1);
    void *qAddr = nullptr, *kAddr = nullptr, *wAddr = nullptr, *cuQAddr = nullptr, *cuKAddr = nullptr,
         *usedQAddr = nullptr, *usedKAddr = nullptr, *resAddr = nullptr, *btAddr = nullptr, *offAddr = nullptr,
         *idxAddr = nullptr, *valAddr = nullptr, *workspaceAddr = nullptr;
    aclTensor *qT = nullptr, *kT = nullptr, *wT = nullptr, *cuQT = nullptr, *cuKT = nullptr, *usedQT = nullptr,
              *usedKT = nullptr, *resT = nullptr, *btT = nullptr, *offT = nullptr, *idxT = nullptr, *valT = nullptr;
    CHECK_RET(CreateAclTensor(q, qShape, &qAddr, c.dtype, &qT) == 0, return 1);
    CHECK_RET(CreateAclTensor(k, kShape, &kAddr, c.dtype, &kT) == 0, return 1);
    CHECK_RET(CreateAclTensor(w, wShape, &wAddr, ACL_FLOAT, &wT) == 0, return 1);
    if (p.tndQ) CHECK_RET(CreateAclTensor(p.cuQ, {c.batch + 1}, &cuQAddr, ACL_INT32, &cuQT) == 0, return 1);
    if (p.tndK) CHECK_RET(CreateAclTensor(p.cuK, {c.batch + 1}, &cuKAddr, ACL_INT32, &cuKT) == 0, return 1);
    if (c.usedQ) CHECK_RET(CreateAclTensor(p.usedQ, {c.batch}, &usedQAddr, ACL_INT32, &usedQT) == 0, return 1);
    if (p.paged || (!p.tndK && c.s2 != c.lenK[0]))
        CHECK_RET(CreateAclTensor(p.usedK, {c.batch}, &usedKAddr, ACL_INT32, &usedKT) == 0, return 1);
    if (!c.residual.empty()) CHECK_RET(CreateAclTensor(c.residual, {c.batch}, &resAddr, ACL_INT32, &resT) == 0, return 1);
    if (p.paged) CHECK_RET(CreateAclTensor(p.table, {c.batch, p.maxBlocks}, &btAddr, ACL_INT32, &btT) == 0, return 1);
    if (c.offset) CHECK_RET(CreateAclTensor(offset, offShape, &offAddr, ACL_INT32, &offT) == 0, return 1);
    CHECK_RET(CreateAclTensor(std::vector<int32_t>(static_cast<size_t>(nOut), 7), outShape, &idxAddr, ACL_INT32, &idxT) == 0,
              return 1);
    if (c.returnValue || c.fillValues)
        CHECK_RET(CreateAclTensor(std::vector<float>(static_cast<size_t>(nOut), 7.0f), outShape, &valAddr, ACL_FLOAT, &valT) == 0,
                  return 1);

    std::vector<char> layoutQ(c.layoutQ, c.layoutQ + std::strlen(c.layoutQ) + 1);
    std::vector<char> layoutK(c.layoutK, c.layoutK + std::strlen(c.layoutK) + 1);
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    int ret = aclnnLightningIndexerV2GetWorkspaceSize(qT, kT, wT, cuQT, cuKT, usedQT, usedKT, resT, btT, offT, nullptr,
                                                      c.topk, p.rows, layoutQ.data(), layoutK.data(), c.maskMode,
                                                      c.cmpRatio, c.returnValue ? 1 : 0, idxT, valT, &workspaceSize,
                                                      &executor);
    CHECK_RET(ret == ACL_SUCCESS,
              LOG_PRINT("%s: aclnnLightningIndexerV2GetWorkspaceSize failed. ERROR: %d (%s)\n", c.name, ret,
                        aclGetRecentErrMsg());
              return 1);
    CHECK_RET(RunPhase2("aclnnLightningIndexerV2", aclnnLightningIndexerV2, workspaceSize, executor, stream,
                        &workspaceAddr) == 0,
              return 1);
    std::vector<int32_t> idx;
    std::vector<float> val;
    CHECK_RET(CopyOut(idx, idxAddr, static_cast<size_t>(nOut)) == 0, return 1);
    if (valT) CHECK_RET(CopyOut(val, valAddr, static_cast<size_t>(nOut)) == 0, return 1);

    V2Checker check;
    const double unit = 2.0 * static_cast<double>(c.d + g + 4) * std::ldexp(1.0, -24);
    int64_t selected = 0;
    for (int64_t r = 0; r < p.rows; r++) {
        const int64_t b = p.rowBatch[static_cast<size_t>(r)], t = p.rowT[static_cast<size_t>(r)];
        const int64_t res = c.residual.empty() || b < 0 ? 0 : c.residual[static_cast<size_t>(b)];
        const int64_t vis = b < 0 ? 0 : VisibleEntries(c.lenK[b], c.lenQ[b], res, c.cmpRatio, c.maskMode, t);
        std::vector<Scored> ref;
        for (int64_t s = 0; s < vis; s++) {
            const uint16_t *kr = &k[static_cast<size_t>(p.KeyRow(c, b, s) * c.d)];
            double score = 0, mag = 0;
            for (int64_t h = 0; h < c.n1; h++) {
                const uint16_t *qr = &q[static_cast<size_t>((r * c.n1 + h) * c.d)];
                double dot = 0, m = 0;
                for (int64_t e = 0; e < c.d; e++) {
                    double prod = static_cast<double>(HalfToFloat(qr[e], c.dtype)) * HalfToFloat(kr[e], c.dtype);
                    dot += prod, m += std::fabs(prod);
                }
                const double wv = w[static_cast<size_t>(r * c.n1 + h)];
                score += wv * std::max(dot, 0.0);
                mag += std::fabs(wv) * m;
            }
            ref.push_back({s, score, unit * mag});
        }
        std::vector<int64_t> slots(static_cast<size_t>(c.topk));
        std::vector<double> values(static_cast<size_t>(c.topk));
        for (int64_t j = 0; j < c.topk; j++) {
            int64_t v = idx[static_cast<size_t>(r * c.topk + j)];
            if (v != -1 && c.offset) v -= offset[static_cast<size_t>(r)];
            slots[static_cast<size_t>(j)] = v;
            selected += v >= 0;
            if (!val.empty()) values[static_cast<size_t>(j)] = val[static_cast<size_t>(r * c.topk + j)];
        }
        if (c.fillValues)
            for (double v : values)
                if (!(std::isinf(v) && v < 0)) check.Fail("returnValue 0: a value is not -inf", r, 0);
        check.Check(r, 0, slots.data(), c.returnValue ? values.data() : nullptr, c.topk, ref, 0.0);
    }
    if (selected == 0) check.Fail("no entry was selected", -1, 0);
    CHECK_RET(Release({qT, kT, wT, cuQT, cuKT, usedQT, usedKT, resT, btT, offT, idxT, valT},
                      {qAddr, kAddr, wAddr, cuQAddr, cuKAddr, usedQAddr, usedKAddr, resAddr, btAddr, offAddr, idxAddr,
                       valAddr, workspaceAddr},
                      stream, context, deviceId) == 0,
              return 1);
    return check.Verdict(c.name);
}

}  // namespace

int main() {
    const V2Case cases[] = {
        {"doc sample: FLOAT16 BSND, cmpRatio 4, residual 2, maskMode 3", ACL_FLOAT16, "BSND", "BSND", 2, 64, 32,
         {64, 64}, {32, 32}, {2, 2}, 16, 128, 32, 4, 3, false, false, true, false, 0},
        {"BFLOAT16 TND, sequsedQ, outputIdxOffset, returnValue 0", ACL_BF16, "TND", "TND", 3, 0, 0, {5, 9, 4},
         {40, 7, 21}, {3, 0, 1}, 8, 64, 8, 4, 3, true, true, false, true, 0},
        {"FLOAT16 BSND query, PA_BBND cache, maskMode 0", ACL_FLOAT16, "BSND", "PA_BBND", 2, 3, 0, {3, 3}, {50, 13},
         {}, 4, 128, 16, 4, 0, false, false, true, false, 16},
    };
    int failed = 0;
    uint64_t seed = 11;
    for (const V2Case &c : cases) failed += RunCase(c, seed++);
    return failed ? 1 : 0;
}

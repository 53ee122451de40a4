// aclnnQuantLightningIndexer (CANN's quantized indexer forward), called the way CANN's samples call
// it, on realistic quantized data: keys sharing a direction per key head plus noise, queries built
// from a few keys of their batch, both quantized per (token, head) as DeepSeek-V3.2's indexer does
// (scale = amax / 448 for FP8 E4M3FN, amax / 127 for INT8). The result is checked two ways:
//   - against a float64 evaluation of the formula of docs/contract.md 2.4, written here,
//       I[t,g,s] = sum over the heads h of key head g of  w[t,h] * ReLU( sq[t,h] * sk[s,g] * (q[t,h,:] . k[s,g,:]) ),
//     with contract 2.4's error bound |I - I_exact| <= 2 (D + G + 4) 2^-24 sum |w sq sk q_d k_d|: the index
//     set must be the reference's exactly wherever every selected key's score is apart from every
//     left-out key's by more than their bounds, and nowhere may a left-out key certainly outrank a
//     selected one (nor a later slot an earlier one);
//   - bit for bit against lig's own lig_quant_indexer on the same host data.
//   case 1: FP8, BSND query and key with per-batch lengths, BF16 weights, FLOAT scales, sparse mode 3
//   case 2: INT8, TND query, PA_BSND key cache (shuffled table, unused blocks with NaN scales), FLOAT16
//           weights and scales, sparse mode 3
//   case 3: FP8, TND query and key, two key heads, FLOAT16 weights and scales, sparse mode 0 with a band
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "aclnnop/aclnn_quant_lightning_indexer.h"
#include "sample_util.h"

namespace {

struct QuantCase {
    const char *name;
    aclDataType codes;  // ACL_FLOAT8_E4M3FN or ACL_INT8
    const char *layoutQuery, *layoutKey;
    int64_t batch, s1, s2;  // BSND extents (TND: unused)
    std::vector<int64_t> lenQ, lenK;
    int64_t n1, n2, d, sparseCount;
    aclDataType wDtype, sqDtype, skDtype;
    int64_t sparseMode, preTokens, nextTokens;
    int64_t blockSize, spareBlocks;  // PA_BSND
};

// OCP FP8 E4M3FN: S.EEEE.MMM, bias 7, E = 0 subnormal, S.1111.111 NaN, no infinities.
double Fp8ToDouble(uint8_t b) {
    int e = (b >> 3) & 15, m = b & 7;
    if (e == 15 && m == 7) return NAN;
    double v = e == 0 ? std::ldexp(m, -9) : std::ldexp(8 + m, e - 10);
    return (b & 0x80) ? -v : v;
}

double CodeValue(aclDataType codes, uint8_t c) {
    return codes == ACL_INT8 ? static_cast<double>(static_cast<int8_t>(c)) : Fp8ToDouble(c);
}

// A FLOAT, FLOAT16 or BFLOAT16 tensor's bytes, and the values they hold (what the reference reads).
struct Stored {
    aclDataType dtype;
    std::vector<uint8_t> bytes;
    std::vector<double> value;
    Stored(aclDataType dt, int64_t n) : dtype(dt), bytes(static_cast<size_t>(n) * aclDataTypeSize(dt), 0),
                                        value(static_cast<size_t>(n), 0.0) {}
    void Set(int64_t i, float x) {
        size_t at = static_cast<size_t>(i);
        if (dtype == ACL_FLOAT) {
            std::memcpy(&bytes[at * 4], &x, 4);
            value[at] = x;
            return;
        }
        uint16_t h = dtype == ACL_BF16 ? ToBf16(x) : aclFloatToFloat16(x);
        std::memcpy(&bytes[at * 2], &h, 2);
        value[at] = HalfToFloat(h, dtype);
    }
};

// The whole problem: codes and scales in the layouts the operator reads, and where each logical
// row lives in them.
struct Problem {
    const QuantCase &c;
    bool tndQ, tndK, paged;
    int64_t rowsQ, rowsK;  // storage rows of query and key (the cache's blockNum * blockSize)
    std::vector<int64_t> startQ, startK;
    int64_t maxBlocks = 0, blockNum = 0;
    std::vector<int32_t> table;
    std::vector<uint8_t> q, k;
    Stored w, sq, sk;
    explicit Problem(const QuantCase &qc)
        : c(qc), tndQ(qc.layoutQuery[0] == 'T'), tndK(qc.layoutKey[0] == 'T'),
          paged(std::string(qc.layoutKey) == "PA_BSND"), rowsQ(0), rowsK(0), w(qc.wDtype, 0), sq(qc.sqDtype, 0),
          sk(qc.skDtype, 0) {}
    int64_t QueryRow(int64_t b, int64_t i) const { return tndQ ? startQ[b] + i : b * c.s1 + i; }
    int64_t KeyRow(int64_t b, int64_t s) const {
        if (paged) return table[static_cast<size_t>(b * maxBlocks + s / c.blockSize)] * c.blockSize + s % c.blockSize;
        return tndK ? startK[b] + s : b * c.s2 + s;
    }
};

float Gauss(Lcg &rng) { return rng.Uniform(-1, 1) + rng.Uniform(-1, 1) + rng.Uniform(-1, 1); }

// Per (token, head) symmetric quantization of x[0..d), DeepSeek's act_quant: returns the scale.
float Quantize(aclDataType codes, const float *x, int64_t d, uint8_t *out) {
    float amax = 1e-4f;
    for (int64_t i = 0; i < d; i++) amax = std::max(amax, std::fabs(x[i]));
    float scale = amax / (codes == ACL_INT8 ? 127.0f : 448.0f);
    for (int64_t i = 0; i < d; i++) {
        float v = x[i] / scale;
        out[i] = codes == ACL_INT8 ? static_cast<uint8_t>(static_cast<int8_t>(std::max(-127.0f, std::min(127.0f, std::nearbyint(v)))))
                                   : lig_float_to_float8_e4m3fn(v);
    }
    return scale;
}

void Build(Problem &p, uint64_t seed) {
    const QuantCase &c = p.c;
    Lcg rng(seed);
    int64_t totalQ = 0, totalK = 0;
    for (int64_t b = 0; b < c.batch; b++) {
        p.startQ.push_back(totalQ);
        p.startK.push_back(totalK);
        totalQ += c.lenQ[b];
        totalK += c.lenK[b];
    }
    p.rowsQ = p.tndQ ? totalQ : c.batch * c.s1;
    if (p.paged) {
        for (int64_t b = 0; b < c.batch; b++)
            p.maxBlocks = std::max(p.maxBlocks, (c.lenK[b] + c.blockSize - 1) / c.blockSize);
        p.blockNum = c.batch * p.maxBlocks + c.spareBlocks;
        std::vector<int32_t> order(static_cast<size_t>(p.blockNum));
        for (size_t i = 0; i < order.size(); i++) order[i] = static_cast<int32_t>(i);
        for (size_t i = order.size() - 1; i > 0; i--) std::swap(order[i], order[static_cast<size_t>(rng.Below(static_cast<int64_t>(i) + 1))]);
        p.table.assign(order.begin(), order.begin() + c.batch * p.maxBlocks);  // the spare blocks are never listed
        p.rowsK = p.blockNum * c.blockSize;
    } else {
        p.rowsK = p.tndK ? totalK : c.batch * c.s2;
    }
    const int64_t g = c.n1 / c.n2, d = c.d;
    // every byte random first: rows no batch owns hold garbage codes, and their key scales NaN
    p.q.resize(static_cast<size_t>(p.rowsQ * c.n1 * d));
    p.k.resize(static_cast<size_t>(p.rowsK * c.n2 * d));
    for (auto &x : p.q) x = static_cast<uint8_t>(rng.Next());
    for (auto &x : p.k) x = static_cast<uint8_t>(rng.Next() & 0x77);  // no NaN codes even where unread
    p.w = Stored(c.wDtype, p.rowsQ * c.n1);
    p.sq = Stored(c.sqDtype, p.rowsQ * c.n1);
    p.sk = Stored(c.skDtype, p.rowsK * c.n2);
    for (int64_t i = 0; i < p.rowsK * c.n2; i++) p.sk.Set(i, NAN);
    for (int64_t i = 0; i < p.rowsQ * c.n1; i++) {
        p.w.Set(i, 1.0f);
        p.sq.Set(i, 1.0f);
    }
    std::vector<float> x(static_cast<size_t>(d));
    for (int64_t b = 0; b < c.batch; b++) {
        // keys: a shared direction per key head (as real indexer keys have) plus noise
        std::vector<float> keys(static_cast<size_t>(c.lenK[b] * c.n2 * d)), dir(static_cast<size_t>(c.n2 * d));
        for (auto &v : dir) v = Gauss(rng);
        for (int64_t s = 0; s < c.lenK[b]; s++)
            for (int64_t h = 0; h < c.n2; h++) {
                float *kv = &keys[static_cast<size_t>((s * c.n2 + h) * d)];
                for (int64_t e = 0; e < d; e++) kv[e] = 0.7f * dir[static_cast<size_t>(h * d + e)] + Gauss(rng);
                int64_t row = p.KeyRow(b, s);
                p.sk.Set(row * c.n2 + h, Quantize(c.codes, kv, d, &p.k[static_cast<size_t>((row * c.n2 + h) * d)]));
            }
        // queries: each head leans towards two or three keys of its batch, against the shared direction
        for (int64_t i = 0; i < c.lenQ[b]; i++) {
            int64_t row = p.QueryRow(b, i);
            for (int64_t h = 0; h < c.n1; h++) {
                int64_t kh = h / g;
                for (int64_t e = 0; e < d; e++) x[static_cast<size_t>(e)] = 0.8f * Gauss(rng) - 0.3f * dir[static_cast<size_t>(kh * d + e)];
                for (int pick = 0, n = 2 + static_cast<int>(rng.Below(2)); pick < n && c.lenK[b] > 0; pick++) {
                    const float *kv = &keys[static_cast<size_t>((rng.Below(c.lenK[b]) * c.n2 + kh) * d)];
                    for (int64_t e = 0; e < d; e++) x[static_cast<size_t>(e)] += kv[e];
                }
                int64_t at = row * c.n1 + h;
                p.sq.Set(at, Quantize(c.codes, x.data(), d, &p.q[static_cast<size_t>(at * d)]));
                p.w.Set(at, rng.Uniform(-0.25f, 1.0f) / std::sqrt(static_cast<float>(c.n1)));
            }
        }
    }
}

// The visible keys [lo, hi] of row i of a batch with lq rows and lk keys (docs/contract.md 4);
// empty when lo > hi. A band wider than the batch is no band (INT64_MAX included).
void Visible(const QuantCase &c, int64_t lq, int64_t lk, int64_t i, int64_t *lo, int64_t *hi) {
    const bool causal = c.sparseMode == 3;
    const int64_t base = causal ? lk - lq + i : i, wide = lk + lq + 1;
    *lo = std::max<int64_t>(base - std::min(c.preTokens, wide), 0);
    *hi = std::min<int64_t>(causal ? base : base + std::min(c.nextTokens, wide), lk - 1);
}

struct Scored {
    int64_t key;
    double score, bound;
};

// Whether a certainly ranks above b in any evaluation within the bounds: apart by more than both
// bounds, or both exact, equal, and a the lower key.
bool Above(const Scored &a, const Scored &b) {
    if (a.score - a.bound > b.score + b.bound) return true;
    return a.bound == 0 && b.bound == 0 && a.score == b.score && a.key < b.key;
}

// The float64 formula for one (row, key head) over its visible keys, with each score's bound. For
// INT8 a head whose exact product is <= 0 adds exactly 0 in fp32 as well (the integer dot is exact
// and the scale products keep its sign), so only the positive heads enter the bound.
std::vector<Scored> Reference(const Problem &p, int64_t b, int64_t i, int64_t kh) {
    const QuantCase &c = p.c;
    const int64_t g = c.n1 / c.n2, d = c.d, qrow = p.QueryRow(b, i);
    const double unit = 2.0 * static_cast<double>(d + g + 4) * std::ldexp(1.0, -24);
    int64_t lo, hi;
    Visible(c, c.lenQ[b], c.lenK[b], i, &lo, &hi);
    std::vector<Scored> out;
    for (int64_t s = lo; s <= hi; s++) {
        int64_t krow = p.KeyRow(b, s);
        double skv = p.sk.value[static_cast<size_t>(krow * c.n2 + kh)], score = 0, bound = 0;
        const uint8_t *kc = &p.k[static_cast<size_t>((krow * c.n2 + kh) * d)];
        for (int64_t h = kh * g; h < (kh + 1) * g; h++) {
            const uint8_t *qc = &p.q[static_cast<size_t>((qrow * c.n1 + h) * d)];
            double dot = 0, mag = 0;
            for (int64_t e = 0; e < d; e++) {
                double prod = CodeValue(c.codes, qc[e]) * CodeValue(c.codes, kc[e]);
                dot += prod;
                mag += std::fabs(prod);
            }
            double wv = p.w.value[static_cast<size_t>(qrow * c.n1 + h)], sqv = p.sq.value[static_cast<size_t>(qrow * c.n1 + h)];
            double xv = sqv * skv * dot;
            score += xv > 0 ? wv * xv : 0.0;
            if (c.codes != ACL_INT8 || xv > 0) bound += unit * std::fabs(wv * sqv * skv) * mag;
        }
        out.push_back({s, score, bound});
    }
    std::sort(out.begin(), out.end(), [](const Scored &a, const Scored &x) {
        return a.score != x.score ? a.score > x.score : a.key < x.key;
    });
    return out;
}

// Checks the operator's indices against the reference; counts the (row, key head) lists whose set
// the bounds decide, and the mismatches.
int64_t CheckReference(const Problem &p, const std::vector<int32_t> &got, int64_t *exactLists, int64_t *lists) {
    const QuantCase &c = p.c;
    int64_t bad = 0;
    auto fail = [&bad](const char *what, int64_t b, int64_t i, int64_t kh) {
        if (bad++ < 5) LOG_PRINT("  batch %lld row %lld key head %lld: %s\n", (long long)b, (long long)i, (long long)kh, what);
    };
    const int64_t rowsPerBatch = p.tndQ ? 0 : c.s1;
    for (int64_t b = 0; b < c.batch; b++) {
        int64_t rows = p.tndQ ? c.lenQ[b] : rowsPerBatch;
        for (int64_t i = 0; i < rows; i++)
            for (int64_t kh = 0; kh < c.n2; kh++) {
                const int32_t *slot = &got[static_cast<size_t>((p.QueryRow(b, i) * c.n2 + kh) * c.sparseCount)];
                std::vector<Scored> ref = i < c.lenQ[b] ? Reference(p, b, i, kh) : std::vector<Scored>();
                int64_t kp = std::min<int64_t>(c.sparseCount, static_cast<int64_t>(ref.size()));
                std::vector<const Scored *> pick;
                for (int64_t j = 0; j < c.sparseCount; j++) {
                    if (j >= kp) {
                        if (slot[j] != -1) fail("a slot past the visible keys is not -1", b, i, kh);
                        continue;
                    }
                    const Scored *hit = nullptr;
                    for (const Scored &r : ref)
                        if (r.key == slot[j]) hit = &r;
                    for (const Scored *seen : pick)
                        if (hit == seen) hit = nullptr;
                    if (!hit) {
                        fail("a selected index is not a visible key, or is repeated", b, i, kh);
                        continue;
                    }
                    if (!pick.empty() && Above(*hit, *pick.back())) fail("a later slot certainly outranks an earlier one", b, i, kh);
                    pick.push_back(hit);
                }
                if (kp == 0) continue;
                (*lists)++;
                // nothing left out may certainly outrank anything selected
                for (const Scored &r : ref)
                    if (std::find(pick.begin(), pick.end(), &r) == pick.end())
                        for (const Scored *s : pick)
                            if (Above(r, *s)) {
                                fail("a left-out key certainly outranks a selected one", b, i, kh);
                                break;
                            }
                // where the bounds decide the set, it is the reference's exactly
                bool decided = true;
                for (int64_t a = 0; a < kp && decided; a++)
                    for (size_t o = static_cast<size_t>(kp); o < ref.size() && decided; o++) decided = Above(ref[a], ref[o]);
                if (!decided) continue;
                (*exactLists)++;
                std::vector<int64_t> want, have;
                for (int64_t a = 0; a < kp; a++) want.push_back(ref[a].key);
                for (const Scored *s : pick) have.push_back(s->key);
                std::sort(want.begin(), want.end());
                std::sort(have.begin(), have.end());
                if (want != have) fail("the index set differs from the reference's, which the bounds decide", b, i, kh);
            }
    }
    return bad;
}

std::vector<int64_t> QueryRows(const Problem &p) {
    return p.tndQ ? std::vector<int64_t>{p.rowsQ} : std::vector<int64_t>{p.c.batch, p.c.s1};
}

std::vector<int64_t> KeyRows(const Problem &p) {
    if (p.paged) return {p.blockNum, p.c.blockSize};
    return p.tndK ? std::vector<int64_t>{p.rowsK} : std::vector<int64_t>{p.c.batch, p.c.s2};
}

std::vector<int64_t> Append(std::vector<int64_t> v, std::initializer_list<int64_t> more) {
    v.insert(v.end(), more);
    return v;
}

// The lengths as the operator takes them: TND cumulative ends, otherwise per-batch lengths.
std::vector<int32_t> Lengths(const std::vector<int64_t> &len, bool cumulative) {
    std::vector<int32_t> out;
    int64_t total = 0;
    for (int64_t l : len) {
        total += l;
        out.push_back(static_cast<int32_t>(cumulative ? total : l));
    }
    return out;
}

// Device memory holding `bytes`, and a contiguous ND tensor of `dtype` over it.
int CreateRawTensor(const std::vector<uint8_t> &bytes, const std::vector<int64_t> &shape, aclDataType dtype,
                    void **deviceAddr, aclTensor **tensor) {
    auto ret = aclrtMalloc(deviceAddr, bytes.size(), ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
    ret = aclrtMemcpy(*deviceAddr, bytes.size(), bytes.data(), bytes.size(), ACL_MEMCPY_HOST_TO_DEVICE);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
    std::vector<int64_t> strides = ContiguousStrides(shape);
    *tensor = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                              shape.size(), *deviceAddr);
    CHECK_RET(*tensor != nullptr, LOG_PRINT("aclCreateTensor failed: %s\n", aclGetRecentErrMsg()); return -1);
    return 0;
}

// CANN's call; the indices in `out`.
int RunAclnn(const Problem &p, std::vector<int32_t> &out) {
    const QuantCase &c = p.c;
    std::vector<int64_t> outShape = Append(QueryRows(p), {c.n2, c.sparseCount});
    int32_t deviceId = 0;
    aclrtContext context = nullptr;
    aclrtStream stream = nullptr;
    CHECK_RET(Init(deviceId, &context, &stream) == 0, return -1);

    void *qAddr = nullptr, *kAddr = nullptr, *wAddr = nullptr, *sqAddr = nullptr, *skAddr = nullptr;
    void *lqAddr = nullptr, *lkAddr = nullptr, *btAddr = nullptr, *outAddr = nullptr, *workspaceAddr = nullptr;
    aclTensor *qT = nullptr, *kT = nullptr, *wT = nullptr, *sqT = nullptr, *skT = nullptr, *lqT = nullptr,
              *lkT = nullptr, *btT = nullptr, *outT = nullptr;
    CHECK_RET(CreateRawTensor(p.q, Append(QueryRows(p), {c.n1, c.d}), c.codes, &qAddr, &qT) == 0, return -1);
    CHECK_RET(CreateRawTensor(p.k, Append(KeyRows(p), {c.n2, c.d}), c.codes, &kAddr, &kT) == 0, return -1);
    CHECK_RET(CreateRawTensor(p.w.bytes, Append(QueryRows(p), {c.n1}), c.wDtype, &wAddr, &wT) == 0, return -1);
    CHECK_RET(CreateRawTensor(p.sq.bytes, Append(QueryRows(p), {c.n1}), c.sqDtype, &sqAddr, &sqT) == 0, return -1);
    CHECK_RET(CreateRawTensor(p.sk.bytes, Append(KeyRows(p), {c.n2}), c.skDtype, &skAddr, &skT) == 0, return -1);
    CHECK_RET(CreateAclTensor(Lengths(c.lenQ, p.tndQ), {c.batch}, &lqAddr, ACL_INT32, &lqT) == 0, return -1);
    CHECK_RET(CreateAclTensor(Lengths(c.lenK, p.tndK), {c.batch}, &lkAddr, ACL_INT32, &lkT) == 0, return -1);
    if (p.paged) CHECK_RET(CreateAclTensor(p.table, {c.batch, p.maxBlocks}, &btAddr, ACL_INT32, &btT) == 0, return -1);
    CHECK_RET(CreateAclTensor(std::vector<int32_t>(static_cast<size_t>(GetShapeSize(outShape)), 7), outShape, &outAddr,
                              ACL_INT32, &outT) == 0,
              return -1);

    std::vector<char> layoutQuery(c.layoutQuery, c.layoutQuery + std::strlen(c.layoutQuery) + 1);
    std::vector<char> layoutKey(c.layoutKey, c.layoutKey + std::strlen(c.layoutKey) + 1);
    int64_t queryQuantMode = 0, keyQuantMode = 0;
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    auto ret = aclnnQuantLightningIndexerGetWorkspaceSize(qT, kT, wT, sqT, skT, lqT, lkT, btT, queryQuantMode,
                                                          keyQuantMode, layoutQuery.data(), layoutKey.data(),
                                                          c.sparseCount, c.sparseMode, c.preTokens, c.nextTokens,
                                                          outT, &workspaceSize, &executor);
    CHECK_RET(ret == ACL_SUCCESS,
              LOG_PRINT("aclnnQuantLightningIndexerGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
              return ret);
    CHECK_RET(RunPhase2("aclnnQuantLightningIndexer", aclnnQuantLightningIndexer, workspaceSize, executor, stream,
                        &workspaceAddr) == 0,
              return -1);
    CHECK_RET(CopyOut(out, outAddr, static_cast<size_t>(GetShapeSize(outShape))) == 0, return -1);
    CHECK_RET(Release({qT, kT, wT, sqT, skT, lqT, lkT, btT, outT},
                      {qAddr, kAddr, wAddr, sqAddr, skAddr, lqAddr, lkAddr, btAddr, outAddr, workspaceAddr}, stream,
                      context, deviceId) == 0,
              return -1);
    return 0;
}

lig_dtype LigOf(aclDataType dt) {
    switch (dt) {
    case ACL_INT8: return LIG_INT8;
    case ACL_FLOAT8_E4M3FN: return LIG_FLOAT8_E4M3FN;
    case ACL_FLOAT16: return LIG_FLOAT16;
    case ACL_BF16: return LIG_BFLOAT16;
    default: return LIG_FLOAT32;
    }
}

lig_tensor *RawLig(const std::vector<uint8_t> &bytes, aclDataType dt, const std::vector<int64_t> &shape) {
    return lig_create_tensor(const_cast<uint8_t *>(bytes.data()), LigOf(dt), static_cast<int64_t>(shape.size()),
                             shape.data(), nullptr);
}

// lig's own call on the host data.
int RunLig(const Problem &p, std::vector<int32_t> &out) {
    const QuantCase &c = p.c;
    std::vector<int64_t> outShape = Append(QueryRows(p), {c.n2, c.sparseCount});
    out.assign(static_cast<size_t>(GetShapeSize(outShape)), 7);
    std::vector<int32_t> lq = Lengths(c.lenQ, p.tndQ), lk = Lengths(c.lenK, p.tndK), table = p.table;
    lig_tensor *qT = RawLig(p.q, c.codes, Append(QueryRows(p), {c.n1, c.d}));
    lig_tensor *kT = RawLig(p.k, c.codes, Append(KeyRows(p), {c.n2, c.d}));
    lig_tensor *wT = RawLig(p.w.bytes, c.wDtype, Append(QueryRows(p), {c.n1}));
    lig_tensor *sqT = RawLig(p.sq.bytes, c.sqDtype, Append(QueryRows(p), {c.n1}));
    lig_tensor *skT = RawLig(p.sk.bytes, c.skDtype, Append(KeyRows(p), {c.n2}));
    lig_tensor *lqT = LigTensor(lq, LIG_INT32, {c.batch}), *lkT = LigTensor(lk, LIG_INT32, {c.batch});
    lig_tensor *btT = p.paged ? LigTensor(table, LIG_INT32, {c.batch, p.maxBlocks}) : nullptr;
    lig_tensor *outT = LigTensor(out, LIG_INT32, outShape);
    uint64_t ws = 0;
    lig_executor *plan = nullptr;
    lig_status st = lig_quant_indexer_get_workspace_size(qT, kT, wT, sqT, skT, lqT, lkT, btT, 0, 0, c.layoutQuery,
                                                         c.layoutKey, c.sparseCount, c.sparseMode, c.preTokens,
                                                         c.nextTokens, outT, nullptr, &ws, &plan);
    st = LigRun(st, ws, plan, lig_quant_indexer);
    if (st != LIG_SUCCESS) LOG_PRINT("lig_quant_indexer failed: %s\n", lig_get_last_error());
    lig_tensor *all[] = {qT, kT, wT, sqT, skT, lqT, lkT, btT, outT};
    for (lig_tensor *t : all) lig_destroy_tensor(t);
    return st == LIG_SUCCESS ? 0 : 1;
}

int RunCase(const QuantCase &c, uint64_t seed) {
    Problem p(c);
    Build(p, seed);
    std::vector<int32_t> got, lig;
    if (RunAclnn(p, got) != 0 || RunLig(p, lig) != 0) {
        LOG_PRINT("%s: FAILED (a call failed)\n", c.name);
        return 1;
    }
    int64_t exact = 0, lists = 0;
    int64_t bad = CountMismatches("out", got, lig);
    bad += NoneSelected(got);
    bad += CheckReference(p, got, &exact, &lists);
    // the data is realistic only if the bounds decide most sets: else the check would prove little
    if (exact * 2 < lists) {
        LOG_PRINT("%s: only %lld of %lld index sets are decided by the bounds\n", c.name, (long long)exact,
                  (long long)lists);
        bad++;
    }
    std::string matched = "matches lig bit for bit and the float64 formula (" + std::to_string(exact) + " of " +
                          std::to_string(lists) + " index sets compared exactly)";
    return Verdict(c.name, bad, matched.c_str());
}

}  // namespace

int main() {
    const int64_t inf = INT64_MAX;
    QuantCase fp8Bsnd{"FP8 E4M3FN, BSND, bf16 weights, fp32 scales", ACL_FLOAT8_E4M3FN, "BSND", "BSND", 2, 6, 160,
                      {6, 4}, {160, 97}, 16, 1, 128, 48, ACL_BF16, ACL_FLOAT, ACL_FLOAT, 3, inf, inf, 0, 0};
    QuantCase int8Paged{"INT8, TND query, PA_BSND cache, fp16 weights and scales", ACL_INT8, "TND", "PA_BSND", 3, 0, 0,
                        {2, 1, 4}, {150, 33, 211}, 8, 1, 128, 64, ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16, 3, inf, inf,
                        16, 3};
    QuantCase fp8Band{"FP8 E4M3FN, TND, two key heads, band", ACL_FLOAT8_E4M3FN, "TND", "TND", 2, 0, 0, {40, 25},
                      {40, 25}, 8, 2, 128, 16, ACL_FLOAT16, ACL_FLOAT, ACL_FLOAT16, 0, 30, 4, 0, 0};
    int failed = RunCase(fp8Bsnd, 31) + RunCase(int8Paged, 32) + RunCase(fp8Band, 33);
    return failed ? 1 : 0;
}

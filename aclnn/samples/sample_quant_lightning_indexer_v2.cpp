// aclnnQuantLightningIndexerV2 (CANN's V4-era quantized indexer over compressed keys), called the
// way CANN's samples call it, checked against a float64 evaluation of CANN's formula written here:
//   I[t,s] = sum over the heads h of  w[t,h] * ReLU( sq[t,h] * sk[s] * (q[t,h,:] . k[s,:]) )
// over the entries row t sees (sample_v2_check.h counts them entry by entry), with contract 2.4's
// bound |I - I_exact| <= 2 (D + G + 4) 2^-24 sum |w sq sk q_d k_d|, and BFLOAT16 values within that
// bound plus their rounding. Index sets the bounds decide must be the reference's exactly.
//   case 1: quantMode 1 (FLOAT8_E4M3FN, FLOAT scales and weights), BSND with sequsedK, cmpRatio 4,
//           residuals 1/3, maskMode 3, MTP rows (S1 4), returnValue 1 (BFLOAT16 values)
//   case 2: quantMode 2 (INT8, FLOAT16 scales and weights), TND query with sequsedQ over a PA_BSND
//           cache, cmpRatio 2, outputIdxOffset, returnValue 0 (values filled with -inf)
//   case 3: quantMode 1, TND query and key, cmpRatio 128 with residuals 127 / 5: long prefills whose
//           first rows see fewer entries than later ones
//   case 4: quantMode 5 (MXFP4: ACL_FLOAT4_E2M1 codes counted in elements, two a byte, low nibble
//           first; FLOAT8_E8M0 scales shaped (.., D/64, 2), one per 32 values), BSND over PA_BSND,
//           cmpRatio 4: the scale of each 32-value block multiplies its part of the dot product
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "aclnnop/aclnn_quant_lightning_indexer_v2.h"
#include "sample_v2_check.h"

namespace {

struct QuantV2Case {
    const char *name;
    int64_t quantMode;  // 1: FLOAT8_E4M3FN codes, FLOAT scales; 2: INT8 codes, FLOAT16 scales; 5: MXFP4
    V2Shape shape;
    std::vector<int32_t> residual;
    int64_t n1, d, topk, cmpRatio;
    bool offset, returnValue;
};

// An E4M3FN code's value: S.EEEE.MMM, exponent bias 7, E = 0 subnormal.
double E4m3Value(uint8_t code) {
    const int e = (code >> 3) & 0xF, m = code & 0x7;
    const double mag = (e ? 1.0 + m / 8.0 : m / 8.0) * std::pow(2.0, (e ? e : 1) - 7);
    return (code & 0x80) ? -mag : mag;
}

// An E2M1 code's value (a nibble S.EE.M, exponent bias 1, E = 0 subnormal).
double E2m1Value(uint8_t nibble) {
    const int e = (nibble >> 1) & 3, m = nibble & 1;
    const double mag = e ? (2.0 + m) * std::pow(2.0, e - 2) : 0.5 * m;
    return (nibble & 8) ? -mag : mag;
}

// Packed FP4 codes as CANN takes them: an ACL_FLOAT4_E2M1 tensor whose extents, strides and storage
// count elements, two a byte.
int CreateFp4Tensor(const std::vector<uint8_t> &packed, const std::vector<int64_t> &shape, void **addr, aclTensor **t) {
    CHECK_RET(aclrtMalloc(addr, packed.size(), ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS, return 1);
    CHECK_RET(aclrtMemcpy(*addr, packed.size(), packed.data(), packed.size(), ACL_MEMCPY_HOST_TO_DEVICE) == ACL_SUCCESS,
              return 1);
    std::vector<int64_t> strides = ContiguousStrides(shape);
    int64_t storage = static_cast<int64_t>(packed.size()) * 2;
    *t = aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT4_E2M1, strides.data(), 0, ACL_FORMAT_ND, &storage, 1, *addr);
    CHECK_RET(*t != nullptr, LOG_PRINT("aclCreateTensor failed: %s\n", aclGetRecentErrMsg()); return 1);
    return 0;
}

// FLOAT or FLOAT16 data as the operator reads it, and the values the reference reads.
struct Floats {
    aclDataType dtype;
    std::vector<float> f32;
    std::vector<uint16_t> f16;
    std::vector<double> value;
    Floats(aclDataType dt, int64_t n, Lcg &rng, float lo, float hi) : dtype(dt) {
        for (int64_t i = 0; i < n; i++) {
            float x = rng.Uniform(lo, hi);
            if (dt == ACL_FLOAT) {
                f32.push_back(x);
                value.push_back(x);
            } else {
                f16.push_back(aclFloatToFloat16(x));
                value.push_back(aclFloat16ToFloat(f16.back()));
            }
        }
    }
    int Create(const std::vector<int64_t> &shape, void **addr, aclTensor **t) const {
        return dtype == ACL_FLOAT ? CreateAclTensor(f32, shape, addr, dtype, t) : CreateAclTensor(f16, shape, addr, dtype, t);
    }
};

int RunCase(const QuantV2Case &c, uint64_t seed) {
    Lcg rng(seed);
    const V2Shape &sh = c.shape;
    V2Layout p = BuildLayout(sh, rng);
    const std::vector<int32_t> offset = RandomOffsets(rng, p.rows, 4096);
    const bool fp8 = c.quantMode == 1, mx = c.quantMode == 5;
    const aclDataType codes = fp8 ? ACL_FLOAT8_E4M3FN : ACL_INT8, scaleDtype = c.quantMode == 2 ? ACL_FLOAT16 : ACL_FLOAT;
    const int64_t rowBytes = mx ? c.d / 2 : c.d, blocks = c.d / 32;
    // FP8 codes with exponents up to 7 (|v| <= 1.875, never NaN); INT8 codes in [-127, 127]; FP4 any byte
    auto code = [&]() {
        if (mx || fp8) return static_cast<uint8_t>(rng.Next() & (mx ? 0xFF : 0xBF));
        return static_cast<uint8_t>(static_cast<int8_t>(rng.Below(255) - 127));
    };
    // element e of a head's codes
    auto element = [&](const uint8_t *row, int64_t e) {
        if (mx) return E2m1Value(static_cast<uint8_t>(e % 2 ? row[e / 2] >> 4 : row[e / 2] & 15));
        return fp8 ? E4m3Value(row[e]) : static_cast<double>(static_cast<int8_t>(row[e]));
    };
    std::vector<uint8_t> q(static_cast<size_t>(p.rows * c.n1 * rowBytes)), k(static_cast<size_t>(p.keyRows * rowBytes));
    for (auto &x : q) x = code();
    for (auto &x : k) x = code();
    Floats w(mx ? ACL_FLOAT : scaleDtype, p.rows * c.n1, rng, -0.25f, 1.0f),
        sq(scaleDtype, p.rows * c.n1, rng, 0.01f, 0.05f), sk(scaleDtype, p.keyRows, rng, 0.01f, 0.05f);
    // MXFP4: one e8m0 byte (2^(E-127)) per 32 values of a head
    std::vector<uint8_t> sqMx(static_cast<size_t>(p.rows * c.n1 * blocks)), skMx(static_cast<size_t>(p.keyRows * blocks));
    for (auto &x : sqMx) x = static_cast<uint8_t>(122 + rng.Below(10));
    for (auto &x : skMx) x = static_cast<uint8_t>(122 + rng.Below(10));

    int32_t deviceId = 0;
    aclrtContext context = nullptr;
    aclrtStream stream = nullptr;
    CHECK_RET(Init(deviceId, &context, &stream) == 0, return 1);
    const std::vector<int64_t> outShape = Extend(RowExtents(sh, p), {1, c.topk});
    const int64_t nOut = GetShapeSize(outShape);
    void *qAddr = nullptr, *kAddr = nullptr, *wAddr = nullptr, *sqAddr = nullptr, *skAddr = nullptr, *idxAddr = nullptr,
         *valAddr = nullptr, *workspaceAddr = nullptr;
    aclTensor *qT = nullptr, *kT = nullptr, *wT = nullptr, *sqT = nullptr, *skT = nullptr, *idxT = nullptr,
              *valT = nullptr;
    V2Lengths len;
    if (mx) {
        CHECK_RET(CreateFp4Tensor(q, Extend(RowExtents(sh, p), {c.n1, c.d}), &qAddr, &qT) == 0, return 1);
        CHECK_RET(CreateFp4Tensor(k, Extend(KeyExtents(sh, p), {1, c.d}), &kAddr, &kT) == 0, return 1);
        CHECK_RET(CreateAclTensor(sqMx, Extend(RowExtents(sh, p), {c.n1, blocks / 2, 2}), &sqAddr, ACL_FLOAT8_E8M0, &sqT) == 0,
                  return 1);
        CHECK_RET(CreateAclTensor(skMx, Extend(KeyExtents(sh, p), {1, blocks / 2, 2}), &skAddr, ACL_FLOAT8_E8M0, &skT) == 0,
                  return 1);
    } else {
        CHECK_RET(CreateAclTensor(q, Extend(RowExtents(sh, p), {c.n1, c.d}), &qAddr, codes, &qT) == 0, return 1);
        CHECK_RET(CreateAclTensor(k, Extend(KeyExtents(sh, p), {1, c.d}), &kAddr, codes, &kT) == 0, return 1);
        CHECK_RET(sq.Create(Extend(RowExtents(sh, p), {c.n1}), &sqAddr, &sqT) == 0, return 1);
        CHECK_RET(sk.Create(Extend(KeyExtents(sh, p), {1}), &skAddr, &skT) == 0, return 1);
    }
    CHECK_RET(w.Create(Extend(RowExtents(sh, p), {c.n1}), &wAddr, &wT) == 0, return 1);
    CHECK_RET(len.Create(sh, p, c.residual, c.offset ? &offset : nullptr) == 0, return 1);
    CHECK_RET(CreateAclTensor(std::vector<int32_t>(static_cast<size_t>(nOut), 7), outShape, &idxAddr, ACL_INT32, &idxT) == 0,
              return 1);
    // BFLOAT16 values, as CANN documents them; with returnValue 0 the operator fills them with -inf
    CHECK_RET(CreateAclTensor(std::vector<uint16_t>(static_cast<size_t>(nOut), 0x3F80), outShape, &valAddr, ACL_BF16,
                              &valT) == 0,
              return 1);

    std::vector<char> layoutQ(sh.layoutQ, sh.layoutQ + std::strlen(sh.layoutQ) + 1);
    std::vector<char> layoutK(sh.layoutK, sh.layoutK + std::strlen(sh.layoutK) + 1);
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    const int planned = aclnnQuantLightningIndexerV2GetWorkspaceSize(
        qT, kT, wT, sqT, skT, len.cuQ, len.cuK, len.usedQ, len.usedK, len.residual, len.table, len.offset, nullptr,
        c.topk, c.quantMode, p.rows, layoutQ.data(), layoutK.data(), 3, c.cmpRatio, c.returnValue ? 1 : 0, idxT, valT,
        &workspaceSize, &executor);
    CHECK_RET(RunV2(c.name, "aclnnQuantLightningIndexerV2", planned, aclnnQuantLightningIndexerV2, workspaceSize,
                    executor, stream, &workspaceAddr) == 0,
              return 1);
    std::vector<int32_t> idx;
    std::vector<uint16_t> valBits;
    CHECK_RET(CopyOut(idx, idxAddr, static_cast<size_t>(nOut)) == 0, return 1);
    CHECK_RET(CopyOut(valBits, valAddr, static_cast<size_t>(nOut)) == 0, return 1);
    std::vector<double> val;
    for (uint16_t b : valBits) val.push_back(HalfToFloat(b, ACL_BF16));

    const double unit = 2.0 * static_cast<double>(c.d + c.n1 + 4) * std::ldexp(1.0, -24);
    // the dequantization scale of element e: per (token, head), or MXFP4's per 32-value block
    auto scale = [&](int64_t at, int64_t krow, int64_t e) {
        if (!mx) return sq.value[static_cast<size_t>(at)] * sk.value[static_cast<size_t>(krow)];
        return std::ldexp(1.0, sqMx[static_cast<size_t>(at * blocks + e / 32)] + skMx[static_cast<size_t>(krow * blocks + e / 32)] - 254);
    };
    auto score = [&](int64_t r, int64_t b, int64_t s) {
        const int64_t krow = p.KeyRow(sh, b, s);
        const uint8_t *kr = &k[static_cast<size_t>(krow * rowBytes)];
        double total = 0, mag = 0;
        for (int64_t h = 0; h < c.n1; h++) {
            const int64_t at = r * c.n1 + h;
            const uint8_t *qr = &q[static_cast<size_t>(at * rowBytes)];
            double dot = 0, m = 0;
            for (int64_t e = 0; e < c.d; e++) {
                double prod = scale(at, krow, e) * element(qr, e) * element(kr, e);
                dot += prod, m += std::fabs(prod);
            }
            const double wv = w.value[static_cast<size_t>(at)];
            total += wv * std::max(dot, 0.0);
            mag += std::fabs(wv) * m;
        }
        return Scored{s, total, unit * mag};
    };
    const V2Run run{c.residual, c.cmpRatio, 3, c.topk, c.offset ? &offset : nullptr, c.returnValue, !c.returnValue,
                    std::ldexp(1.0, -8)};
    // the check reads host copies only: the device side goes first
    CHECK_RET(len.Destroy() == 0, return 1);
    CHECK_RET(Release({qT, kT, wT, sqT, skT, idxT, valT}, {qAddr, kAddr, wAddr, sqAddr, skAddr, idxAddr, valAddr, workspaceAddr},
                      stream, context, deviceId) == 0,
              return 1);
    return CheckRows(c.name, sh, p, run, idx, val, score);
}

}  // namespace

int main() {
    const QuantV2Case cases[] = {
        {"quantMode 1 (FP8) BSND, sequsedK, cmpRatio 4, MTP rows", 1,
         {"BSND", "BSND", 2, 4, 40, {4, 4}, {37, 40}, false, 0}, {1, 3}, 16, 128, 16, 4, false, true},
        {"quantMode 2 (INT8) TND query, PA_BSND cache, cmpRatio 2, outputIdxOffset, returnValue 0", 2,
         {"TND", "PA_BSND", 2, 0, 0, {6, 3}, {45, 20}, true, 16}, {1, 0}, 16, 128, 8, 2, true, false},
        {"quantMode 1 (FP8) TND, cmpRatio 128, residuals 127 and 5", 1,
         {"TND", "TND", 2, 0, 0, {130, 2}, {3, 2}, false, 0}, {127, 5}, 8, 64, 4, 128, false, true},
        {"quantMode 5 (MXFP4) BSND over PA_BSND, cmpRatio 4", 5,
         {"BSND", "PA_BSND", 2, 2, 0, {2, 2}, {70, 33}, false, 16}, {3, 1}, 8, 128, 8, 4, true, true},
    };
    int failed = 0;
    uint64_t seed = 23;
    for (const QuantV2Case &c : cases) failed += RunCase(c, seed++);
    return failed ? 1 : 0;
}

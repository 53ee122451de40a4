// The fused KL loss samples' shared half (sample_sparse_lightning_indexer_grad_kl_loss{,_v2}.cpp):
// a case's inputs made the way CANN's sample makes them, the main attention's statistics (with
// the sinks' entries for V2), the float64 computation of CANN's formulas (V2: the sinks'
// normaliser), the front end's call (V1 or V2) and lig's own, and the comparisons.
#ifndef LIG_ACLNN_SAMPLE_KL_LOSS_CASE_H
#define LIG_ACLNN_SAMPLE_KL_LOSS_CASE_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "aclnnop/aclnn_sparse_lightning_indexer_grad_kl_loss.h"
#include "aclnnop/aclnn_sparse_lightning_indexer_grad_kl_loss_v2.h"
#include "sample_util.h"

namespace {


struct KlCase {
    const char *name;
    const char *layout;
    aclDataType dtype;
    int64_t batch, s1, s2;            // BSND: per-batch sizes; TND: s1 = T1, s2 = T2
    std::vector<int64_t> cumQ, cumK;  // TND's cumulative ends
    int64_t n1, dm, dr;               // the main attention: heads, latent dims, rope dims (0: none)
    int64_t nIdx, dIdx, topK;         // the indexer: heads, dims, selected slots (one key head)
    bool sparseStatistics;            // softmaxMax / softmaxSum over the selected slots (else all visible keys)
    int64_t shiftedRow;               // a row whose softmaxMax is raised by 30 (-1: none)
    float weightRange;                // weights uniform in [-weightRange, weightRange]
    bool sinks;                       // V2: attention sinks, one per main head (in the statistics too)
};

// One query row: its batch, first key row and lengths (CANN's sparse mode 3 aligns rows to the keys' end).
struct Row {
    int64_t b, t, lq, lk, k0;
};

Row RowOf(const KlCase &c, int64_t r) {
    if (c.layout[0] != 'T') return Row{r / c.s1, r % c.s1, c.s1, c.s2, (r / c.s1) * c.s2};
    int64_t b = 0;
    while (r >= c.cumQ[static_cast<size_t>(b)]) b++;
    int64_t q0 = b ? c.cumQ[static_cast<size_t>(b - 1)] : 0, k0 = b ? c.cumK[static_cast<size_t>(b - 1)] : 0;
    return Row{b, r - q0, c.cumQ[static_cast<size_t>(b)] - q0, c.cumK[static_cast<size_t>(b)] - k0, k0};
}

int64_t Rows(const KlCase &c) { return c.layout[0] == 'T' ? c.s1 : c.batch * c.s1; }
int64_t Visible(const Row &w) { return std::min(w.lk, w.lk - w.lq + w.t + 1); }  // keys 0 .. Visible-1

struct Shapes {
    std::vector<int64_t> q, k, qr, kr, qi, ki, w, idx, stat;
};

Shapes ShapesOf(const KlCase &c) {
    bool tnd = c.layout[0] == 'T';
    std::vector<int64_t> rows = tnd ? std::vector<int64_t>{c.s1} : std::vector<int64_t>{c.batch, c.s1};
    std::vector<int64_t> keys = tnd ? std::vector<int64_t>{c.s2} : std::vector<int64_t>{c.batch, c.s2};
    Shapes s;
    s.q = s.qr = s.qi = s.w = s.idx = rows;
    s.k = s.kr = s.ki = keys;
    s.q.insert(s.q.end(), {c.n1, c.dm});
    s.k.insert(s.k.end(), {1, c.dm});
    s.qr.insert(s.qr.end(), {c.n1, c.dr});
    s.kr.insert(s.kr.end(), {1, c.dr});
    s.qi.insert(s.qi.end(), {c.nIdx, c.dIdx});
    s.ki.insert(s.ki.end(), {1, c.dIdx});
    s.w.push_back(c.nIdx);
    s.idx.insert(s.idx.end(), {1, c.topK});
    s.stat = tnd ? std::vector<int64_t>{1, c.s1, c.n1} : std::vector<int64_t>{c.batch, 1, c.s1, c.n1};
    return s;
}

std::vector<double> Widen(const std::vector<uint16_t> &v, aclDataType dtype) {
    std::vector<double> out(v.size());
    for (size_t i = 0; i < v.size(); i++) out[i] = HalfToFloat(v[i], dtype);
    return out;
}

struct Inputs {
    std::vector<uint16_t> q, k, qr, kr, qi, ki, w;
    std::vector<int32_t> idx;
    std::vector<float> smax, ssum;
    std::vector<float> sinks;  // V2: [n1], empty without sinks
};

// Distinct visible keys, in random order, then -1: what the forward (top-k) hands the backward.
std::vector<int32_t> MakeIndices(const KlCase &c, Lcg &rng) {
    std::vector<int32_t> idx(static_cast<size_t>(Rows(c) * c.topK), -1);
    for (int64_t r = 0; r < Rows(c); r++) {
        Row w = RowOf(c, r);
        std::vector<int32_t> pool;
        for (int64_t s = 0; s < Visible(w); s++) pool.push_back(static_cast<int32_t>(s));
        int64_t take = std::min<int64_t>(static_cast<int64_t>(pool.size()), c.topK);
        if (r % 3 == 1 && take > 2) take -= 2;  // padding
        for (int64_t j = 0; j < take; j++) {
            int64_t pick = j + rng.Below(static_cast<int64_t>(pool.size()) - j);
            std::swap(pool[static_cast<size_t>(j)], pool[static_cast<size_t>(pick)]);
            idx[static_cast<size_t>(r * c.topK + j)] = pool[static_cast<size_t>(j)];
        }
    }
    return idx;
}

// The main attention's score scale * (q . k + q_rope . k_rope), in double.
double MainScore(const KlCase &c, const std::vector<double> &q, const std::vector<double> &k,
                 const std::vector<double> &qr, const std::vector<double> &kr, int64_t r, int64_t h, int64_t keyRow,
                 double scale) {
    double s = 0.0;
    for (int64_t d = 0; d < c.dm; d++) s += q[static_cast<size_t>((r * c.n1 + h) * c.dm + d)] * k[static_cast<size_t>(keyRow * c.dm + d)];
    for (int64_t d = 0; d < c.dr; d++) s += qr[static_cast<size_t>((r * c.n1 + h) * c.dr + d)] * kr[static_cast<size_t>(keyRow * c.dr + d)];
    return scale * s;
}

// softmaxMax / softmaxSum as the main attention's forward writes them: over the selected slots or
// over every visible key, per (row, head), rounded to FLOAT32.
void MakeStatistics(const KlCase &c, Inputs &in, double scale) {
    std::vector<double> q = Widen(in.q, c.dtype), k = Widen(in.k, c.dtype), qr = Widen(in.qr, c.dtype),
                        kr = Widen(in.kr, c.dtype);
    in.smax.assign(static_cast<size_t>(Rows(c) * c.n1), 0.0f);
    in.ssum.assign(static_cast<size_t>(Rows(c) * c.n1), 1.0f);
    for (int64_t r = 0; r < Rows(c); r++) {
        Row w = RowOf(c, r);
        std::vector<int64_t> keys;
        if (c.sparseStatistics) {
            for (int64_t j = 0; j < c.topK; j++)
                if (in.idx[static_cast<size_t>(r * c.topK + j)] >= 0) keys.push_back(in.idx[static_cast<size_t>(r * c.topK + j)]);
        } else {
            for (int64_t s = 0; s < Visible(w); s++) keys.push_back(s);
        }
        for (int64_t h = 0; h < c.n1 && !keys.empty(); h++) {
            // with sinks, the head's softmax has one more entry: the sink
            double m = in.sinks.empty() ? -INFINITY : static_cast<double>(in.sinks[static_cast<size_t>(h)]), z = 0.0;
            for (int64_t s : keys) m = std::max(m, MainScore(c, q, k, qr, kr, r, h, w.k0 + s, scale));
            for (int64_t s : keys) z += std::exp(MainScore(c, q, k, qr, kr, r, h, w.k0 + s, scale) - m);
            if (!in.sinks.empty()) z += std::exp(static_cast<double>(in.sinks[static_cast<size_t>(h)]) - m);
            in.smax[static_cast<size_t>(r * c.n1 + h)] = static_cast<float>(m + (r == c.shiftedRow ? 30.0 : 0.0));
            in.ssum[static_cast<size_t>(r * c.n1 + h)] = static_cast<float>(z);
        }
    }
}

struct Expected {
    std::vector<double> dqi, dki, dw;
    double loss = 0.0, lossTerms = 0.0;  // lossTerms: sum of |terms|, the scale of the loss's rounding
};

// CANN's SparseLightningIndexerGradKLLoss in float64, from the documented formulas and the
// kernel's evaluation: per row, P[h,j] = exp(scale S - max) / sum, p = mean over heads (V2 with
// sinks: sum over heads / (n1 - sum_h exp(sink_h - max_h) / sum_h), the V2 kernel's normaliser),
// I = sum_h w ReLU(qi . ki), y = softmax(I) over the selected keys, dI = y - p,
// loss += sum_j max(p,1e-8f) (log max(p,1e-8f) - log max(y,1e-8f)); then dW, dQ, dK by the chain rule.
Expected Reference(const KlCase &c, const Inputs &in, double scale) {
    std::vector<double> q = Widen(in.q, c.dtype), k = Widen(in.k, c.dtype), qr = Widen(in.qr, c.dtype),
                        kr = Widen(in.kr, c.dtype), qi = Widen(in.qi, c.dtype), ki = Widen(in.ki, c.dtype),
                        w = Widen(in.w, c.dtype);
    Expected e;
    e.dqi.assign(qi.size(), 0.0);
    e.dki.assign(ki.size(), 0.0);
    e.dw.assign(w.size(), 0.0);
    const double eps = static_cast<double>(1e-8f);
    for (int64_t r = 0; r < Rows(c); r++) {
        Row rw = RowOf(c, r);
        std::vector<int64_t> keys;
        for (int64_t j = 0; j < c.topK; j++) {
            int64_t s = in.idx[static_cast<size_t>(r * c.topK + j)];
            if (s >= 0) keys.push_back(rw.k0 + s);
        }
        if (keys.empty()) continue;
        size_t n = keys.size();
        std::vector<double> p(n, 0.0), I(n, 0.0), y(n);
        double norm = static_cast<double>(c.n1);
        for (size_t h = 0; h < in.sinks.size(); h++)
            norm -= std::exp(static_cast<double>(in.sinks[h]) - in.smax[static_cast<size_t>(r * c.n1) + h]) /
                    in.ssum[static_cast<size_t>(r * c.n1) + h];
        for (size_t j = 0; j < n; j++) {
            for (int64_t h = 0; h < c.n1; h++) {
                double m = in.smax[static_cast<size_t>(r * c.n1 + h)], z = in.ssum[static_cast<size_t>(r * c.n1 + h)];
                p[j] += std::exp(MainScore(c, q, k, qr, kr, r, h, keys[j], scale) - m) / z;
            }
            p[j] /= norm;
            for (int64_t h = 0; h < c.nIdx; h++) {
                double s = 0.0;
                for (int64_t d = 0; d < c.dIdx; d++)
                    s += qi[static_cast<size_t>((r * c.nIdx + h) * c.dIdx + d)] * ki[static_cast<size_t>(keys[j] * c.dIdx + d)];
                I[j] += w[static_cast<size_t>(r * c.nIdx + h)] * std::max(s, 0.0);
            }
        }
        double top = *std::max_element(I.begin(), I.end()), z = 0.0;
        for (size_t j = 0; j < n; j++) z += std::exp(I[j] - top);
        for (size_t j = 0; j < n; j++) {
            y[j] = std::exp(I[j] - top) / z;
            double pc = std::max(p[j], eps), yc = std::max(y[j], eps), term = pc * (std::log(pc) - std::log(yc));
            e.loss += term;
            e.lossTerms += std::fabs(term);
            double dI = y[j] - p[j];
            for (int64_t h = 0; h < c.nIdx; h++) {
                size_t qh = static_cast<size_t>((r * c.nIdx + h) * c.dIdx);
                double s = 0.0;
                for (int64_t d = 0; d < c.dIdx; d++) s += qi[qh + static_cast<size_t>(d)] * ki[static_cast<size_t>(keys[j] * c.dIdx + d)];
                e.dw[static_cast<size_t>(r * c.nIdx + h)] += dI * std::max(s, 0.0);
                if (s <= 0.0) continue;
                double g = dI * w[static_cast<size_t>(r * c.nIdx + h)];
                for (int64_t d = 0; d < c.dIdx; d++) {
                    e.dqi[qh + static_cast<size_t>(d)] += g * ki[static_cast<size_t>(keys[j] * c.dIdx + d)];
                    e.dki[static_cast<size_t>(keys[j] * c.dIdx + d)] += g * qi[qh + static_cast<size_t>(d)];
                }
            }
        }
    }
    return e;
}

struct Outputs {
    std::vector<uint16_t> dqi, dki, dw;
    std::vector<float> loss;
};

// v2: aclnnSparseLightningIndexerGradKLLossV2 (with c.sinks' tensor, or nullptr), else V1.
int RunAclnn(const KlCase &c, const Inputs &in, double scale, bool v2, Outputs &out) {
    int32_t deviceId = 0;
    aclrtContext context = nullptr;
    aclrtStream stream = nullptr;
    auto ret = Init(deviceId, &context, &stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);
    Shapes sh = ShapesOf(c);

    void *qAddr = nullptr, *kAddr = nullptr, *qrAddr = nullptr, *krAddr = nullptr, *qiAddr = nullptr,
         *kiAddr = nullptr, *wAddr = nullptr, *idxAddr = nullptr, *smaxAddr = nullptr, *ssumAddr = nullptr;
    void *dqiAddr = nullptr, *dkiAddr = nullptr, *dwAddr = nullptr, *lossAddr = nullptr, *sinksAddr = nullptr;
    aclTensor *q = nullptr, *k = nullptr, *qr = nullptr, *kr = nullptr, *qi = nullptr, *ki = nullptr, *w = nullptr,
              *idx = nullptr, *smax = nullptr, *ssum = nullptr;
    aclTensor *dqi = nullptr, *dki = nullptr, *dw = nullptr, *loss = nullptr, *sinks = nullptr;
    if (c.sinks) CHECK_RET(CreateAclTensor(in.sinks, {c.n1}, &sinksAddr, ACL_FLOAT, &sinks) == 0, return -1);
    CHECK_RET(CreateAclTensor(in.q, sh.q, &qAddr, c.dtype, &q) == 0, return -1);
    CHECK_RET(CreateAclTensor(in.k, sh.k, &kAddr, c.dtype, &k) == 0, return -1);
    if (c.dr > 0) {
        CHECK_RET(CreateAclTensor(in.qr, sh.qr, &qrAddr, c.dtype, &qr) == 0, return -1);
        CHECK_RET(CreateAclTensor(in.kr, sh.kr, &krAddr, c.dtype, &kr) == 0, return -1);
    }
    CHECK_RET(CreateAclTensor(in.qi, sh.qi, &qiAddr, c.dtype, &qi) == 0, return -1);
    CHECK_RET(CreateAclTensor(in.ki, sh.ki, &kiAddr, c.dtype, &ki) == 0, return -1);
    CHECK_RET(CreateAclTensor(in.w, sh.w, &wAddr, c.dtype, &w) == 0, return -1);
    CHECK_RET(CreateAclTensor(in.idx, sh.idx, &idxAddr, ACL_INT32, &idx) == 0, return -1);
    CHECK_RET(CreateAclTensor(in.smax, sh.stat, &smaxAddr, ACL_FLOAT, &smax) == 0, return -1);
    CHECK_RET(CreateAclTensor(in.ssum, sh.stat, &ssumAddr, ACL_FLOAT, &ssum) == 0, return -1);
    CHECK_RET(CreateAclTensor(std::vector<uint16_t>(in.qi.size()), sh.qi, &dqiAddr, c.dtype, &dqi) == 0, return -1);
    CHECK_RET(CreateAclTensor(std::vector<uint16_t>(in.ki.size()), sh.ki, &dkiAddr, c.dtype, &dki) == 0, return -1);
    CHECK_RET(CreateAclTensor(std::vector<uint16_t>(in.w.size()), sh.w, &dwAddr, c.dtype, &dw) == 0, return -1);
    CHECK_RET(CreateAclTensor(std::vector<float>(1, 7.0f), {1}, &lossAddr, ACL_FLOAT, &loss) == 0, return -1);
    aclIntArray *acSeqQLen = nullptr, *acSeqKvLen = nullptr;
    if (!c.cumQ.empty()) {
        acSeqQLen = aclCreateIntArray(c.cumQ.data(), c.cumQ.size());
        acSeqKvLen = aclCreateIntArray(c.cumK.data(), c.cumK.size());
        CHECK_RET(acSeqQLen != nullptr && acSeqKvLen != nullptr, LOG_PRINT("aclCreateIntArray failed\n"); return -1);
    }

    // Phase 1, workspace, phase 2, synchronize: the operator's two-phase protocol.
    std::vector<char> layout(c.layout, c.layout + std::strlen(c.layout) + 1);
    int64_t preTokens = 65536, nextTokens = 65536, sparseMode = 3;
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    if (v2)
        ret = aclnnSparseLightningIndexerGradKLLossV2GetWorkspaceSize(
            q, k, qi, ki, w, idx, smax, ssum, qr, kr, acSeqQLen, acSeqKvLen, sinks, scale, layout.data(), sparseMode,
            preTokens, nextTokens, true, dqi, dki, dw, loss, &workspaceSize, &executor);
    else
        ret = aclnnSparseLightningIndexerGradKLLossGetWorkspaceSize(
            q, k, qi, ki, w, idx, smax, ssum, qr, kr, acSeqQLen, acSeqKvLen, scale, layout.data(), sparseMode,
            preTokens, nextTokens, true, dqi, dki, dw, loss, &workspaceSize, &executor);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnSparseLightningIndexerGradKLLoss%sGetWorkspaceSize failed. ERROR: %d (%s)\n",
                                            v2 ? "V2" : "", ret, aclGetRecentErrMsg());
              return ret);
    // The lengths were read in phase 1: the arrays may go now (phase 2 must not need them).
    CHECK_RET(aclDestroyIntArray(acSeqQLen) == ACL_SUCCESS && aclDestroyIntArray(acSeqKvLen) == ACL_SUCCESS,
              return -1);
    void *workspaceAddr = nullptr;
    if (workspaceSize > 0) {
        ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
    }
    ret = v2 ? aclnnSparseLightningIndexerGradKLLossV2(workspaceAddr, workspaceSize, executor, stream)
             : aclnnSparseLightningIndexerGradKLLoss(workspaceAddr, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnSparseLightningIndexerGradKLLoss%s failed. ERROR: %d (%s)\n",
                                            v2 ? "V2" : "", ret, aclGetRecentErrMsg());
              return ret);
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

    CHECK_RET(CopyOut(out.dqi, dqiAddr, in.qi.size()) == 0, return -1);
    CHECK_RET(CopyOut(out.dki, dkiAddr, in.ki.size()) == 0, return -1);
    CHECK_RET(CopyOut(out.dw, dwAddr, in.w.size()) == 0, return -1);
    CHECK_RET(CopyOut(out.loss, lossAddr, 1) == 0, return -1);

    return Release({q, k, qr, kr, qi, ki, w, idx, smax, ssum, dqi, dki, dw, loss, sinks},
                   {qAddr, kAddr, qrAddr, krAddr, qiAddr, kiAddr, wAddr, idxAddr, smaxAddr, ssumAddr, dqiAddr, dkiAddr,
                    dwAddr, lossAddr, workspaceAddr, sinksAddr},
                   stream, context, deviceId);
}

// The same computation through lig's own API (LIG_KL_TARGET_CANN; with sinks its V2), on host copies.
int RunLig(const KlCase &c, Inputs in, double scale, Outputs &out) {
    Shapes sh = ShapesOf(c);
    lig_dtype dt = LigDtype(c.dtype);
    std::vector<int64_t> cumQ = c.cumQ, cumK = c.cumK;
    out.dqi.assign(in.qi.size(), 0);
    out.dki.assign(in.ki.size(), 0);
    out.dw.assign(in.w.size(), 0);
    out.loss.assign(1, 0.0f);
    lig_tensor *q = LigTensor(in.q, dt, sh.q), *k = LigTensor(in.k, dt, sh.k);
    lig_tensor *qr = c.dr ? LigTensor(in.qr, dt, sh.qr) : nullptr, *kr = c.dr ? LigTensor(in.kr, dt, sh.kr) : nullptr;
    lig_tensor *qi = LigTensor(in.qi, dt, sh.qi), *ki = LigTensor(in.ki, dt, sh.ki), *w = LigTensor(in.w, dt, sh.w);
    lig_tensor *idx = LigTensor(in.idx, LIG_INT32, sh.idx);
    lig_tensor *smax = LigTensor(in.smax, LIG_FLOAT32, sh.stat), *ssum = LigTensor(in.ssum, LIG_FLOAT32, sh.stat);
    lig_tensor *aq = cumQ.empty() ? nullptr : LigTensor(cumQ, LIG_INT64, {static_cast<int64_t>(cumQ.size())});
    lig_tensor *ak = cumK.empty() ? nullptr : LigTensor(cumK, LIG_INT64, {static_cast<int64_t>(cumK.size())});
    lig_tensor *dqi = LigTensor(out.dqi, dt, sh.qi), *dki = LigTensor(out.dki, dt, sh.ki), *dw = LigTensor(out.dw, dt, sh.w);
    lig_tensor *loss = LigTensor(out.loss, LIG_FLOAT32, {1});
    lig_tensor *sinks = c.sinks ? LigTensor(in.sinks, LIG_FLOAT32, {c.n1}) : nullptr;
    uint64_t ws = 0;
    lig_executor *plan = nullptr;
    lig_status st =
        c.sinks ? lig_sparse_indexer_grad_kl_loss_v2_get_workspace_size(
                      q, k, qi, ki, w, idx, smax, ssum, nullptr, qr, kr, aq, ak, sinks, scale, c.layout, 3, 65536,
                      65536, LIG_KL_TARGET_CANN, true, dqi, dki, dw, loss, &ws, &plan)
                : lig_sparse_indexer_grad_kl_loss_get_workspace_size(q, k, qi, ki, w, idx, smax, ssum, nullptr, qr, kr,
                                                                    aq, ak, scale, c.layout, 3, 65536, 65536,
                                                                    LIG_KL_TARGET_CANN, true, dqi, dki, dw, loss, &ws,
                                                                    &plan);
    st = LigRun(st, ws, plan, lig_sparse_indexer_grad_kl_loss);
    if (st != LIG_SUCCESS) LOG_PRINT("lig_sparse_indexer_grad_kl_loss failed: %s\n", lig_get_last_error());
    lig_tensor *all[] = {q, k, qr, kr, qi, ki, w, idx, smax, ssum, aq, ak, dqi, dki, dw, loss, sinks};
    for (lig_tensor *t : all) lig_destroy_tensor(t);
    return st == LIG_SUCCESS ? 0 : 1;
}

// Elements of `got` (half) farther from the float64 `want` than the dtype's rounding of |want|
// plus 2e-3 of the largest |want| (lig's fp32 teacher and sums); reports the first. An all-zero
// result is a failure too (it would match a run that did nothing only where want is tiny).
int64_t CountFar(const char *what, const std::vector<uint16_t> &got, const std::vector<double> &want,
                 aclDataType dtype) {
    double top = 0.0;
    for (double v : want) top = std::max(top, std::fabs(v));
    double rel = dtype == ACL_BF16 ? 1.0 / 128 : 1.0 / 1024;
    int64_t bad = 0;
    bool nonzero = false;
    for (size_t i = 0; i < got.size(); i++) {
        double g = HalfToFloat(got[i], dtype);
        nonzero = nonzero || g != 0.0;
        if (!(std::fabs(g - want[i]) <= rel * std::fabs(want[i]) + 2e-3 * top)) {
            if (bad == 0) LOG_PRINT("%s: element %zu is %.6g, the float64 computation %.6g\n", what, i, g, want[i]);
            bad++;
        }
    }
    if (!nonzero) {
        LOG_PRINT("%s is all zeros\n", what);
        bad++;
    }
    return bad;
}

// Runs the case through the front end (V2 when `v2`) and lig, checks both as above.
int RunCase(const KlCase &c, uint64_t seed, bool v2) {
    Shapes sh = ShapesOf(c);
    Lcg rng(seed);
    double scale = 1.0 / std::sqrt(static_cast<double>(c.dm + c.dr));
    Inputs in;
    in.q = RandomHalf(rng, GetShapeSize(sh.q), c.dtype);
    in.k = RandomHalf(rng, GetShapeSize(sh.k), c.dtype);
    if (c.dr > 0) {
        in.qr = RandomHalf(rng, GetShapeSize(sh.qr), c.dtype);
        in.kr = RandomHalf(rng, GetShapeSize(sh.kr), c.dtype);
    }
    in.qi = RandomHalf(rng, GetShapeSize(sh.qi), c.dtype);
    in.ki = RandomHalf(rng, GetShapeSize(sh.ki), c.dtype);
    in.w = RandomHalf(rng, GetShapeSize(sh.w), c.dtype, -c.weightRange, c.weightRange);
    in.idx = MakeIndices(c, rng);
    if (c.sinks) {  // continuous, one per main head; every third far below the scores (CANN's -inf-like)
        for (int64_t h = 0; h < c.n1; h++) {
            double u = static_cast<double>(rng.Below(1 << 20)) / (1 << 20);
            in.sinks.push_back(static_cast<float>(4.0 * u - 2.0 - (h % 3 == 2 ? 40.0 : 0.0)));
        }
    }
    MakeStatistics(c, in, scale);

    Outputs got, lig;
    if (RunAclnn(c, in, scale, v2, got) != 0 || RunLig(c, in, scale, lig) != 0) return 1;
    Expected want = Reference(c, in, scale);
    int64_t bad = CountFar("dQueryIndex", got.dqi, want.dqi, c.dtype) + CountFar("dKeyIndex", got.dki, want.dki, c.dtype) +
                  CountFar("dWeights", got.dw, want.dw, c.dtype);
    if (!(std::fabs(got.loss[0] - want.loss) <= 1e-4 * want.lossTerms + 1e-6)) {
        LOG_PRINT("loss: %.9g, the float64 computation %.9g\n", static_cast<double>(got.loss[0]), want.loss);
        bad++;
    }
    bad += CountMismatches("dQueryIndex", got.dqi, lig.dqi) + CountMismatches("dKeyIndex", got.dki, lig.dki) +
           CountMismatches("dWeights", got.dw, lig.dw) + CountMismatches("loss", got.loss, lig.loss);
    LOG_PRINT("%s: loss %.6g (float64: %.6g)\n", c.name, static_cast<double>(got.loss[0]), want.loss);
    return Verdict(c.name, bad,
                   v2 ? "matches CANN's V2 formulas in float64, and lig_sparse_indexer_grad_kl_loss_v2 bit for bit"
                      : "matches CANN's formulas in float64, and lig_sparse_indexer_grad_kl_loss bit for bit");
}

}  // namespace

#endif  // LIG_ACLNN_SAMPLE_KL_LOSS_CASE_H

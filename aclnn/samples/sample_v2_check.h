// The V4-era samples' reference (aclnnLightningIndexerV2, aclnnQuantLightningIndexerV2): which
// compressed entries a row sees, counted one entry at a time from CANN's words rather than from a
// closed form, and the check of a row's top-k against float64 scores with their error bounds.
//   Entry j of a batch summarises original tokens j*r .. j*r + r - 1; with lk entries and res
//   tokens past the last whole block the batch has lk*r + res original tokens; with maskMode 3 the
//   lq used query rows are its last lq positions, row t at lk*r + res - lq + t, and it sees the
//   entries whose last token is at or before it (CANN's golden create_mask); maskMode 0 sees all.
#ifndef LIG_ACLNN_SAMPLE_V2_CHECK_H
#define LIG_ACLNN_SAMPLE_V2_CHECK_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <numeric>
#include <vector>

#include "sample_util.h"

inline int64_t VisibleEntries(int64_t lk, int64_t lq, int64_t res, int64_t ratio, int64_t maskMode, int64_t t) {
    if (t >= lq) return 0;
    if (maskMode == 0) return lk;
    const int64_t position = lk * ratio + res - lq + t;
    int64_t n = 0;
    for (int64_t j = 0; j < lk; j++)
        if (j * ratio + ratio - 1 <= position) n++;
    return n;
}

struct Scored {
    int64_t key;
    double score, bound;
};

// Whether a certainly ranks above b in any evaluation within the bounds: apart by more than both
// bounds, or both exact, equal, and a the lower key.
inline bool Above(const Scored &a, const Scored &b) {
    if (a.score - a.bound > b.score + b.bound) return true;
    return a.bound == 0 && b.bound == 0 && a.score == b.score && a.key < b.key;
}

// One (row, key head)'s slots: `slots` indices (the offset already taken off), `values` the
// operator's values or empty, `ref` the float64 scores of the visible entries, `valueSlack` the
// relative rounding of the values' dtype. Counts the lists the bounds decide and the failures.
struct V2Checker {
    int64_t bad = 0, lists = 0, exact = 0;

    void Fail(const char *what, int64_t row, int64_t g) {
        if (bad++ < 5) LOG_PRINT("  row %lld key head %lld: %s\n", (long long)row, (long long)g, what);
    }

    void Check(int64_t row, int64_t g, const int64_t *slots, const double *values, int64_t topk,
               std::vector<Scored> ref, double valueSlack) {
        std::sort(ref.begin(), ref.end(), [](const Scored &a, const Scored &x) {
            return a.score != x.score ? a.score > x.score : a.key < x.key;
        });
        const int64_t kp = std::min<int64_t>(topk, static_cast<int64_t>(ref.size()));
        std::vector<const Scored *> pick;
        for (int64_t j = 0; j < topk; j++) {
            if (j >= kp) {
                if (slots[j] != -1) Fail("a slot past the visible entries is not -1", row, g);
                if (values && !(std::isinf(values[j]) && values[j] < 0)) Fail("an unused slot's value is not -inf", row, g);
                continue;
            }
            const Scored *hit = nullptr;
            for (const Scored &r : ref)
                if (r.key == slots[j]) hit = &r;
            for (const Scored *seen : pick)
                if (hit == seen) hit = nullptr;
            if (!hit) {
                Fail("a selected index is not a visible entry, or is repeated", row, g);
                continue;
            }
            if (!pick.empty() && Above(*hit, *pick.back())) Fail("a later slot certainly outranks an earlier one", row, g);
            if (values && std::fabs(values[j] - hit->score) > hit->bound + valueSlack * std::fabs(hit->score))
                Fail("a value is further from its float64 score than the bound", row, g);
            pick.push_back(hit);
        }
        if (kp == 0) return;
        lists++;
        for (const Scored &r : ref)
            if (std::find(pick.begin(), pick.end(), &r) == pick.end())
                for (const Scored *s : pick)
                    if (Above(r, *s)) {
                        Fail("a left-out entry certainly outranks a selected one", row, g);
                        break;
                    }
        bool decided = true;
        for (int64_t a = 0; a < kp && decided; a++)
            for (size_t o = static_cast<size_t>(kp); o < ref.size() && decided; o++) decided = Above(ref[a], ref[o]);
        if (!decided) return;
        exact++;
        std::vector<int64_t> want, have;
        for (int64_t a = 0; a < kp; a++) want.push_back(ref[a].key);
        for (const Scored *s : pick) have.push_back(s->key);
        std::sort(want.begin(), want.end());
        std::sort(have.begin(), have.end());
        if (want != have) Fail("the index set differs from the reference's, which the bounds decide", row, g);
    }

    // The case's verdict: the checks passed, and the bounds decided most sets (else they prove little).
    int Verdict(const char *name) {
        if (lists == 0 || exact * 2 < lists) {
            LOG_PRINT("%s: only %lld of %lld index sets are decided by the bounds\n", name, (long long)exact,
                      (long long)lists);
            bad++;
        }
        LOG_PRINT("%s: %s (%lld of %lld index sets exact, %lld mismatches)\n", name, bad ? "FAILED" : "matches float64",
                  (long long)exact, (long long)lists, (long long)bad);
        return bad ? 1 : 0;
    }
};

// A case's geometry: layouts, BSND extents (s2: key capacity), used query rows and compressed
// entries per batch, whether sequsedQ is passed, the PA block size.
struct V2Shape {
    const char *layoutQ, *layoutK;
    int64_t batch, s1, s2;
    std::vector<int64_t> lenQ, lenK;
    bool usedQ;
    int64_t blockSize;
};

// Where each query row and key entry of a case lives: rows of a TND query follow cuSeqlensQ (with two
// unused rows a batch when sequsedQ is passed, and one row past every batch), a PA cache's blocks are
// shuffled with spares nobody reads.
struct V2Layout {
    bool tndQ, tndK, paged;
    int64_t rows, keyRows;
    std::vector<int32_t> cuQ, cuK, usedQ, usedK, table;
    std::vector<int64_t> rowBatch, rowT;  // -1: outside every batch
    std::vector<int64_t> keyBase;         // per batch (TND)
    int64_t maxBlocks = 0, blockNum = 0;

    int64_t KeyRow(const V2Shape &c, int64_t b, int64_t s) const {
        if (paged) return table[static_cast<size_t>(b * maxBlocks + s / c.blockSize)] * c.blockSize + s % c.blockSize;
        return tndK ? keyBase[static_cast<size_t>(b)] + s : b * c.s2 + s;
    }
};

inline V2Layout BuildLayout(const V2Shape &c, Lcg &rng) {
    V2Layout p;
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


// The leading extents of a query-row tensor ([B,S1] or [T1]) and of the key ([B,S2] | [T2] | [blockNum, blockSize]).
inline std::vector<int64_t> RowExtents(const V2Shape &sh, const V2Layout &p) {
    return p.tndQ ? std::vector<int64_t>{p.rows} : std::vector<int64_t>{sh.batch, sh.s1};
}
inline std::vector<int64_t> KeyExtents(const V2Shape &sh, const V2Layout &p) {
    return p.tndK ? std::vector<int64_t>{p.keyRows}
           : p.paged ? std::vector<int64_t>{p.blockNum, sh.blockSize}
                     : std::vector<int64_t>{sh.batch, sh.s2};
}
inline std::vector<int64_t> Extend(std::vector<int64_t> v, std::initializer_list<int64_t> more) {
    v.insert(v.end(), more);
    return v;
}

// outputIdxOffset values: one per query row (N2 is 1), below `bound`.
inline std::vector<int32_t> RandomOffsets(Lcg &rng, int64_t rows, int64_t bound) {
    std::vector<int32_t> offsets(static_cast<size_t>(rows));
    for (auto &x : offsets) x = static_cast<int32_t>(rng.Below(bound));
    return offsets;
}

// The length arguments of a case as device tensors (nullptr where the case passes none).
struct V2Lengths {
    aclTensor *cuQ = nullptr, *cuK = nullptr, *usedQ = nullptr, *usedK = nullptr, *residual = nullptr,
              *table = nullptr, *offset = nullptr;
    void *addr[7] = {};

    int Create(const V2Shape &sh, const V2Layout &p, const std::vector<int32_t> &res,
               const std::vector<int32_t> *offsets) {
        const int64_t B = sh.batch;
        if (p.tndQ) CHECK_RET(CreateAclTensor(p.cuQ, {B + 1}, &addr[0], ACL_INT32, &cuQ) == 0, return 1);
        if (p.tndK) CHECK_RET(CreateAclTensor(p.cuK, {B + 1}, &addr[1], ACL_INT32, &cuK) == 0, return 1);
        if (sh.usedQ) CHECK_RET(CreateAclTensor(p.usedQ, {B}, &addr[2], ACL_INT32, &usedQ) == 0, return 1);
        bool shortKeys = false;
        for (int64_t b = 0; b < B; b++) shortKeys = shortKeys || sh.lenK[b] != sh.s2;
        if (p.paged || (!p.tndK && shortKeys))
            CHECK_RET(CreateAclTensor(p.usedK, {B}, &addr[3], ACL_INT32, &usedK) == 0, return 1);
        if (!res.empty()) CHECK_RET(CreateAclTensor(res, {B}, &addr[4], ACL_INT32, &residual) == 0, return 1);
        if (p.paged) CHECK_RET(CreateAclTensor(p.table, {B, p.maxBlocks}, &addr[5], ACL_INT32, &table) == 0, return 1);
        if (offsets)
            CHECK_RET(CreateAclTensor(*offsets, Extend(RowExtents(sh, p), {1}), &addr[6], ACL_INT32, &offset) == 0,
                      return 1);
        return 0;
    }

    // Destroys the tensors, then frees their memory (before the case's Release); -1 at a failure.
    int Destroy() {
        for (aclTensor *t : {cuQ, cuK, usedQ, usedK, residual, table, offset})
            CHECK_RET(aclDestroyTensor(t) == ACL_SUCCESS, return -1);
        for (void *a : addr)
            if (a != nullptr) CHECK_RET(aclrtFree(a) == ACL_SUCCESS, return -1);
        return 0;
    }
};

// Phase 1's verdict `planned`, then phase 2 as CANN's samples run it; 1 (said) when either fails.
inline int RunV2(const char *caseName, const char *op, int planned,
                 aclnnStatus (*run)(void *, uint64_t, aclOpExecutor *, aclrtStream), uint64_t workspaceSize,
                 aclOpExecutor *executor, aclrtStream stream, void **workspaceAddr) {
    CHECK_RET(planned == ACL_SUCCESS,
              LOG_PRINT("%s: %sGetWorkspaceSize failed. ERROR: %d (%s)\n", caseName, op, planned, aclGetRecentErrMsg());
              return 1);
    return RunPhase2(op, run, workspaceSize, executor, stream, workspaceAddr) == 0 ? 0 : 1;
}

// What a case asks of the operator, for the check.
struct V2Run {
    const std::vector<int32_t> &residual;
    int64_t cmpRatio, maskMode, topk;
    const std::vector<int32_t> *offsets;  // nullptr: none passed
    bool returnValue, fillValues;
    double valueSlack;                    // the values' dtype's relative rounding
};

// Checks every row's slots (one key head) against `score(r, b, s)`, the float64 score of entry s of
// batch b for query row r with its bound.
template <class ScoreFn>
int CheckRows(const char *name, const V2Shape &sh, const V2Layout &p, const V2Run &run, const std::vector<int32_t> &idx,
              const std::vector<double> &val, ScoreFn score) {
    V2Checker check;
    int64_t selected = 0;
    for (int64_t r = 0; r < p.rows; r++) {
        const int64_t b = p.rowBatch[static_cast<size_t>(r)], t = p.rowT[static_cast<size_t>(r)];
        const int64_t res = run.residual.empty() || b < 0 ? 0 : run.residual[static_cast<size_t>(b)];
        const int64_t vis = b < 0 ? 0 : VisibleEntries(sh.lenK[b], sh.lenQ[b], res, run.cmpRatio, run.maskMode, t);
        std::vector<Scored> ref;
        for (int64_t s = 0; s < vis; s++) ref.push_back(score(r, b, s));
        std::vector<int64_t> slots(static_cast<size_t>(run.topk));
        std::vector<double> values(static_cast<size_t>(run.topk));
        for (int64_t j = 0; j < run.topk; j++) {
            const size_t at = static_cast<size_t>(r * run.topk + j);
            int64_t v = idx[at];
            if (v != -1 && run.offsets) v -= (*run.offsets)[static_cast<size_t>(r)];
            slots[static_cast<size_t>(j)] = v;
            selected += v >= 0;
            if (!val.empty()) values[static_cast<size_t>(j)] = val[at];
        }
        if (run.fillValues)
            for (double v : values)
                if (!(std::isinf(v) && v < 0)) check.Fail("returnValue 0: a value is not -inf", r, 0);
        check.Check(r, 0, slots.data(), run.returnValue ? values.data() : nullptr, run.topk, ref, run.valueSlack);
    }
    if (selected == 0) check.Fail("no entry was selected", -1, 0);
    return check.Verdict(name);
}

#endif  // LIG_ACLNN_SAMPLE_V2_CHECK_H

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

#endif  // LIG_ACLNN_SAMPLE_V2_CHECK_H

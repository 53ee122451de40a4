/*
 * The forward's streaming top-k (backends/cpu/operators/topk.h), white-box, against a reference
 * written apart from it: every candidate of a row sorted by qsort on (rank as a double, NaN as
 * -inf and -0 as +0, descending; then the key, ascending). The result's keys and score bits
 * must be the reference's first min(visible, K), in order.
 *
 * Stressed: ties at the cut (few distinct values, +0 and -0, NaN, infinities), all-equal scores,
 * one outlier far from the rest (levels crowd), subnormals, the whole fp32 range; K = 1,
 * K < visible with many cuts, K = visible, K > visible; runs offered in blocks of 1 to 130
 * keys; and the key-split walk's path: chunks cut back to their best, raised floors, then the
 * chunks' candidates merged in key order (lig_topk_offer_candidates) before the finish.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/operators/topk.h"
#include "framework.h"
#include "rng.h"

typedef struct ref_item {
    double rank;
    int64_t key;
    float score;
} ref_item;

static int ref_order(const void *a, const void *b) {
    const ref_item *x = a, *y = b;
    if (x->rank != y->rank) return x->rank > y->rank ? -1 : 1;
    return (x->key > y->key) - (x->key < y->key);
}

/* The reference's best min(n, K) of scores[0 .. n) (keys key0 + i) into ref (n items). */
static int64_t reference_topk(const float *scores, int64_t n, int64_t key0, int64_t K, ref_item *ref) {
    for (int64_t i = 0; i < n; i++) {
        double r = isnan(scores[i]) ? -INFINITY : (double)scores[i];
        if (r == 0.0) r = 0.0;
        ref[i] = (ref_item){.rank = r, .key = key0 + i, .score = scores[i]};
    }
    qsort(ref, (size_t)n, sizeof *ref, ref_order);
    return n < K ? n : K;
}

enum { DIST_UNIFORM, DIST_BELL, DIST_TIES, DIST_EQUAL, DIST_OUTLIER, DIST_SPECIAL, DIST_WIDE, DISTS };
static const char *const dist_name[DISTS] = {"uniform", "bell", "ties", "all-equal", "outlier", "special", "wide"};

static float draw(th_rng *r, int dist) {
    switch (dist) {
    case DIST_UNIFORM: return (float)(2.0 * th_rng_unit(r) - 1.0);
    case DIST_BELL: { /* a sum of ReLUs, as the forward's scores */
        double s = 0.0;
        for (int h = 0; h < 8; h++) s += (th_rng_unit(r) - 0.3) * fmax(0.0, th_rng_unit(r) - 0.5);
        return (float)s;
    }
    case DIST_TIES: {
        const double u = th_rng_unit(r);
        if (u < 0.05) return NAN;
        if (u < 0.2) return 0.0f;
        if (u < 0.35) return -0.0f;
        return (float)th_rng_range(r, -3, 3) * 0.5f;
    }
    case DIST_EQUAL: return 1.25f;
    case DIST_OUTLIER: return th_rng_chance(r, 0.002) ? 3e30f : (float)(1.0 + 1e-4 * th_rng_unit(r));
    case DIST_SPECIAL: {
        static const float pool[] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f, 1e-45f, -1e-45f, 1e-40f, FLT_MAX, -FLT_MAX, 1.0f, -1.0f};
        const float x = pool[th_rng_range(r, 0, (int64_t)(sizeof pool / sizeof pool[0]) - 1)];
        return th_rng_chance(r, 0.5) ? x : (float)(th_rng_unit(r) - 0.5);
    }
    default: { /* any finite bits, either sign */
        uint32_t b = (uint32_t)th_rng_next(r);
        if ((b & 0x7f800000u) == 0x7f800000u) b ^= 0x40000000u;
        float f;
        memcpy(&f, &b, sizeof f);
        return f;
    }
    }
}

static int same_result(const lig_topk *t, const ref_item *ref, int64_t want, const char *what, const char *dist, int64_t n,
                       int64_t K) {
    if (!CHECK(t->n == want, "%s, %s, %lld candidates, K = %lld: %lld kept, expected %lld", what, dist,
               (long long)n, (long long)K, (long long)t->n, (long long)want))
        return 0;
    for (int64_t j = 0; j < want; j++) {
        const int same = t->best[j].key == ref[j].key && memcmp(&t->best[j].score, &ref[j].score, sizeof(float)) == 0;
        if (!CHECK(same, "%s, %s, %lld candidates, K = %lld: slot %lld holds key %lld (%a), expected %lld (%a)", what,
                   dist, (long long)n, (long long)K, (long long)j, (long long)t->best[j].key,
                   (double)t->best[j].score, (long long)ref[j].key, (double)ref[j].score))
            return 0;
    }
    return 1;
}

/* One row: n scores offered in random blocks from key key0, K kept. */
static void one_stream(th_rng *r, const float *scores, int64_t n, int64_t key0, int64_t K, char *scratch,
                       int64_t plan_cap, ref_item *ref, const char *dist) {
    lig_topk t = lig_topk_start(scratch, plan_cap, n < K ? n : K);
    for (int64_t s = 0; s < n;) {
        const int64_t m = th_rng_range(r, 1, 130), take = n - s < m ? n - s : m;
        lig_topk_offer_run(&t, scores + s, take, key0 + s);
        s += take;
    }
    lig_topk_finish(&t);
    same_result(&t, ref, reference_topk(scores, n, key0, K, ref), "stream", dist, n, K);
}

/* The key-split walk: the n keys in `chunks` ranges, each cut back to its best (with the floor of
 * the chunks before, as one thread running them in order would have it), then merged. */
static void one_split(th_rng *r, const float *scores, int64_t n, int64_t K, int chunks, char *scratch, char *merge_scratch,
                      int64_t plan_cap, lig_candidate *kept, ref_item *ref, const char *dist) {
    int64_t count[8], start[9];
    for (int c = 0; c <= chunks; c++) start[c] = n * c / chunks;
    bool has_floor = false;
    float floor = 0.0f;
    for (int c = 0; c < chunks; c++) {
        const int64_t len = start[c + 1] - start[c];
        lig_topk t = lig_topk_start(scratch, plan_cap, n < K ? n : K);
        if (has_floor && th_rng_chance(r, 0.7)) lig_topk_floor(&t, floor);
        for (int64_t s = 0; s < len;) {
            const int64_t m = th_rng_range(r, 1, 130), take = len - s < m ? len - s : m;
            lig_topk_offer_run(&t, scores + start[c] + s, take, start[c] + s);
            s += take;
        }
        lig_topk_cut(&t);
        if (t.full && t.cap == K) {
            has_floor = true;
            floor = t.worst;
        }
        lig_topk_kept(&t, kept + c * plan_cap);
        count[c] = t.n;
    }
    lig_topk m = lig_topk_start(merge_scratch, plan_cap, n < K ? n : K);
    for (int c = 0; c < chunks; c++) lig_topk_offer_candidates(&m, kept + c * plan_cap, count[c]);
    lig_topk_finish(&m);
    same_result(&m, ref, reference_topk(scores, n, 0, K, ref), "split", dist, n, K);
}

LIG_TEST(topk_against_sorted_reference) {
    enum { MAX_N = 5000 };
    th_rng r = th_rng_make(1804);
    float *scores = malloc(sizeof(float) * MAX_N);
    ref_item *ref = malloc(sizeof(ref_item) * MAX_N);
    const int64_t plan_cap = MAX_N + 1;
    char *scratch = aligned_alloc(64, (size_t)((lig_topk_scratch_bytes(plan_cap) + 63) / 64 * 64));
    char *merge_scratch = aligned_alloc(64, (size_t)((lig_topk_scratch_bytes(plan_cap) + 63) / 64 * 64));
    lig_candidate *kept = malloc(sizeof(lig_candidate) * 8 * (size_t)plan_cap);
    if (!CHECK(scores && ref && scratch && merge_scratch && kept, "allocation")) goto done;
    static const int64_t sizes[] = {0, 1, 2, 3, 17, 100, 257, 1000, 2048, 2049, 3000, 4096, MAX_N};
    for (int dist = 0; dist < DISTS; dist++)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            const int64_t n = sizes[si];
            for (int64_t i = 0; i < n; i++) scores[i] = draw(&r, dist);
            const int64_t Ks[] = {1, 7, n / 3 + 1, n > 1 ? n - 1 : 1, n, n + 1, 2048, plan_cap};
            for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++) {
                const int64_t K = Ks[ki] < plan_cap ? Ks[ki] : plan_cap;
                one_stream(&r, scores, n, (int64_t)th_rng_range(&r, 0, 1000), K, scratch, plan_cap, ref, dist_name[dist]);
                if (n >= 8)
                    one_split(&r, scores, n, K, (int)th_rng_range(&r, 2, 8), scratch, merge_scratch, plan_cap, kept, ref,
                              dist_name[dist]);
            }
        }
done:
    free(scores), free(ref), free(scratch), free(merge_scratch), free(kept);
}

/* Many cuts: a small K over long rows, so that the floor rises cut after cut and most offers are
 * refused, with scores that rise along the keys (every offer enters), fall (none after the first
 * cut) or repeat. */
LIG_TEST(topk_many_cuts) {
    enum { N = 20000 };
    th_rng r = th_rng_make(77);
    float *scores = malloc(sizeof(float) * N);
    ref_item *ref = malloc(sizeof(ref_item) * N);
    const int64_t plan_cap = 300;
    char *scratch = aligned_alloc(64, (size_t)((lig_topk_scratch_bytes(plan_cap) + 63) / 64 * 64));
    if (!CHECK(scores && ref && scratch, "allocation")) goto done;
    static const char *const shape_name[] = {"rising", "falling", "repeating", "ties"};
    for (int shape = 0; shape < 4; shape++) {
        for (int64_t i = 0; i < N; i++)
            scores[i] = shape == 0 ? (float)i : shape == 1 ? (float)-i : shape == 2 ? (float)(i % 5) : draw(&r, DIST_TIES);
        for (int64_t K = 1; K <= plan_cap; K = K * 3 + 1) one_stream(&r, scores, N, 0, K, scratch, plan_cap, ref, shape_name[shape]);
    }
done:
    free(scores), free(ref), free(scratch);
}

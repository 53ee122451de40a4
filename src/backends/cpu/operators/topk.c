#include "backends/cpu/operators/topk.h"

#include <math.h>

static inline float rank_of(float s) { return isnan(s) ? -INFINITY : s; }

/* a ranks strictly before b */
static inline int better(const lig_candidate *a, const lig_candidate *b) {
    const float ra = rank_of(a->score), rb = rank_of(b->score);
    return ra > rb || (ra == rb && a->key < b->key);
}

/* Restores the heap below position i (children that rank worse move up). */
static void sift_down(lig_candidate *h, int64_t n, int64_t i) {
    const lig_candidate x = h[i];
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && better(&h[c], &h[c + 1])) c++; /* the worse child */
        if (!better(&x, &h[c])) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

void lig_topk_offer(lig_topk *t, float score, int64_t key) {
    const lig_candidate c = {score, key};
    lig_candidate *h = t->heap;
    if (t->size < t->cap) { /* sift up: parents must rank no better than their children */
        int64_t i = t->size++;
        while (i > 0) {
            const int64_t parent = (i - 1) / 2;
            if (!better(&h[parent], &c)) break;
            h[i] = h[parent];
            i = parent;
        }
        h[i] = c;
        return;
    }
    if (t->cap == 0 || !better(&c, &h[0])) return;
    h[0] = c;
    sift_down(h, t->size, 0);
}

void lig_topk_sort(lig_topk *t) {
    /* repeatedly move the worst (root) to the end of the shrinking heap: best ends first */
    for (int64_t n = t->size; n > 1; n--) {
        const lig_candidate worst = t->heap[0];
        t->heap[0] = t->heap[n - 1];
        t->heap[n - 1] = worst;
        sift_down(t->heap, n - 1, 0);
    }
}

#include "backends/cpu/operators/topk.h"

#include <string.h>

int64_t lig_topk_pending_cap(int64_t cap) { return cap > 256 ? cap : 256; }

int64_t lig_topk_words(int64_t cap) { return 2 * lig_topk_pending_cap(cap) + 3 * 2048 / 2; }

/* An unsigned key whose ascending order is the descending order of ranks (-0 as +0). */
static inline uint32_t sort_key(float score) {
    float r = lig_topk_rank(score);
    if (r == 0.0f) r = 0.0f;
    uint32_t u;
    memcpy(&u, &r, sizeof u);
    u ^= (u >> 31) ? 0xffffffffu : 0x80000000u; /* ascending order of floats */
    return ~u;
}

/* Stable LSD radix sort of the n pending candidates by sort_key: words (key << 32 | position)
 * sorted in three passes of 11 bits over the key half, in words[0 .. 2n) (two halves that take
 * turns), with count[3][2048]. Returns the sorted words; the candidates themselves do not move.
 * Stable, so candidates of equal rank keep their (increasing) key order. */
enum { BITS = 11, BUCKETS = 1 << BITS };

static const uint64_t *radix_sort(const lig_candidate *c, uint64_t *words, uint32_t (*count)[BUCKETS], int64_t n) {
    memset(count, 0, sizeof(uint32_t) * 3 * BUCKETS);
    uint64_t *src = words, *dst = words + n;
    for (int64_t i = 0; i < n; i++) {
        const uint32_t k = sort_key(c[i].score);
        src[i] = (uint64_t)k << 32 | (uint64_t)i;
        count[0][k & (BUCKETS - 1)]++;
        count[1][(k >> BITS) & (BUCKETS - 1)]++;
        count[2][k >> (2 * BITS)]++;
    }
    for (int d = 0; d < 3; d++) {
        const int shift = 32 + BITS * d;
        if (count[d][(src[0] >> shift) & (BUCKETS - 1)] == (uint32_t)n) continue; /* one bucket: nothing moves */
        uint32_t at = 0;
        for (int b = 0; b < BUCKETS; b++) {
            const uint32_t m = count[d][b];
            count[d][b] = at;
            at += m;
        }
        for (int64_t i = 0; i < n; i++) dst[count[d][(src[i] >> shift) & (BUCKETS - 1)]++] = src[i];
        uint64_t *x = src;
        src = dst;
        dst = x;
    }
    return src;
}

void lig_topk_merge(lig_topk *t) {
    const int64_t np = t->npending;
    t->npending = 0;
    if (np == 0 || t->cap == 0) return;
    const uint64_t *order = radix_sort(t->pending, t->words, (uint32_t(*)[BUCKETS])(void *)(t->words + 2 * t->pending_cap), np);
    /* merge: on equal ranks the kept candidate (a lower key) goes first */
    const int64_t total = t->nkept + np < t->cap ? t->nkept + np : t->cap;
    int64_t i = 0, j = 0;
    for (int64_t o = 0; o < total; o++) {
        const lig_candidate *p = j < np ? &t->pending[(uint32_t)order[j]] : NULL;
        const int take_kept = !p || (i < t->nkept && !(lig_topk_rank(p->score) > lig_topk_rank(t->kept[i].score)));
        if (take_kept) t->spare[o] = t->kept[i++];
        else {
            t->spare[o] = *p;
            j++;
        }
    }
    lig_candidate *x = t->kept;
    t->kept = t->spare;
    t->spare = x;
    t->nkept = total;
    if (total == t->cap) t->worst = lig_topk_rank(t->kept[total - 1].score);
}

#include "backends/cpu/operators/topk.h"

#include <string.h>

#include "core/workspace.h"

enum { RADIX = 256, DIGITS = 2048 }; /* the select's byte, the sort's 11-bit digit */

typedef struct topk_layout {
    uint64_t buf, best, rank_key, sel, words, count, total;
} topk_layout;

static topk_layout layout_for(int64_t cap) {
    topk_layout l;
    uint64_t at = 0;
    const uint64_t c = cap > 0 ? (uint64_t)cap : 1;
    l.buf = lig_ws_take(&at, lig_size_mul(sizeof(lig_candidate) * 2, c));
    l.best = lig_ws_take(&at, lig_size_mul(sizeof(lig_candidate), c));
    l.rank_key = lig_ws_take(&at, lig_size_mul(sizeof(uint32_t) * 2, c));
    l.sel = lig_ws_take(&at, lig_size_mul(sizeof(uint32_t) * 2, c));
    l.words = lig_ws_take(&at, lig_size_mul(sizeof(uint64_t) * 2, c));
    l.count = lig_ws_take(&at, sizeof(uint32_t) * DIGITS);
    l.total = at;
    return l;
}

uint64_t lig_topk_scratch_bytes(int64_t cap) { return layout_for(cap).total; }

lig_topk lig_topk_start(char *scratch, int64_t plan_cap, int64_t cap) {
    const topk_layout l = layout_for(plan_cap);
    return (lig_topk){.buf = (lig_candidate *)(void *)(scratch + l.buf),
                      .best = (lig_candidate *)(void *)(scratch + l.best),
                      .rank_key = (uint32_t *)(void *)(scratch + l.rank_key),
                      .sel = (uint32_t *)(void *)(scratch + l.sel),
                      .words = (uint64_t *)(void *)(scratch + l.words),
                      .count = (uint32_t *)(void *)(scratch + l.count),
                      .cap = cap};
}

/* An unsigned key whose ascending order is the descending order of ranks (-0 as +0). */
static inline uint32_t sort_key(float score) {
    float r = lig_topk_rank(score);
    if (r == 0.0f) r = 0.0f;
    uint32_t u;
    memcpy(&u, &r, sizeof u);
    u ^= (u >> 31) ? 0xffffffffu : 0x80000000u; /* ascending order of floats */
    return ~u;
}

/* Counts the byte at `shift` of n keys, in two histograms (even and odd positions) added at the
 * end: a run of equal bytes (the top byte of similar scores) would otherwise make every
 * increment wait for the one before. */
static void histogram(const uint32_t *key, int64_t n, int shift, uint32_t *count) {
    uint32_t *odd = count + RADIX;
    memset(count, 0, sizeof(uint32_t) * 2 * RADIX);
    int64_t i = 0;
    for (; i + 1 < n; i += 2) {
        count[(key[i] >> shift) & (RADIX - 1)]++;
        odd[(key[i + 1] >> shift) & (RADIX - 1)]++;
    }
    if (i < n) count[(key[i] >> shift) & (RADIX - 1)]++;
    for (int b = 0; b < RADIX; b++) count[b] += odd[b];
}

/* The want-th smallest (1-based) of the n keys, byte by byte from the top, each step counting
 * only the keys that share the bytes found so far (copied to `sel`). *ties receives how many
 * keys equal to it are among the want smallest. */
static uint32_t select_key(const uint32_t *key, int64_t n, int64_t want, uint32_t *sel, uint32_t *count,
                           int64_t *ties) {
    uint32_t prefix = 0;
    const uint32_t *from = key;
    int64_t m = n;
    for (int shift = 24;; shift -= 8) {
        histogram(from, m, shift, count);
        uint32_t b = 0;
        while ((int64_t)count[b] < want) want -= count[b++];
        prefix |= b << shift;
        if (shift == 0) break;
        if ((int64_t)count[b] == m) continue; /* every member is in bucket b: nothing to drop */
        const uint32_t mask = ~0u << shift; /* the members of bucket b agree with prefix above `shift` */
        int64_t k = 0;
        for (int64_t i = 0; i < m; i++) {
            sel[k] = from[i];
            k += (from[i] & mask) == prefix;
        }
        from = sel;
        m = k;
    }
    *ties = want;
    return prefix;
}

void lig_topk_cut(lig_topk *t) {
    const int64_t n = t->n;
    if (n <= t->cap) return;
    uint32_t *key = t->rank_key;
    for (int64_t i = 0; i < n; i++) key[i] = sort_key(t->buf[i].score);
    int64_t ties;
    const uint32_t cut = select_key(key, n, t->cap, t->sel, t->count, &ties);
    /* stable: the buffer stays in key order and the ties at the cut that stay are the first */
    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) {
        const bool at_cut = key[i] == cut;
        const bool keep = key[i] < cut || (at_cut && ties > 0);
        if (at_cut && keep) {
            ties--;
            t->worst = lig_topk_rank(t->buf[i].score);
        }
        t->buf[kept] = t->buf[i];
        kept += keep;
    }
    t->n = kept; /* == cap */
    t->full = true;
}

/* A stable sort of the kept candidates by sort_key into t->best: an LSD radix sort on the top
 * 22 bits (two passes of 11; a pass whose digit is the same for all is skipped), then an
 * insertion pass on the whole key, which only moves keys that agree in their top 22 bits. */
enum { DIGIT = 11 };

void lig_topk_finish(lig_topk *t) {
    if (t->n > t->cap) lig_topk_cut(t);
    const int64_t n = t->n;
    if (n == 0) return;
    uint32_t *key = t->rank_key, *count = t->count;
    for (int64_t i = 0; i < n; i++) key[i] = sort_key(t->buf[i].score);
    uint64_t *src = t->words, *dst = t->words + n;
    for (int64_t i = 0; i < n; i++) src[i] = (uint64_t)key[i] << 32 | (uint64_t)i;
    for (int pass = 0; pass < 2; pass++) {
        const int shift = 32 + 32 - 2 * DIGIT + DIGIT * pass;
        memset(count, 0, sizeof(uint32_t) * DIGITS);
        for (int64_t i = 0; i < n; i++) count[(src[i] >> shift) & (DIGITS - 1)]++;
        if (count[(src[0] >> shift) & (DIGITS - 1)] == (uint32_t)n) continue; /* one bucket: nothing moves */
        uint32_t at = 0;
        for (int b = 0; b < DIGITS; b++) {
            const uint32_t m = count[b];
            count[b] = at;
            at += m;
        }
        for (int64_t i = 0; i < n; i++) dst[count[(src[i] >> shift) & (DIGITS - 1)]++] = src[i];
        uint64_t *x = src;
        src = dst;
        dst = x;
    }
    /* (key, position) words: equal keys stay in position order */
    for (int64_t i = 1; i < n; i++) {
        const uint64_t w = src[i];
        int64_t j = i;
        for (; j > 0 && src[j - 1] > w; j--) src[j] = src[j - 1];
        src[j] = w;
    }
    for (int64_t i = 0; i < n; i++) t->best[i] = t->buf[(uint32_t)src[i]];
}

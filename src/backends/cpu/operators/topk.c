#include "backends/cpu/operators/topk.h"

#include <float.h>
#include <string.h>

#include "core/workspace.h"

/* A digit of the radix passes has at most 11 bits (the finish's four histograms of 2048, 32 KiB,
 * stay in L1); a sub-sort's digit at most 8 (its histogram on the stack); runs of up to
 * INSERTION candidates are sorted by insertion. */
enum { DIGIT_BITS = 11, DIGITS = 1 << DIGIT_BITS, SUB_BITS = 8, INSERTION = 16 };

typedef struct topk_layout {
    uint64_t score, key, best, level, words, count, total;
} topk_layout;

static topk_layout layout_for(int64_t cap) {
    topk_layout l;
    uint64_t at = 0;
    const uint64_t c = cap > 0 ? (uint64_t)cap : 1;
    l.score = lig_ws_take(&at, lig_size_mul(sizeof(float) * 2, c));
    l.key = lig_ws_take(&at, lig_size_mul(sizeof(int64_t) * 2, c));
    l.best = lig_ws_take(&at, lig_size_mul(sizeof(lig_candidate), c));
    l.level = lig_ws_take(&at, lig_size_mul(sizeof(uint32_t) * 2, c));
    l.words = lig_ws_take(&at, lig_size_mul(sizeof(uint64_t) * 4, c));
    l.count = lig_ws_take(&at, sizeof(uint32_t) * 4 * DIGITS);
    l.total = at;
    return l;
}

uint64_t lig_topk_scratch_bytes(int64_t cap) { return layout_for(cap).total; }

lig_topk lig_topk_start(char *scratch, int64_t plan_cap, int64_t cap) {
    const topk_layout l = layout_for(plan_cap);
    return (lig_topk){.score = (float *)(void *)(scratch + l.score),
                      .key = (int64_t *)(void *)(scratch + l.key),
                      .best = (lig_candidate *)(void *)(scratch + l.best),
                      .level = (uint32_t *)(void *)(scratch + l.level),
                      .words = (uint64_t *)(void *)(scratch + l.words),
                      .count = (uint32_t *)(void *)(scratch + l.count),
                      .cap = cap};
}

/* An unsigned key whose ascending order is the descending order of ranks (NaN as -inf, -0 as
 * +0), from the score's bits; branch-free, so that the loop over a buffer vectorises. */
static inline uint32_t sort_key(uint32_t b) {
    b = (b & 0x7fffffffu) > 0x7f800000u ? 0xff800000u : b; /* NaN: -inf */
    b = b == 0x80000000u ? 0u : b;                          /* -0: +0 */
    return b ^ (~(0u - (b >> 31)) & 0x7fffffffu);          /* positives: higher first; then negatives */
}

/* The sort key of a buffered score. */
static inline uint32_t key_of(const float *score, int64_t i) {
    uint32_t b;
    memcpy(&b, score + i, sizeof b);
    return sort_key(b);
}

static inline uint64_t word_of(const float *score, int64_t i) { return (uint64_t)key_of(score, i) << 32 | (uint64_t)i; }

/* The rank whose sort key is v (v from a finite rank). */
static float rank_of_key(uint32_t v) {
    const uint32_t b = v <= 0x7fffffffu ? v ^ 0x7fffffffu : v;
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* The ranks of a buffer: all equal or not, and the highest and lowest finite ones (0 and 0 when
 * none is finite). Finite ranks have the sort keys [0x00800000, 0xff7fffff] (+inf 0x007fffff,
 * -inf and NaN 0xff800000). One pass of two integer reductions, which vectorises (float ones do
 * not, for the sake of -0 and NaN, and more reductions in the loop stop gcc); only a buffer with
 * an infinity or a NaN takes a second pass for its finite range. */
typedef struct rank_range {
    bool equal;
    float hi, lo;
} rank_range;

static rank_range rank_range_of(const float *score, int64_t n) {
    uint32_t first = ~0u, last = 0;
    for (int64_t i = 0; i < n; i++) {
        const uint32_t v = key_of(score, i);
        first = v < first ? v : first;
        last = v > last ? v : last;
    }
    if (first < 0x00800000u || last > 0xff7fffffu) {
        /* shifted down, +inf wraps to the top and -inf stays above every finite key: neither is
         * the minimum while a finite key exists; shifted up, -inf wraps to 0 and +inf stays below
         * every finite key: neither is the maximum. (Rare: only a buffer with an infinity or a NaN.) */
        uint32_t best = ~0u, worst = 0;
        for (int64_t i = 0; i < n; i++) {
            const uint32_t v = key_of(score, i) - 0x00800000u;
            best = v < best ? v : best;
        }
        for (int64_t i = 0; i < n; i++) {
            const uint32_t v = key_of(score, i) + 0x00800000u;
            worst = v > worst ? v : worst;
        }
        const bool any = best <= 0xfeffffffu;
        return (rank_range){.equal = first == last,
                            .hi = any ? rank_of_key(best + 0x00800000u) : 0.0f,
                            .lo = any ? rank_of_key(worst - 0x00800000u) : 0.0f};
    }
    return (rank_range){.equal = first == last, .hi = rank_of_key(first), .lo = rank_of_key(last)};
}

/* Each candidate's level in [0, levels): linear in the rank from the highest finite rank (level
 * 0) to the lowest (the last), +inf in the first, NaN and -inf in the last. It never rises as
 * the rank falls (fp subtraction, and multiplication by a positive scale, are monotone), so
 * ordering by level is ordering by rank except among equal levels; linear in the score, not
 * in its bits, because scores spread evenly or in a bell over a few binades, and a digit of
 * their bits would put them in a few buckets. No NaN arises (the scale is finite and > 0), and
 * the loop vectorises. */
static void rank_levels(const float *score, int64_t n, float lo, float hi, uint32_t levels, uint32_t *level) {
    float range = hi - lo;
    if (!(range <= FLT_MAX)) range = FLT_MAX;
    float scale = (float)levels / range;
    if (!(scale <= FLT_MAX)) scale = FLT_MAX;
    const float last = (float)(levels - 1); /* levels <= 2^22: exact */
    for (int64_t i = 0; i < n; i++) {
        const float r = score[i] == score[i] ? score[i] : -INFINITY;
        float x = (hi - r) * scale;
        x = x > 0.0f ? x : 0.0f;
        x = x < last ? x : last;
        level[i] = (uint32_t)(int32_t)x;
    }
}

static int top_bit(uint64_t x) { /* x != 0 */
    int b = 0;
    while (x >>= 1) b++;
    return b;
}

/* Digit width for n candidates: about one bucket per candidate, between 4 bits and `most`. */
static int digit_bits(int64_t n, int most) {
    const int b = top_bit((uint64_t)n) + 1;
    return b < 4 ? 4 : b > most ? most : b;
}

/* Digit width of the finish's two LSD passes for n candidates: levels (2^(2 bits) of them) about
 * 32 times as many as candidates, so that few share one, and histograms no longer than needed
 * (turning one into places is a serial pass over its buckets). */
static int lsd_bits(int64_t n) {
    const int b = (top_bit((uint64_t)n) + 1 + 5 + 1) / 2;
    return b < 4 ? 4 : b > DIGIT_BITS ? DIGIT_BITS : b;
}

static void insertion_sort(uint64_t *w, int64_t n) {
    for (int64_t i = 1; i < n; i++) {
        const uint64_t x = w[i];
        int64_t j = i;
        for (; j > 0 && w[j - 1] > x; j--) w[j] = w[j - 1];
        w[j] = x;
    }
}

/* Sorts n (rank key, position) words ascending, given in position order among equal rank keys:
 * by the rank keys' highest digit on which they differ, stably into tmp and back, then each
 * bucket the same way (its keys agree down to that digit, so this ends); equal keys are done.
 * tmp holds n words. */
static void sort_words(uint64_t *w, int64_t n, uint64_t *tmp) {
    if (n <= INSERTION) {
        insertion_sort(w, n);
        return;
    }
    uint32_t any = 0, all = ~0u;
    for (int64_t i = 0; i < n; i++) {
        any |= (uint32_t)(w[i] >> 32);
        all &= (uint32_t)(w[i] >> 32);
    }
    if (any == all) return;
    const int bits = digit_bits(n, SUB_BITS), top = top_bit(any & ~all) + 1 - bits;
    const int shift = 32 + (top > 0 ? top : 0);
    const uint32_t mask = (1u << bits) - 1, digits = 1u << bits;
    uint32_t count[1 << SUB_BITS];
    memset(count, 0, sizeof(uint32_t) * digits);
    for (int64_t i = 0; i < n; i++) count[(w[i] >> shift) & mask]++;
    uint32_t at = 0;
    for (uint32_t d = 0; d < digits; d++) {
        const uint32_t c = count[d];
        count[d] = at;
        at += c;
    }
    for (int64_t i = 0; i < n; i++) tmp[count[(w[i] >> shift) & mask]++] = w[i];
    memcpy(w, tmp, sizeof(uint64_t) * (size_t)n);
    uint32_t start = 0;
    for (uint32_t d = 0; d < digits; d++) {
        if (count[d] - start > 1) sort_words(w + start, count[d] - start, tmp);
        start = count[d];
    }
}

/* Turns counts into each bucket's first place; returns the bucket that holds the want-th
 * candidate (1-based; `digits` when there are fewer): the buckets whose end comes before it. */
static uint32_t first_places(uint32_t *count, uint32_t digits, int64_t want) {
    uint32_t at = 0, holder = 0;
    for (uint32_t d = 0; d < digits; d++) {
        const uint32_t c = count[d];
        count[d] = at;
        at += c;
        holder += (int64_t)at < want;
    }
    return holder;
}

/* The want-th best (1-based, want <= n) of the buffer's n candidates as a (rank key, position)
 * word: the bucket of levels that holds it, then that bucket's members sorted. */
static uint64_t select_word(lig_topk *t, int64_t n, int64_t want) {
    const rank_range rr = rank_range_of(t->score, n);
    if (rr.equal) return word_of(t->score, want - 1); /* position order */
    const uint32_t digits = 1u << digit_bits(n, DIGIT_BITS);
    rank_levels(t->score, n, rr.lo, rr.hi, digits, t->level);
    uint32_t *count = t->count;
    memset(count, 0, sizeof(uint32_t) * digits);
    for (int64_t i = 0; i < n; i++) count[t->level[i]]++;
    const uint32_t b = first_places(count, digits, want);
    want -= count[b]; /* the candidates of the buckets before b */
    uint64_t *w = t->words;
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        w[m] = word_of(t->score, i);
        m += t->level[i] == b;
    }
    sort_words(w, m, w + n);
    return w[want - 1];
}

void lig_topk_cut(lig_topk *t) {
    const int64_t n = t->n;
    if (n <= t->cap) return;
    const uint64_t cut = select_word(t, n, t->cap);
    t->worst = lig_topk_rank(t->score[(uint32_t)cut]);
    /* stable: the buffer stays in key order, and the ties at the cut that stay are the first */
    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) {
        t->score[kept] = t->score[i];
        t->key[kept] = t->key[i];
        kept += word_of(t->score, i) <= cut;
    }
    t->n = kept; /* == cap */
    t->full = true;
}

/* The histograms of the levels' low and high digits (`bits` each). Even and odd positions count
 * into tables of their own, added at the end: equal levels in a row (ties, or crowded scores)
 * would otherwise make every increment wait for the one before. 4 << bits counters at count. */
static void histograms(const uint32_t *level, int64_t n, int bits, uint32_t *low, uint32_t *high) {
    const uint32_t digits = 1u << bits, mask = digits - 1;
    uint32_t *low_odd = high + digits, *high_odd = low_odd + digits;
    memset(low, 0, sizeof(uint32_t) * 4 * digits);
    int64_t i = 0;
    for (; i + 1 < n; i += 2) {
        low[level[i] & mask]++;
        high[level[i] >> bits]++;
        low_odd[level[i + 1] & mask]++;
        high_odd[level[i + 1] >> bits]++;
    }
    if (i < n) {
        low[level[i] & mask]++;
        high[level[i] >> bits]++;
    }
    for (uint32_t d = 0; d < digits; d++) {
        low[d] += low_odd[d];
        high[d] += high_odd[d];
    }
}

/* Orders the m (level, position) words of w, sorted by level, by (rank key, position): each run
 * of equal levels (rare: a level is much finer than the gaps between candidates, unless ranks
 * tie or crowd) becomes (rank key, position) words, sorted. tmp holds m words. */
static void order_equal_levels(uint64_t *w, int64_t m, const float *score, uint64_t *tmp) {
    for (int64_t i = 0; i < m;) {
        int64_t j = i + 1;
        while (j < m && (w[j] >> 32) == (w[i] >> 32)) j++;
        if (j - i > 1) {
            for (int64_t r = i; r < j; r++) w[r] = word_of(score, (uint32_t)w[r]);
            sort_words(w + i, j - i, tmp);
        }
        i = j;
    }
}

void lig_topk_finish(lig_topk *t) {
    const int64_t n = t->n, want = n < t->cap ? n : t->cap;
    t->n = want;
    if (want == 0) return;
    const rank_range rr = rank_range_of(t->score, n);
    if (rr.equal) { /* the first keys */
        for (int64_t j = 0; j < want; j++) t->best[j] = (lig_candidate){.score = t->score[j], .key = t->key[j]};
        return;
    }
    /* an LSD radix sort of the levels (two digits of `bits`), stable, so that equal levels stay
     * in position order; only the part the result can need (up to the end of the high digit's
     * bucket that holds the want-th) is looked at again, and only its runs of equal levels are
     * sorted further */
    const int bits = lsd_bits(n);
    const uint32_t digits = 1u << bits, mask = digits - 1, *level = t->level;
    rank_levels(t->score, n, rr.lo, rr.hi, digits << bits, t->level);
    uint32_t *low = t->count, *high = t->count + digits;
    histograms(level, n, bits, low, high);
    first_places(low, digits, n);
    const uint32_t last = first_places(high, digits, want);
    uint64_t *w = t->words, *tmp = t->words + n;
    for (int64_t i = 0; i < n; i++) tmp[low[level[i] & mask]++] = (uint64_t)level[i] << 32 | (uint64_t)i;
    const int64_t m = last + 1 < digits ? high[last + 1] : n; /* the end of bucket `last` */
    for (int64_t i = 0; i < n; i++) w[high[(uint32_t)(tmp[i] >> 32) >> bits]++] = tmp[i]; /* all: no branch */
    order_equal_levels(w, m, t->score, tmp);
    for (int64_t j = 0; j < want; j++) {
        const uint32_t p = (uint32_t)w[j];
        t->best[j] = (lig_candidate){.score = t->score[p], .key = t->key[p]};
    }
}

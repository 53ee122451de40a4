/* Streaming top-k over (score, key) candidates offered in increasing key order. Order: higher
 * score first, ties to the lower key; a NaN score ranks as -inf and -0 as +0 (the score written
 * out is the one offered).
 *
 * Offers go to a buffer, kept in key order, of twice the capacity, held as two arrays (scores,
 * keys: an offer is a copy of the block's scores and a count of keys, not 16-byte records):
 * every offer until the buffer first fills, then only those that rank above the worst kept one
 * (an equal rank with a higher key loses its tie). Every order question is asked of one 64-bit
 * word per candidate, (rank as an unsigned integer, buffer position): the position is the key
 * order, so the word's order is the result's, ties included (positions are 32-bit: a buffer
 * holds fewer than 2^32 candidates). A full buffer is cut back to the best `cap` by a select on
 * levels linear in the rank and a stable compaction; the finish is a two-pass LSD radix sort of
 * the levels of which only the part the result needs is looked at again (topk.c,
 * docs/cpu-kernels.md). Every step is linear and the offer is a copy, or a compare and an
 * append. */
#ifndef LIG_CPU_OPERATORS_TOPK_H
#define LIG_CPU_OPERATORS_TOPK_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* A selection candidate: its fp32 score and its batch-local key index (the result, and what a
 * split walk's slices hand to the merge). */
typedef struct lig_candidate {
    float score;
    int64_t key;
} lig_candidate;

typedef struct lig_topk {
    float *score;        /* 2 * cap: the buffer's scores, in increasing key order */
    int64_t *key;        /* 2 * cap: their keys */
    lig_candidate *best; /* cap: the result, best first (lig_topk_finish) */
    uint32_t *level;     /* 2 * cap: the buffer's levels, linear in the rank (topk.c) */
    uint64_t *words;     /* 4 * cap: the (rank, position) words and the sort's second buffer */
    uint32_t *count;     /* 4 x 2048: the radix passes' histograms */
    int64_t n, cap;
    bool full;           /* the buffer was cut back once: later offers must beat `worst` */
    float worst;         /* rank of the cap-th best so far, once full */
} lig_topk;

/* Bytes of scratch (64-byte aligned) a top-k of at most `cap` candidates uses; saturates
 * (core/size.h) when that passes 2^64. */
uint64_t lig_topk_scratch_bytes(int64_t cap);

/* An empty top-k keeping cap <= the plan's cap candidates, in `scratch`. */
lig_topk lig_topk_start(char *scratch, int64_t plan_cap, int64_t cap);

static inline float lig_topk_rank(float s) { return isnan(s) ? -INFINITY : s; }

/* Cuts the buffer back to the best cap candidates, kept in key order (the offer and the finish
 * call it; the split walk calls it to keep a slice's best for the merge, fwd_split.h). */
void lig_topk_cut(lig_topk *t);

/* Offers the scores of keys key0, key0 + 1, ... key0 + n - 1 (above every key offered before):
 * each enters the buffer unless the buffer was cut back before and it does not rank above the
 * worst kept one; the buffer's room is checked once per run of offers. `s > worst` is the rank
 * comparison: a NaN score (rank -inf) compares false, as does -0 against a +0 worst. */
static inline void lig_topk_offer_run(lig_topk *t, const float *score, int64_t n, int64_t key0) {
    if (t->cap == 0) return; /* nothing is kept (and there is no room to count down) */
    while (n > 0) {
        const int64_t room = 2 * t->cap - t->n, m = n < room ? n : room;
        float *bs = t->score + t->n;
        int64_t *bk = t->key + t->n;
        int64_t k = 0;
        if (!t->full) {
            memcpy(bs, score, sizeof(float) * (size_t)m);
            for (int64_t i = 0; i < m; i++) bk[i] = key0 + i;
            k = m;
        } else {
            const float worst = t->worst;
            for (int64_t i = 0; i < m; i++) { /* written always, kept when it ranks above the worst */
                bs[k] = score[i];
                bk[k] = key0 + i;
                k += score[i] > worst;
            }
        }
        t->n += k;
        if (t->n == 2 * t->cap) lig_topk_cut(t);
        score += m;
        key0 += m;
        n -= m;
    }
}

/* Rejects from now on every offer that does not rank above `worst`: for a caller that knows cap
 * better candidates with lower keys exist elsewhere (the split walk's earlier slices, fwd_split.h). */
static inline void lig_topk_floor(lig_topk *t, float worst) {
    t->full = true;
    t->worst = worst;
}

/* Offers n candidates whose keys increase, each above every key offered before (the kept
 * candidates of consecutive key ranges, range after range): the same rule as lig_topk_offer_run. */
static inline void lig_topk_offer_candidates(lig_topk *t, const lig_candidate *c, int64_t n) {
    if (t->cap == 0) return;
    for (int64_t i = 0; i < n; i++) {
        if (t->full && !(c[i].score > t->worst)) continue;
        t->score[t->n] = c[i].score;
        t->key[t->n] = c[i].key;
        if (++t->n == 2 * t->cap) lig_topk_cut(t);
    }
}

/* The buffer's t->n candidates, in key order, into out (a slice's kept candidates for the merge). */
static inline void lig_topk_kept(const lig_topk *t, lig_candidate *out) {
    for (int64_t i = 0; i < t->n; i++) out[i] = (lig_candidate){.score = t->score[i], .key = t->key[i]};
}

/* Sorts the best min(n, cap) candidates, best first, into t->best[0 .. t->n) (t->n becomes that
 * count). */
void lig_topk_finish(lig_topk *t);

#endif

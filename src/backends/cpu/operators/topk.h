/* Streaming top-k over (score, key) candidates offered in increasing key order. Kept: the best
 * candidates so far, sorted best first. Offers that can still enter (all of them until `cap`
 * are kept, then only scores above the worst kept one: an equal score with a higher key loses
 * its tie) are appended to a pending list; a full list is sorted (a stable radix sort on the
 * score) and merged into the kept ones, which costs O(1) per pending candidate instead of a
 * heap's O(log K). Order: higher score first, ties to the lower key; a NaN score ranks as -inf
 * and -0 as +0 (the score written out is the one offered). */
#ifndef LIG_CPU_OPERATORS_TOPK_H
#define LIG_CPU_OPERATORS_TOPK_H

#include <math.h>
#include <stdint.h>

/* A selection candidate: its fp32 score and its batch-local key index. */
typedef struct lig_candidate {
    float score;
    int64_t key;
} lig_candidate;

typedef struct lig_topk {
    lig_candidate *kept, *pending, *spare; /* spare: as large as kept, for the merge */
    uint64_t *words;                       /* lig_topk_words(cap): the sort's keys and counts */
    int64_t nkept, npending, cap, pending_cap;
    float worst;                           /* rank of kept[cap - 1] once nkept == cap */
} lig_topk;

/* Candidates per pending list for a plan keeping at most `cap` (the scratch it needs is
 * 2 * max(cap, pending) + pending candidates and 2 * pending words). */
int64_t lig_topk_pending_cap(int64_t cap);

/* 64-bit words of sort scratch for a plan keeping at most `cap`. */
int64_t lig_topk_words(int64_t cap);

static inline float lig_topk_rank(float s) { return isnan(s) ? -INFINITY : s; }

/* Sorts the pending list and merges it into the kept candidates. */
void lig_topk_merge(lig_topk *t);

/* Offers a candidate; keys must increase from one offer to the next. */
static inline void lig_topk_offer(lig_topk *t, float score, int64_t key) {
    if (t->nkept == t->cap && !(lig_topk_rank(score) > t->worst)) return;
    t->pending[t->npending].score = score;
    t->pending[t->npending].key = key;
    if (++t->npending == t->pending_cap) lig_topk_merge(t);
}

/* The kept candidates, best first: t->kept[0 .. t->nkept). */
static inline void lig_topk_finish(lig_topk *t) {
    if (t->npending) lig_topk_merge(t);
}

#endif

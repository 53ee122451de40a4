/* Streaming top-k over (score, key) candidates offered in increasing key order. Order: higher
 * score first, ties to the lower key; a NaN score ranks as -inf and -0 as +0 (the score written
 * out is the one offered).
 *
 * Offers go to a buffer, kept in key order, of twice the capacity: every offer until the buffer
 * first fills, then only those that rank above the worst kept one (an equal rank with a higher
 * key loses its tie). A full buffer is cut back to the best `cap` by a radix select (a histogram
 * of the top byte, then of the next bytes of the one bucket that holds the cut) and a stable
 * compaction, so that equal ranks keep their lower keys; only the final `cap` are sorted, once.
 * Every step is linear and the offer is a compare and an append: a sorted list merged on every
 * overflow cost more than the scores themselves at small head groups. */
#ifndef LIG_CPU_OPERATORS_TOPK_H
#define LIG_CPU_OPERATORS_TOPK_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* A selection candidate: its fp32 score and its batch-local key index. */
typedef struct lig_candidate {
    float score;
    int64_t key;
} lig_candidate;

typedef struct lig_topk {
    lig_candidate *buf;  /* 2 * cap candidates, in increasing key order */
    lig_candidate *best; /* cap: the result, best first (lig_topk_finish) */
    uint32_t *rank_key;  /* 2 * cap: the buffer's ranks as sortable integers */
    uint32_t *sel;       /* 2 * cap: the select's bucket members */
    uint64_t *words;     /* 2 * cap: the sort's (rank, position) words */
    uint32_t *count;     /* 2048: the select's and the sort's histograms */
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
 * call it; a key-split walk calls it to keep a chunk's best for the merge, fwd_split.h). */
void lig_topk_cut(lig_topk *t);

/* Offers the scores of keys key0, key0 + 1, ... key0 + n - 1 (above every key offered before):
 * each enters the buffer unless the buffer was cut back before and it does not rank above the
 * worst kept one; the buffer's room is checked once per run of offers. */
static inline void lig_topk_offer_run(lig_topk *t, const float *score, int64_t n, int64_t key0) {
    if (t->cap == 0) return; /* nothing is kept (and there is no room to count down) */
    while (n > 0) {
        const int64_t room = 2 * t->cap - t->n, m = n < room ? n : room;
        lig_candidate *b = t->buf + t->n;
        int64_t k = 0;
        if (!t->full) {
            for (int64_t i = 0; i < m; i++) {
                b[i].score = score[i];
                b[i].key = key0 + i;
            }
            k = m;
        } else {
            const float worst = t->worst;
            for (int64_t i = 0; i < m; i++) { /* written always, kept when it ranks above the worst */
                b[k].score = score[i];
                b[k].key = key0 + i;
                k += lig_topk_rank(score[i]) > worst;
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
 * better candidates with lower keys exist elsewhere (a key split's earlier chunks, fwd_split.h). */
static inline void lig_topk_floor(lig_topk *t, float worst) {
    t->full = true;
    t->worst = worst;
}

/* Offers n candidates whose keys increase, each above every key offered before (the kept
 * candidates of consecutive key ranges, range after range): the same rule as lig_topk_offer_run. */
static inline void lig_topk_offer_candidates(lig_topk *t, const lig_candidate *c, int64_t n) {
    if (t->cap == 0) return;
    for (int64_t i = 0; i < n; i++) {
        if (t->full && !(lig_topk_rank(c[i].score) > t->worst)) continue;
        t->buf[t->n++] = c[i];
        if (t->n == 2 * t->cap) lig_topk_cut(t);
    }
}

/* Sorts the kept candidates, best first, into t->best[0 .. t->n). */
void lig_topk_finish(lig_topk *t);

#endif

/* Streaming top-k over (score, key) candidates in a caller-provided array: a binary heap
 * whose root is the worst kept candidate, so a new key costs one comparison unless it
 * enters. Order: higher score first, ties to the lower key; a NaN score ranks as -inf. */
#ifndef LIG_CPU_OPERATORS_TOPK_H
#define LIG_CPU_OPERATORS_TOPK_H

#include <stdint.h>

/* A selection candidate: its fp32 score and its batch-local key index. */
typedef struct lig_candidate {
    float score;
    int64_t key;
} lig_candidate;

typedef struct lig_topk {
    lig_candidate *heap;
    int64_t size, cap;
} lig_topk;

/* Offers a candidate; the kept set does not depend on the order of the offers. */
void lig_topk_offer(lig_topk *t, float score, int64_t key);

/* Sorts the kept candidates best first, in place (the heap is consumed). */
void lig_topk_sort(lig_topk *t);

#endif

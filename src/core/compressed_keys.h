/* Compressed keys (DeepSeek-V4): which compressed entries a query row may see (docs/contract.md
 * section 4.1). The one definition for every operator that takes `cmp_ratio`, training and
 * inference alike, so that a forward, its logits and its backward never disagree on a row's keys.
 *
 * Entry j of a batch summarises the `ratio` original tokens [j*ratio, (j+1)*ratio - 1]; the
 * batch's pre-compression key length is entries*ratio + residual (the residual tokens have no
 * entry yet). With the right-down causal mask the rows sit at the end of that timeline, row t of
 * `rows` at position p = entries*ratio + residual - rows + t, and the row sees the entries whose
 * block is complete at p: j*ratio + ratio - 1 <= p, which is j < floor((p + 1) / ratio). With no
 * mask every entry is visible. Visible entries are always a prefix 0..count-1 of the batch's. */
#ifndef LIG_CORE_COMPRESSED_KEYS_H
#define LIG_CORE_COMPRESSED_KEYS_H

#include <stdint.h>

#include "core/problem.h"
#include "lig.h"

/* The mask modes, numbered as CANN numbers them (maskMode / sparseMode). */
#define LIG_CMP_MASK_NONE 0
#define LIG_CMP_MASK_RIGHT_DOWN 3

#define LIG_CMP_RATIO_MAX 128

typedef struct lig_compressed_keys {
    int64_t mask_mode; /* LIG_CMP_MASK_NONE or LIG_CMP_MASK_RIGHT_DOWN */
    int64_t ratio;     /* original tokens per entry, 1..LIG_CMP_RATIO_MAX */
    int64_t residual;  /* tokens past the last whole block, 0..ratio-1 */
    int64_t entries;   /* compressed entries of the batch, >= 0 */
    int64_t rows;      /* query rows of the batch, >= 0 */
} lig_compressed_keys;

/* LIG_SUCCESS when `c` describes a batch (the ranges above, and a pre-compression length
 * entries*ratio + residual below 2^63); otherwise LIG_ERR_PARAM_INVALID with a message naming the
 * parameter (as CANN names it), `batch`, the expected range and the value received. */
lig_status lig_compressed_keys_check(const lig_compressed_keys *c, int64_t batch);

/* Number of whole blocks complete at pre-compression position `position` (the inference form:
 * a token at `position` sees entries 0 .. result-1): floor((position + 1) / ratio), 0 before the
 * first token. Any int64 position, ratio >= 1; never overflows: the one count int64 cannot hold
 * (position INT64_MAX, ratio 1) saturates to INT64_MAX. */
int64_t lig_compressed_complete_blocks(int64_t position, int64_t ratio);

/* Number of entries row `row` (0 <= row < rows) of a batch `c` that passed the check sees:
 * entries 0 .. result-1. Never overflows, whatever the lengths. */
int64_t lig_compressed_visible_count(const lig_compressed_keys *c, int64_t row);

/* The rule of one call over resolved lengths: its mode and ratio, and each batch's residual. */
typedef struct lig_compressed_rule {
    int64_t mask_mode, ratio;
    int64_t *residual; /* one per batch of the problem (owned by the operator's problem) */
} lig_compressed_rule;

/* The entries row t of batch b of `pr` sees under `rule`: 0 .. result-1. */
static inline int64_t lig_compressed_rule_visible(const lig_compressed_rule *rule, const lig_problem *pr, int64_t b,
                                                  int64_t t) {
    const lig_compressed_keys c = {.mask_mode = rule->mask_mode, .ratio = rule->ratio, .residual = rule->residual[b],
                                   .entries = pr->bt.lk[b], .rows = pr->bt.lq[b]};
    return lig_compressed_visible_count(&c, t);
}

#endif

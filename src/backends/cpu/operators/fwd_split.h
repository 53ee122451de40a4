/* The forward's split walk for decode (the words: docs/architecture.md "Words for work"). When a
 * problem has few rows (decode: B x next_n rows against long contexts), one job per stripe of rows
 * would leave every thread but a few idle. Phase 1 then lists the stripes explicitly (the rows of
 * one batch and key head, so that the next_n rows of a decode step share each key block) and cuts
 * each stripe's keys into slices: whole numbers of the engine's key blocks, counted from the
 * stripe's first visible key, so every block, and so every score, is the one the unsplit walk
 * computes. Each (stripe, slice) is a job with its own top-k; a merge then offers the slices' kept
 * candidates in slice (= key) order to one top-k per row, which is the unsplit result bit for bit
 * (topk.h keeps exactly the best `cap` under "higher rank first, ties to the lower key" whatever
 * the offers' grouping).
 *
 * Everything here is decided from the problem alone (lengths, K, the engine's block), never from
 * the thread count: the slices, the results region and so the workspace's shared part are the
 * same for every thread count. */
#ifndef LIG_CPU_OPERATORS_FWD_SPLIT_H
#define LIG_CPU_OPERATORS_FWD_SPLIT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/problem.h"

/* At most this many stripes take the split walk; more rows keep the stripes walk (stripes of
 * lig_fwd_rows_for rows), which already gives every thread work. */
enum { LIG_FWD_MAX_STRIPES = 64 };
/* Jobs the split aims at in all (slices over every stripe): enough for 64 threads. */
enum { LIG_FWD_SPLIT_JOBS = 64 };
/* A slice holds at least this many keys and at least 4 K, so that it keeps at most a quarter of what
 * it scores: its top-k's cut-backs and the merge then cost a few percent of the scores at
 * DeepSeek's shape (G = 64, D = 128), measured (bench/results/history.md, "Decode"). The default slice length. */
enum { LIG_FWD_SPLIT_MIN_KEYS = 4096 };
/* The results region: room for the kept candidates of at most LIG_FWD_SPLIT_SLOTS (row, slice)
 * pairs, heap_cap candidates each, and never more than LIG_FWD_SPLIT_BUDGET bytes. Its size
 * depends on heap_cap = min(K, longest key length) alone, so the workspace, as the contract says,
 * grows with K and the thread count and not with the lengths (every forward reserves it). */
enum { LIG_FWD_SPLIT_SLOTS = 64 };
#define LIG_FWD_SPLIT_BUDGET ((uint64_t)4 << 20)
/* Columns (rows x heads) a stripe of the split walk may reach when it takes more rows than
 * lig_fwd_rows_for. */
enum { LIG_FWD_STRIPE_COLUMNS = 256 };

/* A stripe: up to `rows` consecutive valid rows of one batch and key head and the keys any of them
 * sees. */
typedef struct lig_fwd_stripe {
    int64_t row0, m, g;  /* valid rows row0 .. row0 + m - 1 (global), key head g */
    int64_t lo, hi;      /* the first and last key any row sees; lo > hi: none */
    int64_t slices;      /* >= 1 */
    int64_t slice_keys;  /* keys per slice: a multiple of the engine's block */
    int64_t first_job;   /* its first (stripe, slice) job */
    int64_t slot;        /* slices > 1: (row i, slice c) keeps its candidates in slot slot + c * m + i */
} lig_fwd_stripe;

typedef struct lig_fwd_stripes {
    int64_t n;           /* stripes; 0: the problem takes the stripes walk */
    int64_t jobs;        /* (stripe, slice) jobs in all */
    int64_t merge_rows;  /* rows of the stripes with slices > 1 */
    lig_fwd_stripe stripe[LIG_FWD_MAX_STRIPES];
} lig_fwd_stripes;

/* The first and last key that any of the m units sees (*lo > *hi when none sees a key). */
void lig_fwd_rows_span(const lig_unit *x, int64_t m, int64_t *lo, int64_t *hi);

/* Rows per stripe of the split walk for G heads per key head and stripes of `rows` in the stripes
 * walk: up to LIG_FWD_MAX_ROWS and LIG_FWD_STRIPE_COLUMNS columns, never fewer than `rows` (the
 * lengths play no part: the scratch is sized for them in every forward). */
int64_t lig_fwd_split_stripe_rows(int64_t G, int64_t rows);

/* Lists the stripes of `rows` rows each (false: more than LIG_FWD_MAX_STRIPES, nothing listed). */
bool lig_fwd_list_stripes(const lig_problem *pr, int64_t rows, lig_fwd_stripes *out);

/* Slots of the results region for a top-k of heap_cap (0 when fewer than two fit the budget). */
int64_t lig_fwd_split_slots(int64_t heap_cap);

/* Cuts the listed stripes' keys into slices of `block`-multiples (split_keys: the slice length
 * asked for, 0 = never split, < 0 = the default) whose (row, slice) pairs fit `slots`. */
void lig_fwd_split_stripes(lig_fwd_stripes *sp, int64_t K, int64_t block, int64_t split_keys, int64_t slots);

/* The slice length asked for: the tuning's fwd_split_keys (LIG_FWD_SPLIT_KEYS, core/tuning.h;
 * 0 = never split, < 0 = the default). */
int64_t lig_fwd_split_keys(void);

#endif

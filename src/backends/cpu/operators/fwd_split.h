/* The forward's row groups and key split for decode. When a problem has few rows (decode:
 * B x next_n rows against long contexts), one unit per pass of rows would leave every thread but
 * a few idle. Phase 1 then lists the row groups explicitly (the rows of one batch and key head, so
 * that the next_n rows of a decode step share each key block) and cuts each group's keys into
 * chunks: whole numbers of the engine's key blocks, counted from the group's first visible key, so
 * every block, and so every score, is the one the unsplit walk computes. Each (group, chunk) is a
 * unit with its own top-k; a merge then offers the chunks' kept candidates in chunk (= key) order
 * to one top-k per row, which is the unsplit result bit for bit (topk.h keeps exactly the best
 * `cap` under "higher rank first, ties to the lower key" whatever the offers' grouping).
 *
 * Everything here is decided from the problem alone (lengths, K, the engine's block), never from
 * the thread count: the chunks, the results region and so the workspace's shared part are the
 * same for every thread count. */
#ifndef LIG_CPU_OPERATORS_FWD_SPLIT_H
#define LIG_CPU_OPERATORS_FWD_SPLIT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/problem.h"

/* At most this many row groups take the grouped walk; more rows keep the passes of
 * lig_fwd_rows_for, which already give every thread work. */
enum { LIG_FWD_MAX_GROUPS = 64 };
/* Units the split aims at in all (chunks over every group): enough for 64 threads. */
enum { LIG_FWD_SPLIT_UNITS = 64 };
/* A chunk holds at least this many keys and at least 4 K, so that it keeps at most a quarter of what
 * it scores: its top-k's cut-backs and the merge then cost a few percent of the scores at
 * DeepSeek's shape (G = 64, D = 128), measured (bench/results/history.md, "Decode"). The default chunk length. */
enum { LIG_FWD_SPLIT_MIN_KEYS = 4096 };
/* The results region: room for the kept candidates of at most LIG_FWD_SPLIT_SLOTS (row, chunk)
 * pairs, heap_cap candidates each, and never more than LIG_FWD_SPLIT_BUDGET bytes. Its size
 * depends on heap_cap = min(K, longest key length) alone, so the workspace, as the contract says,
 * grows with K and the thread count and not with the lengths (every forward reserves it). */
enum { LIG_FWD_SPLIT_SLOTS = 64 };
#define LIG_FWD_SPLIT_BUDGET ((uint64_t)4 << 20)
/* Columns (rows x heads) a group may reach when it takes more rows than lig_fwd_rows_for. */
enum { LIG_FWD_GROUP_COLUMNS = 256 };

/* Up to `rows` consecutive valid rows of one batch and key head and the keys any of them sees. */
typedef struct lig_fwd_group {
    int64_t row0, m, g;  /* valid rows row0 .. row0 + m - 1 (global), key head g */
    int64_t lo, hi;      /* the first and last key any row sees; lo > hi: none */
    int64_t chunks;      /* >= 1 */
    int64_t chunk_keys;  /* keys per chunk: a multiple of the engine's block */
    int64_t first_unit;  /* its first (group, chunk) unit */
    int64_t slot;        /* chunks > 1: (row i, chunk c) keeps its candidates in slot slot + c * m + i */
} lig_fwd_group;

typedef struct lig_fwd_groups {
    int64_t n;           /* groups; 0: the problem takes the passes of lig_fwd_rows_for */
    int64_t units;       /* (group, chunk) units in all */
    int64_t merge_rows;  /* rows of the groups with chunks > 1 */
    lig_fwd_group group[LIG_FWD_MAX_GROUPS];
} lig_fwd_groups;

/* The first and last key that any of the m units sees (*lo > *hi when none sees a key). */
void lig_fwd_rows_span(const lig_unit *x, int64_t m, int64_t *lo, int64_t *hi);

/* Rows per group for G heads per key head and passes of `rows`: up to LIG_FWD_MAX_ROWS and
 * LIG_FWD_GROUP_COLUMNS columns, never fewer than `rows` (the lengths play no part: the scratch
 * is sized for them in every forward). */
int64_t lig_fwd_group_rows(int64_t G, int64_t rows);

/* Lists the groups of `rows` rows each (false: more than LIG_FWD_MAX_GROUPS, nothing listed). */
bool lig_fwd_list_groups(const lig_problem *pr, int64_t rows, lig_fwd_groups *out);

/* Slots of the results region for a top-k of heap_cap (0 when fewer than two fit the budget). */
int64_t lig_fwd_split_slots(int64_t heap_cap);

/* Cuts the listed groups' keys into chunks of `block`-multiples (split_keys: the chunk length
 * asked for, 0 = never split, < 0 = the default) whose (row, chunk) pairs fit `slots`. */
void lig_fwd_split_groups(lig_fwd_groups *gs, int64_t K, int64_t block, int64_t split_keys, int64_t slots);

/* The chunk length asked for: the tuning's fwd_split_keys (LIG_FWD_SPLIT_KEYS, core/tuning.h;
 * 0 = never split, < 0 = the default). */
int64_t lig_fwd_split_keys(void);

#endif

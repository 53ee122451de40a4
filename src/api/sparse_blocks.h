/* The sparse logits' block lists (docs/contract.md 2.8): sparse_kv_block_indices read on the host in
 * phase 1, once the key ranges are known, checked and copied into the problem's sparse part. */
#ifndef LIG_API_SPARSE_BLOCKS_H
#define LIG_API_SPARSE_BLOCKS_H

#include "api/forward_checks.h"
#include "core/fwd_problem.h"

/* Row r's blocks: count(r) = min(M, ceil(len / block_kv)) for its range [lo, hi] (len = hi - lo +
 * 1), each of the first count(r) ids in [lo / block_kv, lo / block_kv + ceil(len / block_kv)) and
 * strictly increasing; the first bad one is named (row, slot, value). Fills out's ids (a copy:
 * owned by out on success: free(out->count), whose allocation holds the ids too), count,
 * max_blocks, block_kv, cols and unaligned; out->out is the caller's. */
lig_status lig_sparse_blocks_read(const lig_fwd_call *c, const lig_key_ranges *ranges, lig_sparse_blocks *out);

#endif

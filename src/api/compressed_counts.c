/* lig_compressed_visible_counts: the public form of core/compressed_keys (contract 4.1), so that a
 * caller turning cmp_ratio into per-row key lengths counts exactly as lig's own operators do. */
#include "core/compressed_keys.h"
#include "core/error.h"

lig_status lig_compressed_visible_counts(int64_t mask_mode, int64_t cmp_ratio, int64_t cmp_residual_k,
                                         int64_t key_entries, int64_t query_rows, int64_t batch, int64_t *counts) {
    const lig_compressed_keys c = {.mask_mode = mask_mode,
                                   .ratio = cmp_ratio,
                                   .residual = cmp_residual_k,
                                   .entries = key_entries,
                                   .rows = query_rows};
    lig_status st = lig_compressed_keys_check(&c, batch);
    if (st != LIG_SUCCESS) return st;
    if (query_rows > 0 && !counts)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "counts: expected room for %lld values, got NULL",
                        (long long)query_rows);
    for (int64_t t = 0; t < query_rows; t++) counts[t] = lig_compressed_visible_count(&c, t);
    return LIG_SUCCESS;
}

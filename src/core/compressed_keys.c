#include "core/compressed_keys.h"

#include "core/error.h"

/* floor(a / b) for b > 0. C division truncates toward zero, which rounds a negative quotient up:
 * CANN's kernels then clamp at 0, which hides the difference there, but the counts below rely on
 * the floor. */
static int64_t floor_div(int64_t a, int64_t b) {
    const int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

lig_status lig_compressed_keys_check(const lig_compressed_keys *c, int64_t batch) {
    if (c->mask_mode != LIG_CMP_MASK_NONE && c->mask_mode != LIG_CMP_MASK_RIGHT_DOWN)
        return lig_fail(LIG_ERR_PARAM_INVALID, "mask_mode: expected 0 (no mask) or 3 (right-down causal), got %lld",
                        (long long)c->mask_mode);
    if (c->ratio < 1 || c->ratio > LIG_CMP_RATIO_MAX)
        return lig_fail(LIG_ERR_PARAM_INVALID, "cmp_ratio: expected 1..%d, got %lld", LIG_CMP_RATIO_MAX,
                        (long long)c->ratio);
    /* Below the ratio, as CANN's documentation requires: a residual of a whole block would be an
     * entry. It also makes cmp_ratio 1 mean no residual, where CANN's kernels disagree on whether
     * they read it. */
    if (c->residual < 0 || c->residual >= c->ratio)
        return lig_fail(LIG_ERR_PARAM_INVALID, "cmp_residual_k[%lld]: expected 0..%lld (below cmp_ratio %lld), got %lld",
                        (long long)batch, (long long)(c->ratio - 1), (long long)c->ratio, (long long)c->residual);
    if (c->entries < 0)
        return lig_fail(LIG_ERR_PARAM_INVALID, "key length of batch %lld: expected >= 0 compressed entries, got %lld",
                        (long long)batch, (long long)c->entries);
    if (c->rows < 0)
        return lig_fail(LIG_ERR_PARAM_INVALID, "query length of batch %lld: expected >= 0 rows, got %lld",
                        (long long)batch, (long long)c->rows);
    /* Positions on the original timeline are int64 like every other index. */
    if (c->entries > (INT64_MAX - c->residual) / c->ratio)
        return lig_fail(LIG_ERR_PARAM_INVALID,
                        "key length of batch %lld: expected a pre-compression length (entries * cmp_ratio + "
                        "cmp_residual_k) below 2^63, got %lld * %lld + %lld",
                        (long long)batch, (long long)c->entries, (long long)c->ratio, (long long)c->residual);
    return LIG_SUCCESS;
}

int64_t lig_compressed_complete_blocks(int64_t position, int64_t ratio) {
    if (position < 0) return 0;
    /* floor((position + 1) / ratio) without forming position + 1, which overflows at INT64_MAX.
     * The one count int64 cannot hold, 2^63 blocks of 1 at position INT64_MAX, saturates. */
    const int64_t whole = position / ratio;
    if (position % ratio != ratio - 1) return whole;
    return whole == INT64_MAX ? INT64_MAX : whole + 1;
}

int64_t lig_compressed_visible_count(const lig_compressed_keys *c, int64_t row) {
    if (row < 0 || row >= c->rows) return 0;
    if (c->mask_mode == LIG_CMP_MASK_NONE) return c->entries;
    /* floor((entries*ratio + residual - rows + row + 1) / ratio)
     *   = entries + floor((residual - later) / ratio), with later = rows - 1 - row the rows after
     * this one: the same count without the product, so no length can overflow it. */
    const int64_t later = c->rows - 1 - row;
    const int64_t count = c->entries + floor_div(c->residual - later, c->ratio);
    return count > 0 ? count : 0;
}

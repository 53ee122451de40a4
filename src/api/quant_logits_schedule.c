/* See quant_logits_schedule.h. The blocks of batch b are numbered globally from the sum of the
 * earlier batches' counts; a piece is a run of consecutive global blocks, so that equal numbers
 * of blocks make equal pieces whatever the batches' lengths. */
#include "api/quant_logits_schedule.h"

#include <stdlib.h>

#include "api/argument_checks.h"
#include "core/error.h"
#include "core/tensor.h"

static int64_t blocks_of(int64_t keys, int64_t block_size) {
    return keys / block_size + (keys % block_size != 0); /* keys + block_size - 1 may pass 2^63 */
}

static int32_t *entry(const lig_tensor *t, int64_t w, int64_t j) {
    return (int32_t *)t->data + w * t->strides[0] + j * t->strides[1];
}

lig_status lig_logits_schedule_read(const lig_tensor *schedule, const lig_problem *pr, int64_t block_size,
                                    int64_t **starts, int64_t *pieces) {
    const int64_t W = schedule->shape[0] - 1, B = pr->B, bs = block_size;
    int64_t *v = malloc(sizeof(int64_t) * (size_t)(W + 1 + B + 1));
    if (!v) return lig_fail(LIG_ERR_RUNTIME, "schedule: expected memory for %lld pieces, got none", (long long)W);
    int64_t *first = v + W + 1;
    first[0] = 0;
    for (int64_t b = 0; b < B; b++) first[b + 1] = first[b] + (bs > 0 ? blocks_of(pr->bt.lk[b], bs) : 0);
    for (int64_t w = 0; w <= W; w++) {
        const int64_t b = *entry(schedule, w, 0), blk = *entry(schedule, w, 1);
        const int64_t count = b >= 0 && b < B ? first[b + 1] - first[b] : 0;
        lig_status st = LIG_SUCCESS;
        if (b < 0 || b > B || blk < 0 || blk > count || (b == B && blk != 0))
            st = lig_fail(LIG_ERR_PARAM_INVALID, "schedule: expected (batch in [0, %lld), block in [0, %lld]) or (%lld, 0) "
                          "at [%lld], got (%lld, %lld)", (long long)B, (long long)count, (long long)B, (long long)w,
                          (long long)b, (long long)blk);
        else {
            v[w] = b == B ? first[B] : first[b] + blk;
            if (w == 0 && v[0] != 0)
                st = lig_fail(LIG_ERR_PARAM_INVALID, "schedule: expected the first piece at the first block (0, 0), got "
                              "(%lld, %lld)", (long long)b, (long long)blk);
            else if (w > 0 && v[w] < v[w - 1])
                st = lig_fail(LIG_ERR_PARAM_INVALID, "schedule: expected entries in (batch, block) order, got (%lld, %lld) "
                              "at [%lld], earlier than (%d, %d) at [%lld]", (long long)b, (long long)blk, (long long)w,
                              (int)*entry(schedule, w - 1, 0), (int)*entry(schedule, w - 1, 1), (long long)(w - 1));
            else if (w == W && b != B)
                st = lig_fail(LIG_ERR_PARAM_INVALID, "schedule: expected (B, 0) = (%lld, 0) at [%lld] (the last entry), got "
                              "(%lld, %lld)", (long long)B, (long long)W, (long long)b, (long long)blk);
        }
        if (st != LIG_SUCCESS) {
            free(v);
            return st;
        }
    }
    *starts = v;
    *pieces = W;
    return LIG_SUCCESS;
}

lig_status lig_quant_logits_schedule(const lig_tensor *key_end, int64_t block_size, int64_t workers,
                                     const lig_tensor *schedule) {
    if (!key_end) return lig_fail(LIG_ERR_PARAM_NULLPTR, "key_end: expected a [B,S1] or [T1] tensor, got NULL");
    if (!schedule) return lig_fail(LIG_ERR_PARAM_NULLPTR, "schedule: expected an INT32 [workers+1,2] tensor, got NULL");
    if (key_end->device != LIG_DEVICE_HOST || schedule->device != LIG_DEVICE_HOST)
        return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected a host tensor, got a tensor on %s device %d",
                        key_end->device != LIG_DEVICE_HOST ? "key_end" : "schedule",
                        lig_device_name((key_end->device != LIG_DEVICE_HOST ? key_end : schedule)->device),
                        (key_end->device != LIG_DEVICE_HOST ? key_end : schedule)->device_index);
    if (!lig_dtype_is_index(key_end->dtype))
        return lig_fail(LIG_ERR_PARAM_INVALID, "key_end: expected dtype INT32 or INT64, got %s", lig_dtype_name(key_end->dtype));
    if (key_end->ndim != 1 && key_end->ndim != 2) {
        char got[LIG_SHAPE_BUF];
        return lig_fail(LIG_ERR_PARAM_INVALID, "key_end: expected shape [B,S1] or [T1], got %s",
                        lig_format_shape(got, sizeof got, key_end->ndim, key_end->shape));
    }
    if (block_size < 1)
        return lig_fail(LIG_ERR_PARAM_INVALID, "block_size: expected a value >= 1, got %lld", (long long)block_size);
    if (workers < 1 || workers >= INT32_MAX)
        return lig_fail(LIG_ERR_PARAM_INVALID, "workers: expected a value in [1, %d), got %lld", INT32_MAX, (long long)workers);
    const int64_t expect[2] = {workers + 1, 2};
    if (schedule->dtype != LIG_INT32)
        return lig_fail(LIG_ERR_PARAM_INVALID, "schedule: expected dtype INT32, got %s", lig_dtype_name(schedule->dtype));
    lig_status st = lig_check_shape(schedule, "schedule", 2, expect, "workers + 1 entries of (batch, block)");
    if (st != LIG_SUCCESS) return st;
    /* [T1]: one sequence; [B,S1]: batch b's blocks cover its rows' largest end */
    const int64_t B = key_end->ndim == 2 ? key_end->shape[0] : 1, S1 = key_end->ndim == 2 ? key_end->shape[1] : key_end->shape[0];
    if (B >= INT32_MAX)
        return lig_fail(LIG_ERR_PARAM_INVALID, "key_end: expected fewer than 2^31 - 1 batches, got %lld", (long long)B);
    int64_t *first = malloc(sizeof(int64_t) * (size_t)(B + 1));
    if (!first) return lig_fail(LIG_ERR_RUNTIME, "schedule: expected memory for %lld batches, got none", (long long)B);
    first[0] = 0;
    for (int64_t b = 0; b < B; b++) {
        int64_t longest = 0;
        for (int64_t i = 0; i < S1; i++) {
            const size_t at = key_end->ndim == 2 ? (size_t)(b * key_end->strides[0] + i * key_end->strides[1])
                                                 : (size_t)(i * key_end->strides[0]);
            const int64_t e = lig_load_int(key_end->dtype, (const char *)key_end->data + at * lig_dtype_size(key_end->dtype));
            if (e < 0) {
                free(first);
                return lig_fail(LIG_ERR_PARAM_INVALID, "key_end: expected values >= 0, got %lld at row %lld of batch %lld",
                                (long long)e, (long long)i, (long long)b);
            }
            longest = e > longest ? e : longest;
        }
        first[b + 1] = first[b] + blocks_of(longest, block_size);
        if (blocks_of(longest, block_size) > INT32_MAX) {
            free(first);
            return lig_fail(LIG_ERR_PARAM_INVALID, "block_size: expected at most 2^31 - 1 blocks per batch, got %lld "
                            "for batch %lld", (long long)blocks_of(longest, block_size), (long long)b);
        }
    }
    /* worker w starts at global block floor(w * total / workers), written so that nothing overflows */
    const int64_t total = first[B];
    int64_t b = 0;
    for (int64_t w = 0; w <= workers; w++) {
        const int64_t at = w * (total / workers) + w * (total % workers) / workers;
        while (b < B && first[b + 1] <= at && at < total) b++;
        const bool end = at >= total;
        *entry(schedule, w, 0) = (int32_t)(end ? B : b);
        *entry(schedule, w, 1) = (int32_t)(end ? 0 : at - first[b]);
    }
    free(first);
    return LIG_SUCCESS;
}

/* See sparse_blocks.h. */
#include "api/sparse_blocks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/tensor.h"

/* Row r's position in messages: [b,i] (BSND) or [i] (TND). */
static void row_name(const lig_problem *pr, int64_t r, char *buf, size_t n) {
    if (pr->tnd) snprintf(buf, n, "[%lld", (long long)r);
    else snprintf(buf, n, "[%lld,%lld", (long long)(r / pr->S1), (long long)(r % pr->S1));
}

/* The caller's entry (r, j) of the [rows, M] (or [B, S1, M]) tensor, whatever its strides. */
static const char *entry(const lig_tensor *t, const lig_problem *pr, int64_t r, int64_t j) {
    const int64_t *st = t->strides;
    const int64_t at = pr->tnd ? r * st[0] + j * st[1] : (r / pr->S1) * st[0] + (r % pr->S1) * st[1] + j * st[2];
    return (const char *)t->data + (size_t)at * lig_dtype_size(t->dtype);
}

lig_status lig_sparse_blocks_read(const lig_fwd_call *c, const lig_key_ranges *ranges, lig_sparse_blocks *out) {
    const lig_problem *pr = &c->pr;
    const lig_tensor *t = c->sparse_kv_block_indices;
    const int64_t rows = pr->tnd ? pr->S1 : pr->B * pr->S1, M = c->max_blocks, bk = c->sparse_block_kv;
    const size_t esize = lig_dtype_size(t->dtype);
    const uint64_t id_bytes = lig_size_mul3((uint64_t)rows, (uint64_t)M, esize);
    const uint64_t bytes = lig_size_add(lig_size_mul(sizeof(int64_t), (uint64_t)rows), id_bytes);
    char *mem = bytes <= SIZE_MAX ? malloc(bytes ? (size_t)bytes : 1) : NULL;
    if (!mem)
        return lig_fail(LIG_ERR_RUNTIME, "sparse_kv_block_indices: expected memory for a copy of %llu bytes, got none",
                        (unsigned long long)bytes);
    int64_t *count = (int64_t *)(void *)mem; /* first: int64 alignment */
    char *ids = mem + sizeof(int64_t) * (size_t)rows;
    for (int64_t r = 0; r < rows; r++) {
        const int64_t lo = ranges->lo[r], len = ranges->hi[r] - lo + 1; /* hi inclusive */
        const int64_t first = lo / bk, avail = len > 0 ? len / bk + (len % bk != 0) : 0;
        const int64_t n = avail < M ? avail : M;
        count[r] = n;
        int64_t prev = INT64_MIN;
        for (int64_t j = 0; j < n; j++) {
            const char *e = entry(t, pr, r, j);
            const int64_t id = lig_load_int(t->dtype, e);
            if (id < first || id >= first + avail || id <= prev) {
                char at[48];
                row_name(pr, r, at, sizeof at);
                lig_status st;
                if (id <= prev && id >= first && id < first + avail)
                    st = lig_fail(LIG_ERR_PARAM_INVALID, "sparse_kv_block_indices: expected strictly increasing block ids "
                                  "in each row's first %lld entries, got %lld after %lld at %s,%lld]",
                                  (long long)n, (long long)id, (long long)prev, at, (long long)j);
                else
                    st = lig_fail(LIG_ERR_PARAM_INVALID, "sparse_kv_block_indices: expected block ids in [%lld, %lld) "
                                  "(the blocks of %lld keys from key_start = %lld, %lld keys a block), got %lld at %s,%lld]",
                                  (long long)first, (long long)(first + avail), (long long)len, (long long)lo,
                                  (long long)bk, (long long)id, at, (long long)j);
                free(mem);
                return st;
            }
            prev = id;
            memcpy(ids + (size_t)(r * M + j) * esize, e, esize);
        }
    }
    *out = (lig_sparse_blocks){.ids = mem, .ids_dtype = t->dtype, .ids_esize = esize, .count = count,
                               .max_blocks = M, .block_kv = bk, .cols = M * bk, .unaligned = c->use_unaligned_ks,
                               .out = out->out};
    out->ids = ids;
    return LIG_SUCCESS;
}

/* Sequence lengths (actual_seq_lengths_query / _key) into their per-batch normal form, and the
 * rest of the problem that follows from them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/problem.h"
#include "core/tensor.h"

/* Checks a lengths array's descriptor: 1-D, integer, `expect_b` entries (or any when < 0). */
static lig_status check_descriptor(const lig_tensor *t, const char *name, int64_t expect_b) {
    char got[LIG_SHAPE_BUF];
    if (t->ndim != 1)
        return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected a 1-D tensor [B], got shape %s", name,
                        lig_format_shape(got, sizeof got, t->ndim, t->shape));
    if (!lig_dtype_is_index(t->dtype))
        return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected dtype INT32 or INT64, got %s", name,
                        lig_dtype_name(t->dtype));
    if (expect_b >= 0 && t->shape[0] != expect_b)
        return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected shape [%lld] (B), got %s", name,
                        (long long)expect_b, lig_format_shape(got, sizeof got, t->ndim, t->shape));
    return LIG_SUCCESS;
}

/* BSND lengths: each in [0, extent]; a missing array means full length. */
static lig_status read_lengths(const lig_tensor *t, const char *name, int64_t B, int64_t extent,
                               int64_t *len) {
    for (int64_t b = 0; b < B; b++) {
        int64_t v = t ? lig_tensor_read_int_1d(t, b) : extent;
        if (v < 0 || v > extent)
            return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected values in [0, %lld], got %lld at [%lld]", name,
                            (long long)extent, (long long)v, (long long)b);
        len[b] = v;
    }
    return LIG_SUCCESS;
}

/* TND cumulative ends: non-decreasing, >= 0, last <= extent; turned into bases and lengths. */
static lig_status read_ends(const lig_tensor *t, const char *name, int64_t B, int64_t extent,
                            int64_t *base, int64_t *len) {
    int64_t prev = 0;
    for (int64_t b = 0; b < B; b++) {
        int64_t v = lig_tensor_read_int_1d(t, b);
        if (v < prev)
            return lig_fail(LIG_ERR_PARAM_INVALID,
                            "%s: expected non-decreasing cumulative ends >= 0, got %lld at [%lld] after %lld", name,
                            (long long)v, (long long)b, (long long)prev);
        if (v > extent)
            return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected cumulative ends <= %lld (rows of the tensor), got %lld at [%lld]",
                            name, (long long)extent, (long long)v, (long long)b);
        base[b] = prev;
        len[b] = v - prev;
        prev = v;
    }
    return LIG_SUCCESS;
}

lig_status lig_batches_resolve(bool tnd, bool paged, int64_t B, int64_t S1, int64_t S2, const lig_tensor *aq,
                               const lig_tensor *ak, lig_batches *out) {
    static const char *nq = "actual_seq_lengths_query", *nk = "actual_seq_lengths_key";
    lig_status st;
    out->lq = NULL;
    if (paged && !ak)
        return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected a [B] tensor of key lengths (required for a paged key cache), got NULL", nk);
    if (tnd) {
        if (!aq) return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected a [B] tensor of cumulative ends (required for TND), got NULL", nq);
        if (!ak) return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected a [B] tensor of cumulative ends (required for TND), got NULL", nk);
        if ((st = check_descriptor(aq, nq, -1)) != LIG_SUCCESS) return st;
        B = aq->shape[0];
        if ((st = check_descriptor(ak, nk, B)) != LIG_SUCCESS) return st;
    } else {
        if (aq && (st = check_descriptor(aq, nq, B)) != LIG_SUCCESS) return st;
        if (ak && (st = check_descriptor(ak, nk, B)) != LIG_SUCCESS) return st;
    }
    /* B comes from a shape: its arrays may not fit (5 * B could even wrap). B * S1, which counts
     * the rows, is bounded by the extent rule of lig_create_tensor (contract 6.2) already; checked
     * here too, so that this layer does not rely on it */
    char detail[96];
    snprintf(detail, sizeof detail, "B = %lld batches", (long long)B);
    const uint64_t bytes = lig_batches_bytes(B);
    if ((st = lig_size_check(bytes > SIZE_MAX ? LIG_SIZE_HUGE : bytes, tnd ? nq : "query",
                             "the bytes of the per-batch lengths", detail)) != LIG_SUCCESS)
        return st;
    snprintf(detail, sizeof detail, "B = %lld x S1 = %lld", (long long)B, (long long)S1);
    if (!tnd && (st = lig_size_check(lig_size_mul((uint64_t)B, (uint64_t)S1), "query", "the number of query rows",
                                     detail)) != LIG_SUCCESS)
        return st;
    int64_t *mem = malloc((size_t)bytes);
    if (!mem) return lig_fail(LIG_ERR_RUNTIME, "%s: expected memory for %lld batches, got none", nq, (long long)B);
    out->B = B;
    out->lq = mem;
    out->lk = mem + B;
    out->q_base = mem + 2 * B;
    out->k_base = mem + 3 * B;
    out->row_prefix = mem + 4 * B;
    if (tnd) {
        st = read_ends(aq, nq, B, S1, out->q_base, out->lq);
        if (st == LIG_SUCCESS && paged) st = read_lengths(ak, nk, B, S2, out->lk);
        else if (st == LIG_SUCCESS) st = read_ends(ak, nk, B, S2, out->k_base, out->lk);
        if (paged)
            for (int64_t b = 0; b < B; b++) out->k_base[b] = 0;
    } else {
        st = read_lengths(aq, nq, B, S1, out->lq);
        if (st == LIG_SUCCESS) st = read_lengths(ak, nk, B, S2, out->lk);
        for (int64_t b = 0; b < B; b++) out->q_base[b] = out->k_base[b] = 0;
    }
    if (st != LIG_SUCCESS) {
        lig_batches_free(out);
        return st;
    }
    out->row_prefix[0] = 0; /* at most B * S1 (BSND) or T1 (TND) */
    for (int64_t b = 0; b < B; b++) out->row_prefix[b + 1] = out->row_prefix[b] + out->lq[b];
    return LIG_SUCCESS;
}

void lig_batches_free(lig_batches *batches) {
    free(batches->lq);
    batches->lq = NULL;
}

/* The units and key rows of a problem whose batches are resolved (frees them on failure). */
static lig_status count_units(lig_problem *p, bool paged) {
    lig_status st;
    p->B = p->bt.B;
    /* rows x N2 multiplies extents of two tensors, B x S2 those of one (bounded at its creation):
     * both checked, whatever the tensors' own limits */
    const uint64_t units = lig_size_mul((uint64_t)p->bt.row_prefix[p->B], (uint64_t)p->N2);
    /* paged keys have no key tensor: its rows are the batches' capacities */
    const uint64_t key_rows = p->tnd && !paged ? (uint64_t)p->S2 : lig_size_mul((uint64_t)p->B, (uint64_t)p->S2);
    char detail[96];
    snprintf(detail, sizeof detail, "%lld valid query rows x N2 = %lld key heads", (long long)p->bt.row_prefix[p->B],
             (long long)p->N2);
    st = lig_size_check(units, "sparse_indices", "the number of (row, key head) units", detail);
    if (st == LIG_SUCCESS) {
        snprintf(detail, sizeof detail, "B = %lld x S2 = %lld", (long long)p->B, (long long)p->S2);
        st = lig_size_check(key_rows, paged ? "block_table" : "key", "the number of key rows", detail);
    }
    if (st != LIG_SUCCESS) {
        lig_batches_free(&p->bt);
        return st;
    }
    p->units = (int64_t)units;
    p->key_rows = (int64_t)key_rows;
    p->key_batch = p->tnd && !paged ? 0 : p->S2;
    return LIG_SUCCESS;
}


lig_status lig_problem_resolve(lig_problem *p, bool paged, int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
                               const lig_tensor *aq, const lig_tensor *ak) {
    p->sparse_mode = sparse_mode;
    p->pre_tokens = pre_tokens;
    p->next_tokens = next_tokens;
    p->ranges = NULL;
    lig_status st = lig_batches_resolve(p->tnd, paged, p->B, p->S1, p->S2, aq, ak, &p->bt);
    if (st != LIG_SUCCESS) return st;
    return count_units(p, paged);
}

lig_status lig_problem_resolve_ranges(lig_problem *p, bool paged, int64_t batches, int64_t rows_per_batch,
                                      lig_key_ranges *ranges) {
    p->sparse_mode = 0; /* unused: the ranges replace the mask */
    p->pre_tokens = p->next_tokens = INT64_MAX;
    const uint64_t bytes = lig_batches_bytes(batches);
    int64_t *mem = bytes <= SIZE_MAX ? malloc((size_t)bytes) : NULL;
    if (!mem) return lig_fail(LIG_ERR_RUNTIME, "key_end: expected memory for %lld batches, got none", (long long)batches);
    lig_batches *bt = &p->bt;
    *bt = (lig_batches){.B = batches, .lq = mem, .lk = mem + batches, .q_base = mem + 2 * batches,
                        .k_base = mem + 3 * batches, .row_prefix = mem + 4 * batches};
    const int64_t rows = batches * rows_per_batch; /* the rows of a checked query tensor */
    p->ranges = ranges;
    bt->row_prefix[0] = 0;
    for (int64_t b = 0; b < batches; b++) {
        bt->lq[b] = rows_per_batch;
        bt->q_base[b] = bt->k_base[b] = 0;
        bt->row_prefix[b + 1] = bt->row_prefix[b] + rows_per_batch;
        int64_t longest = 0;
        for (int64_t r = b * rows_per_batch; r < (b + 1) * rows_per_batch; r++)
            if (ranges->hi[r] > longest) longest = ranges->hi[r];
        bt->lk[b] = longest;
    }
    for (int64_t r = 0; r < rows; r++) ranges->hi[r] -= 1; /* inclusive, as lig_unit's */
    p->B = batches;
    return count_units(p, paged); /* frees the batches on failure */
}

void lig_problem_free(lig_problem *p) { lig_batches_free(&p->bt); }

lig_view4 lig_problem_cache_view(const lig_tensor *cache) {
    return (lig_view4){.data = cache->data, .dtype = cache->dtype, .esize = lig_dtype_size(cache->dtype),
                       .batch = cache->strides[0], .row = cache->strides[1], .head = cache->strides[2],
                       .dim = cache->strides[3]};
}

lig_view4 lig_problem_cache_scale_view(const lig_tensor *scales) {
    return (lig_view4){.data = scales->data, .dtype = scales->dtype, .esize = lig_dtype_size(scales->dtype),
                       .batch = scales->strides[0], .row = scales->strides[1], .head = scales->strides[2], .dim = 0};
}

lig_view4 lig_problem_view(const lig_problem *p, const lig_tensor *t, bool has_head, bool has_dim) {
    lig_view4 v = {.data = t->data, .dtype = t->dtype, .esize = lig_dtype_size(t->dtype)};
    int64_t i = 0;
    v.batch = p->tnd ? 0 : t->strides[i++];
    v.row = t->strides[i++];
    v.head = has_head ? t->strides[i++] : 0;
    v.dim = has_dim ? t->strides[i] : 0;
    return v;
}

#include "api/problem_arguments.h"

#include <stdio.h>
#include <stdlib.h>

#include "api/argument_checks.h"
#include "core/compressed_keys.h"
#include "core/error.h"
#include "core/tensor.h"

/* The dtypes of query, key and weights: one float dtype for all three, or (quantized) query and
 * key both FLOAT8_E4M3FN, both INT8 or both FLOAT4_E2M1X2 (MXFP4: no mixed form, as in DeepGEMM)
 * with weights of any float dtype. */
static lig_status check_qkw_dtypes(const lig_tensor *query, const char *q_name, const lig_tensor *key,
                                   const char *key_name, const lig_tensor *weights, bool quant) {
    lig_status st;
    if (quant) {
        if (query->dtype != LIG_FLOAT8_E4M3FN && query->dtype != LIG_INT8 && query->dtype != LIG_FLOAT4_E2M1X2)
            return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected dtype FLOAT8_E4M3FN, INT8 or FLOAT4_E2M1X2, got %s", q_name,
                            lig_dtype_name(query->dtype));
        if ((st = lig_check_same_dtype(key, key_name, query, q_name)) != LIG_SUCCESS) return st;
        return lig_check_float_dtype(weights, "weights");
    }
    if ((st = lig_check_float_dtype(query, q_name)) != LIG_SUCCESS) return st;
    if ((st = lig_check_same_dtype(key, key_name, query, q_name)) != LIG_SUCCESS) return st;
    return lig_check_same_dtype(weights, "weights", query, q_name);
}

/* D, the values per head, from the query's last extent: FLOAT4_E2M1X2 holds two a byte, and its
 * shapes count bytes (the keys' last extent equals the query's either way). */
static lig_status values_per_head(const lig_tensor *query, const char *q_name, int64_t bytes, int64_t *D) {
    if (query->dtype != LIG_FLOAT4_E2M1X2) {
        *D = bytes;
        return LIG_SUCCESS;
    }
    if (bytes > INT64_MAX / 2)
        return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected at most 2^62 bytes a head (D/2), got %lld", q_name,
                        (long long)bytes);
    *D = 2 * bytes;
    return LIG_SUCCESS;
}

/* q_name / k_name: the operator's names for its query and key (the fused KL loss calls its
 * indexer's tensors query_index and key_index: query and key are the main attention's there). */
static lig_status check_qkw(const lig_tensor *query, const char *q_name, const lig_tensor *key, const char *k_name,
                            const lig_tensor *weights, bool tnd, bool quant, lig_problem *p) {
    lig_status st;
    const int64_t rank = tnd ? 3 : 4; /* of query and key */
    if ((st = lig_check_rank(query, q_name, rank, tnd ? "[T1,N1,D]" : "[B,S1,N1,D]")) != LIG_SUCCESS) return st;
    if ((st = lig_check_rank(key, k_name, rank, tnd ? "[T2,N2,D]" : "[B,S2,N2,D]")) != LIG_SUCCESS) return st;
    if ((st = lig_check_rank(weights, "weights", rank - 1, tnd ? "[T1,N1]" : "[B,S1,N1]")) != LIG_SUCCESS) return st;
    if ((st = check_qkw_dtypes(query, q_name, key, k_name, weights, quant)) != LIG_SUCCESS) return st;

    const int64_t *qs = query->shape, *ks = key->shape;
    *p = (lig_problem){.tnd = tnd, .B = tnd ? -1 : qs[0], .K = -1};
    p->S1 = qs[rank - 3];
    p->N1 = qs[rank - 2];
    if ((st = values_per_head(query, q_name, qs[rank - 1], &p->D)) != LIG_SUCCESS) return st;
    p->S2 = ks[rank - 3];
    p->N2 = ks[rank - 2];
    char why[64];
    int64_t expect[4], n = 0;
    if (!tnd) expect[n++] = p->B;
    expect[n++] = p->S2;
    expect[n++] = p->N2;
    expect[n++] = qs[rank - 1];
    snprintf(why, sizeof why, "batch and D like %s", q_name);
    if ((st = lig_check_shape(key, k_name, n, expect, why)) != LIG_SUCCESS) return st;
    if (p->N2 == 0 ? p->N1 != 0 : p->N1 % p->N2 != 0)
        return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected a head count N2 that divides %s's N1 = %lld, got N2 = %lld",
                        k_name, q_name, (long long)p->N1, (long long)p->N2);
    p->G = p->N2 ? p->N1 / p->N2 : 0;
    n = 0;
    if (!tnd) expect[n++] = p->B;
    expect[n++] = p->S1;
    expect[n++] = p->N1;
    snprintf(why, sizeof why, "like %s without D", q_name);
    return lig_check_shape(weights, "weights", n, expect, why);
}

lig_status lig_problem_check_qkw(const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights,
                                 const char *layout, lig_problem *p) {
    bool tnd;
    const lig_status st = lig_check_layout(layout, &tnd);
    return st != LIG_SUCCESS ? st : check_qkw(query, "query", key, "key", weights, tnd, false, p);
}

lig_status lig_problem_check_index_qkw(const lig_tensor *query_index, const lig_tensor *key_index,
                                       const lig_tensor *weights, const char *layout, lig_problem *p) {
    bool tnd;
    const lig_status st = lig_check_layout(layout, &tnd);
    return st != LIG_SUCCESS ? st : check_qkw(query_index, "query_index", key_index, "key_index", weights, tnd, false, p);
}

lig_status lig_problem_check_fwd_qkw(const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights, bool tnd,
                                     bool quant, lig_problem *p) {
    return check_qkw(query, "query", key, "key", weights, tnd, quant, p);
}

lig_status lig_problem_check_slots(lig_problem *p, const lig_tensor *t, const char *name, int64_t K, const char *why,
                                   bool *short_form) {
    const int64_t rank = p->tnd ? 3 : 4;
    *short_form = t->ndim == rank - 1;
    if (t->ndim != rank && !(*short_form && p->N2 == 1)) {
        char got[LIG_SHAPE_BUF];
        return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected rank %lld (%s)%s, got rank %lld shape %s", name,
                        (long long)rank, p->tnd ? "[T1,N2,K]" : "[B,S1,N2,K]",
                        p->N2 == 1 ? (p->tnd ? " or rank 2 ([T1,K], N2 == 1)" : " or rank 3 ([B,S1,K], N2 == 1)") : "",
                        (long long)t->ndim, lig_format_shape(got, sizeof got, t->ndim, t->shape));
    }
    int64_t expect[4], n = 0;
    if (!p->tnd) expect[n++] = p->B;
    expect[n++] = p->S1;
    if (!*short_form) expect[n++] = p->N2;
    expect[n++] = K >= 0 ? K : t->shape[t->ndim - 1];
    lig_status st = lig_check_shape(t, name, n, expect, why);
    if (st == LIG_SUCCESS && K < 0) p->K = t->shape[t->ndim - 1];
    return st;
}

lig_status lig_problem_check_paged_qkw(const lig_tensor *query, const lig_tensor *key_cache,
                                       const lig_tensor *block_table, const lig_tensor *weights, bool tnd, bool quant,
                                       lig_problem *p) {
    lig_status st;
    /* the quantized forward names its keys `key` in every layout, as CANN's operator does */
    const char *key_name = quant ? "key" : "key_cache";
    const int64_t rank = tnd ? 3 : 4; /* of query */
    if ((st = lig_check_rank(query, "query", rank, tnd ? "[T1,N1,D]" : "[B,S1,N1,D]")) != LIG_SUCCESS) return st;
    if ((st = lig_check_rank(key_cache, key_name, 4, "[num_blocks,block_size,N2,D]")) != LIG_SUCCESS) return st;
    if ((st = lig_check_rank(block_table, "block_table", 2, "[B,max_blocks_per_seq]")) != LIG_SUCCESS) return st;
    if ((st = lig_check_rank(weights, "weights", rank - 1, tnd ? "[T1,N1]" : "[B,S1,N1]")) != LIG_SUCCESS) return st;
    if ((st = check_qkw_dtypes(query, "query", key_cache, key_name, weights, quant)) != LIG_SUCCESS) return st;
    if ((st = lig_check_index_dtype(block_table, "block_table")) != LIG_SUCCESS) return st;

    const int64_t *qs = query->shape, *cs = key_cache->shape;
    *p = (lig_problem){.tnd = tnd, .B = tnd ? -1 : qs[0], .K = -1};
    p->S1 = qs[rank - 3];
    p->N1 = qs[rank - 2];
    if ((st = values_per_head(query, "query", qs[rank - 1], &p->D)) != LIG_SUCCESS) return st;
    p->N2 = cs[2];
    const int64_t block_size = cs[1];
    if (cs[3] != qs[rank - 1]) {
        const int64_t expect[4] = {cs[0], cs[1], cs[2], qs[rank - 1]};
        return lig_check_shape(key_cache, key_name, 4, expect, "D like query");
    }
    /* the most keys a batch can have: its table's blocks, full (its rows are checked once the
     * batches are known, forward_checks.c) */
    const int64_t blocks = block_table->shape[1];
    if (block_size != 0 && blocks > INT64_MAX / block_size)
        return lig_fail(LIG_ERR_PARAM_INVALID, "block_table: expected max_blocks_per_seq * block_size below 2^63, got %lld * %lld",
                        (long long)blocks, (long long)block_size);
    p->S2 = blocks * block_size;
    if (p->N2 == 0 ? p->N1 != 0 : p->N1 % p->N2 != 0)
        return lig_fail(LIG_ERR_PARAM_INVALID,
                        "%s: expected a head count N2 that divides query's N1 = %lld, got N2 = %lld", key_name,
                        (long long)p->N1, (long long)p->N2);
    p->G = p->N2 ? p->N1 / p->N2 : 0;
    int64_t expect[3], n = 0;
    if (!tnd) expect[n++] = p->B;
    expect[n++] = p->S1;
    expect[n++] = p->N1;
    return lig_check_shape(weights, "weights", n, expect, "like query without D");
}

lig_status lig_grad_problem_fill(lig_grad_problem *g, lig_problem pr, const lig_grad_tensors *t, bool short_form,
                                 bool deterministic, int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
                                 const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key) {
    lig_status st =
        lig_problem_resolve(&pr, false, sparse_mode, pre_tokens, next_tokens, actual_seq_lengths_query, actual_seq_lengths_key);
    if (st != LIG_SUCCESS) return st;
    g->pr = pr;
    g->deterministic = deterministic;
    g->dense = false;
    g->q = lig_problem_view(&pr, t->query, true, true);
    g->dq = lig_problem_view(&pr, t->d_query, true, true);
    g->w = lig_problem_view(&pr, t->weights, true, false);
    g->dw = lig_problem_view(&pr, t->d_weights, true, false);
    g->idx = lig_problem_view(&pr, t->sparse_indices, !short_form, true);
    g->k = lig_problem_view(&pr, t->key, true, true);
    g->dk = lig_problem_view(&pr, t->d_key, true, true);
    return LIG_SUCCESS;
}

/* The residuals into out[B] (0 when `res` is absent), each batch's rule checked. */
static lig_status read_residuals(const lig_problem *pr, const lig_tensor *res, int64_t mask_mode, int64_t ratio,
                                 int64_t *out) {
    lig_status st;
    if (res) {
        if ((st = lig_check_index_dtype(res, "cmp_residual_k")) != LIG_SUCCESS) return st;
        const int64_t expect[1] = {pr->B};
        if ((st = lig_check_shape(res, "cmp_residual_k", 1, expect, "one per batch")) != LIG_SUCCESS) return st;
    }
    for (int64_t b = 0; b < pr->B; b++) {
        out[b] = res ? lig_tensor_read_int_1d(res, b) : 0;
        const lig_compressed_keys c = {.mask_mode = mask_mode, .ratio = ratio, .residual = out[b],
                                       .entries = pr->bt.lk[b], .rows = pr->bt.lq[b]};
        if ((st = lig_compressed_keys_check(&c, b)) != LIG_SUCCESS) return st;
    }
    return LIG_SUCCESS;
}

lig_status lig_problem_resolve_compressed(lig_problem *pr, const lig_tensor *actual_seq_lengths_query,
                                          const lig_tensor *actual_seq_lengths_key, const lig_tensor *res,
                                          int64_t mask_mode, int64_t ratio, lig_compressed_rule *rule) {
    /* the rule's scalars before the lengths, so that a bad mode is named whatever the lengths */
    const lig_compressed_keys scalars = {.mask_mode = mask_mode, .ratio = ratio};
    lig_status st = lig_compressed_keys_check(&scalars, 0);
    if (st != LIG_SUCCESS) return st;
    st = lig_problem_resolve(pr, false, 0, INT64_MAX, INT64_MAX, actual_seq_lengths_query, actual_seq_lengths_key);
    if (st != LIG_SUCCESS) return st;
    *rule = (lig_compressed_rule){.mask_mode = mask_mode, .ratio = ratio,
                                  .residual = malloc(sizeof(int64_t) * (size_t)(pr->B > 0 ? pr->B : 1))};
    if (!rule->residual) st = lig_fail(LIG_ERR_RUNTIME, "cmp_residual_k: expected memory for %lld batches, got none",
                                       (long long)pr->B);
    else st = read_residuals(pr, res, mask_mode, ratio, rule->residual);
    if (st != LIG_SUCCESS) {
        free(rule->residual);
        rule->residual = NULL;
        lig_problem_free(pr);
    }
    return st;
}

lig_status lig_problem_check_statistic(const lig_problem *pr, const lig_tensor *t, const char *name, int64_t n1) {
    if (t->dtype != LIG_FLOAT32)
        return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected dtype FLOAT32, got %s", name, lig_dtype_name(t->dtype));
    int64_t expect[4], n = 0;
    if (!pr->tnd) expect[n++] = pr->B;
    expect[n++] = 1;
    expect[n++] = pr->S1;
    expect[n++] = n1;
    return lig_check_shape(t, name, n, expect, pr->tnd ? "[1,T1,N1] like query" : "[B,1,S1,N1] like query");
}

lig_view4 lig_problem_statistic_view(const lig_problem *pr, const lig_tensor *t) {
    lig_view4 v = {.data = t->data, .dtype = t->dtype, .esize = lig_dtype_size(t->dtype)};
    const int64_t at = pr->tnd ? 1 : 2; /* the S1 (T1) axis, after the unit axis of N2 = 1 */
    v.batch = pr->tnd ? 0 : t->strides[0];
    v.row = t->strides[at];
    v.head = t->strides[at + 1];
    return v;
}

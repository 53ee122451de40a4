#include "compressed_rows.h"

#include <stdlib.h>
#include <string.h>

#include "checked.h"
#include "dtype.h"
#include "errmsg.h"

/* ---- the length tensors, read in phase 1 ------------------------------------------------------ */

aclnnStatus fe_check_int_tensor(const aclTensor *t, const char *name, const char *api, int64_t ndim) {
    fe_bound tmp;
    aclnnStatus st = fe_tensor_bind(t, name, api, &tmp);
    if (st != ACLNN_SUCCESS) return st;
    lig_destroy_tensor(tmp.lt);
    if (t->dtype != ACL_INT32 && t->dtype != ACL_INT64)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "%s: expected dtype ACL_INT32 (or ACL_INT64), got %s", name,
                       fe_dtype_name(t->dtype));
    if (t->ndim != ndim)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "%s: expected %lld dimension%s, got %lld", name, (long long)ndim,
                       ndim == 1 ? "" : "s", (long long)t->ndim);
    return ACLNN_SUCCESS;
}

static aclnnStatus check_len(const aclTensor *t, const char *name, const char *api, int64_t want,
                             const char *what) {
    aclnnStatus st = fe_check_int_tensor(t, name, api, 1);
    if (st == ACLNN_SUCCESS && t->shape[0] != want)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "%s: expected shape [%lld] (%s), got [%lld]", name,
                       (long long)want, what, (long long)t->shape[0]);
    return st;
}

/* Element (i, j) of a 1- or 2-D length tensor (checked by fe_check_int_tensor), read unaligned. */
static int64_t read_int(const aclTensor *t, int64_t i, int64_t j) {
    const int64_t at = t->offset + i * t->strides[0] + (t->ndim > 1 ? j * t->strides[1] : 0);
    const char *base = (const char *)t->data;
    if (t->dtype == ACL_INT64) {
        int64_t wide;
        memcpy(&wide, base + (size_t)at * sizeof wide, sizeof wide);
        return wide;
    }
    int32_t narrow;
    memcpy(&narrow, base + (size_t)at * sizeof narrow, sizeof narrow);
    return narrow;
}

static int64_t gcd(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* ---- the rows --------------------------------------------------------------------------------- */

/* The layouts, the mask, the ratio, and which length tensors each layout needs. */
static aclnnStatus check_forms(const fe_v2_args *a, bool paged, bool ktnd) {
    const char *api = a->api;
    if (strcmp(a->layoutQ, "BSND") && strcmp(a->layoutQ, "TND"))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "layoutQ: expected \"BSND\" or \"TND\", got \"%s\"", a->layoutQ);
    if (!paged && strcmp(a->layoutK, a->layoutQ))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                       "layoutK: expected \"%s\" (layoutQ's layout) or \"%s\" (a paged cache), got \"%s\"", a->layoutQ,
                       a->pagedLayout, a->layoutK);
    if (a->maskMode != 0 && a->maskMode != 3)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "maskMode: expected 0 (no mask) or 3 (right-down causal), got %lld",
                       (long long)a->maskMode);
    if (a->cmpRatio < 1 || a->cmpRatio > 128)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "cmpRatio: expected 1..128, got %lld", (long long)a->cmpRatio);
    if (!a->query || !a->key)
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api, "%s: expected a tensor, got nullptr", a->query ? "key" : "query");
    const bool tnd = !strcmp(a->layoutQ, "TND");
    if (a->query->ndim != (tnd ? 3 : 4))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "query: expected %s with layoutQ \"%s\", got %lld dimensions",
                       tnd ? "[T1,N1,D]" : "[B,S1,N1,D]", a->layoutQ, (long long)a->query->ndim);
    if (a->key->ndim != (ktnd ? 3 : 4))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "key: expected %s with layoutK \"%s\", got %lld dimensions",
                       ktnd ? "[T2,N2,D]" : paged ? "[blockNum,blockSize,N2,D]" : "[B,S2,N2,D]", a->layoutK,
                       (long long)a->key->ndim);
    if (tnd && !a->cuSeqlensQ)
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api,
                       "%s: expected the (B+1,) cumulative query lengths with layoutQ \"TND\", got nullptr", a->cuQName);
    if (ktnd && !a->cuSeqlensK)
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api,
                       "%s: expected the (B+1,) cumulative key lengths with layoutK \"TND\", got nullptr", a->cuKName);
    if (paged && !a->blockTable)
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api,
                       "blockTableOptional: expected a [B, maxBlocksPerSeq] tensor with layoutK \"%s\", got nullptr",
                       a->layoutK);
    if (paged && !a->sequsedK)
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api,
                       "sequsedKOptional: expected the (B,) key lengths with layoutK \"%s\", got nullptr", a->layoutK);
    if (!paged && a->blockTable)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                       "blockTableOptional: expected nullptr with layoutK \"%s\" (a block table is only read with "
                       "\"%s\"), got a tensor",
                       a->layoutK, a->pagedLayout);
    /* CANN's check (its metadata op's CheckExistence): the residual decides what mask 3 sees. */
    if (a->maskMode == 3 && a->cmpRatio != 1 && !a->cmpResidualK)
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api,
                       "cmpResidualKOptional: expected the (B,) residual token counts when maskMode is 3 and cmpRatio "
                       "is %lld (not 1), got nullptr",
                       (long long)a->cmpRatio);
    return ACLNN_SUCCESS;
}

/* The batch count and the length tensors' shapes. */
static aclnnStatus check_lengths(const fe_v2_args *a, bool paged, bool ktnd, int64_t *B) {
    const char *api = a->api;
    aclnnStatus st;
    if (!strcmp(a->layoutQ, "TND")) {
        if ((st = fe_check_int_tensor(a->cuSeqlensQ, a->cuQName, api, 1)) != ACLNN_SUCCESS) return st;
        if (a->cuSeqlensQ->shape[0] < 1)
            return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "%s: expected (B+1,) cumulative lengths, got an empty tensor",
                           a->cuQName);
        *B = a->cuSeqlensQ->shape[0] - 1;
    } else {
        *B = a->query->shape[0];
    }
    if (a->sequsedQ && (st = check_len(a->sequsedQ, "sequsedQOptional", api, *B, "one per batch")) != ACLNN_SUCCESS)
        return st;
    if (a->sequsedK && (st = check_len(a->sequsedK, "sequsedKOptional", api, *B, "one per batch")) != ACLNN_SUCCESS)
        return st;
    if (a->cmpResidualK &&
        (st = check_len(a->cmpResidualK, "cmpResidualKOptional", api, *B, "one per batch")) != ACLNN_SUCCESS)
        return st;
    if (ktnd && (st = check_len(a->cuSeqlensK, a->cuKName, api, *B + 1, "B+1 cumulative lengths")) != ACLNN_SUCCESS)
        return st;
    if (!ktnd && !paged && a->key->shape[0] != *B)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "key: expected %lld batches (the query's), got %lld",
                       (long long)*B, (long long)a->key->shape[0]);
    if (paged) {
        if ((st = fe_check_int_tensor(a->blockTable, "blockTableOptional", api, 2)) != ACLNN_SUCCESS) return st;
        if (a->blockTable->shape[0] != *B)
            return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                           "blockTableOptional: expected %lld rows (one per batch), got %lld", (long long)*B,
                           (long long)a->blockTable->shape[0]);
    }
    return ACLNN_SUCCESS;
}

/* A cumulative-length pair [lo, hi) of batch b, inside 0..total. */
static aclnnStatus segment(const aclTensor *cu, const char *name, const char *api, int64_t b, int64_t total,
                           int64_t *lo, int64_t *hi) {
    *lo = read_int(cu, b, 0);
    *hi = read_int(cu, b + 1, 0);
    if (*lo < 0 || *lo > *hi || *hi > total)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                       "%s[%lld..%lld]: expected non-decreasing cumulative lengths within 0..%lld, got %lld, %lld",
                       name, (long long)b, (long long)(b + 1), (long long)total, (long long)*lo, (long long)*hi);
    return ACLNN_SUCCESS;
}

static aclnnStatus used_length(const aclTensor *used, const char *name, const char *api, int64_t b, int64_t room,
                               const char *what, int64_t *len) {
    *len = used ? read_int(used, b, 0) : room;
    if (*len < 0 || *len > room)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "%s[%lld]: expected 0..%lld (%s), got %lld", name, (long long)b,
                       (long long)room, what, (long long)*len);
    return ACLNN_SUCCESS;
}

/* The key described as a cache, and the table's width. */
static aclnnStatus key_geometry(const fe_v2_args *a, bool paged, bool ktnd, int64_t B, fe_v2_rows *r) {
    const aclTensor *k = a->key;
    if (paged) {
        r->num_blocks = k->shape[0];
        r->block_size = k->shape[1];
        r->cols = a->blockTable->shape[1];
        return ACLNN_SUCCESS;
    }
    if (!ktnd) {
        r->num_blocks = B;
        r->block_size = k->shape[1];
        r->cols = 1;
        return ACLNN_SUCCESS;
    }
    /* TND: blocks that tile T2 exactly and start every batch on a block, so that no view reaches
     * past the key tensor and each batch's keys are whole blocks from its first. */
    const int64_t T2 = k->shape[0];
    int64_t bs = T2, widest = 0;
    for (int64_t b = 0; b < B; b++) {
        int64_t lo, hi;
        aclnnStatus st = segment(a->cuSeqlensK, a->cuKName, a->api, b, T2, &lo, &hi);
        if (st != ACLNN_SUCCESS) return st;
        bs = gcd(bs, lo);
        if (hi - lo > widest) widest = hi - lo;
    }
    if (bs == 0) bs = 1; /* no keys at all */
    r->block_size = bs;
    r->num_blocks = T2 / bs;
    r->cols = widest ? (widest + bs - 1) / bs : 1;
    return ACLNN_SUCCESS;
}

aclnnStatus fe_v2_rows_plan(const fe_v2_args *a, fe_args *args, fe_v2_rows *r) {
    const char *api = a->api;
    memset(r, 0, sizeof *r);
    const bool paged = !strcmp(a->layoutK, a->pagedLayout), ktnd = !strcmp(a->layoutK, "TND");
    aclnnStatus st = check_forms(a, paged, ktnd);
    if (st != ACLNN_SUCCESS) return st;
    int64_t B = 0;
    if ((st = check_lengths(a, paged, ktnd, &B)) != ACLNN_SUCCESS) return st;
    r->tnd = !strcmp(a->layoutQ, "TND");
    r->key_tnd = ktnd;
    r->B = B;
    const int64_t S1 = r->tnd ? 0 : a->query->shape[1];
    if (r->tnd) r->R = a->query->shape[0];
    else if (!fe_mul_ok(B, S1, &r->R))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "query: B*S1 = %lld*%lld rows overflow int64", (long long)B,
                       (long long)S1);
    if ((st = key_geometry(a, paged, ktnd, B, r)) != ACLNN_SUCCESS) return st;

    int64_t cells = 0, total = 0;
    if (!fe_mul_ok(r->R, r->cols, &cells) || !fe_add_ok(cells, r->R, &total) ||
        (uint64_t)total > SIZE_MAX / sizeof(int64_t) - 1)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                       "key: a table of %lld rows by %lld blocks of %lld keys does not fit in memory", (long long)r->R,
                       (long long)r->cols, (long long)r->block_size);
    int64_t *buf = calloc((size_t)total + 1, sizeof(int64_t));
    if (!buf)
        return fe_fail(ACLNN_ERR_RUNTIME_ERROR, api, "out of memory for a table of %lld rows by %lld blocks",
                       (long long)r->R, (long long)r->cols);
    if (!fe_args_own(args, buf)) return fe_fail(ACLNN_ERR_INNER, api, "too many owned arrays");
    r->lengths = buf;
    r->table = buf + r->R;

    const int64_t key_room = paged ? (fe_mul_ok(r->cols, r->block_size, &cells) ? cells : INT64_MAX) : 0;
    for (int64_t b = 0; b < B; b++) {
        int64_t q0 = b * S1, q1 = q0 + S1, k0 = 0, k1 = ktnd ? 0 : paged ? key_room : a->key->shape[1];
        if (r->tnd && (st = segment(a->cuSeqlensQ, a->cuQName, api, b, r->R, &q0, &q1)) != ACLNN_SUCCESS) return st;
        if (ktnd && (st = segment(a->cuSeqlensK, a->cuKName, api, b, a->key->shape[0], &k0, &k1)) != ACLNN_SUCCESS)
            return st;
        int64_t lq, lk;
        if ((st = used_length(a->sequsedQ, "sequsedQOptional", api, b, q1 - q0, "the batch's query rows", &lq)) !=
                ACLNN_SUCCESS ||
            (st = used_length(a->sequsedK, "sequsedKOptional", api, b, k1 - k0,
                              paged ? "the batch's table columns times blockSize" : "the batch's keys", &lk)) !=
                ACLNN_SUCCESS)
            return st;
        const int64_t res = a->cmpResidualK ? read_int(a->cmpResidualK, b, 0) : 0;
        if (res < 0 || res >= a->cmpRatio)
            return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                           "cmpResidualKOptional[%lld]: expected 0..%lld (below cmpRatio %lld), got %lld", (long long)b,
                           (long long)(a->cmpRatio - 1), (long long)a->cmpRatio, (long long)res);
        lig_status ls = lig_compressed_visible_counts(a->maskMode, a->cmpRatio, res, lk, lq, b, r->lengths + q0);
        if (ls != LIG_SUCCESS) return fe_fail_lig(ls, api);
        for (int64_t row = q0; row < q1; row++) {
            int64_t *t = r->table + row * r->cols;
            if (paged)
                for (int64_t j = 0; j < r->cols; j++) t[j] = read_int(a->blockTable, b, j);
            else if (ktnd)
                for (int64_t j = 0; j * r->block_size < lk; j++) t[j] = k0 / r->block_size + j;
            else
                t[0] = b;
        }
    }
    return ACLNN_SUCCESS;
}

/* ---- views ------------------------------------------------------------------------------------ */

fe_view fe_view_of(const aclTensor *t, float *staged) {
    fe_view v = {.dtype = LIG_FLOAT32, .ndim = t->ndim};
    if (!fe_dtype_to_lig(t->dtype, &v.dtype)) v.dtype = LIG_UINT8; /* bound tensors always map */
    memcpy(v.shape, t->shape, sizeof v.shape);
    if (staged) {
        v.data = (char *)staged;
        v.dtype = LIG_FLOAT32;
        int64_t step = 1;
        for (int64_t d = t->ndim - 1; d >= 0; d--) {
            v.strides[d] = step;
            step *= t->shape[d] ? t->shape[d] : 1;
        }
    } else {
        size_t start = 0;
        (void)fe_byte_view(t, v.shape, v.strides, &start); /* bound already: a whole-byte view */
        v.data = t->numel ? (char *)t->data + start : (char *)t->data;
    }
    return v;
}

aclnnStatus fe_v2_row_view(const fe_v2_rows *rows, const char *name, const char *api, fe_view *v) {
    fe_view out = *v;
    int64_t rest_from, row_stride;
    if (rows->tnd) {
        if (v->ndim + 1 > FE_MAX_DIMS || v->ndim < 1)
            return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "%s: got %lld dimensions", name, (long long)v->ndim);
        rest_from = 1;
        row_stride = v->strides[0];
        out.ndim = v->ndim + 1;
    } else {
        if (v->ndim < 2)
            return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "%s: expected [B,S1,...], got %lld dimensions", name,
                           (long long)v->ndim);
        const int64_t B = v->shape[0], S1 = v->shape[1];
        if (S1 == 1) row_stride = v->strides[0];
        else if (B == 1 || v->strides[0] == S1 * v->strides[1]) row_stride = v->strides[1];
        else
            return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                           "%s: expected its B and S1 axes to merge (batch stride = S1 * row stride, as in a "
                           "contiguous tensor), got strides %lld and %lld with S1 = %lld",
                           name, (long long)v->strides[0], (long long)v->strides[1], (long long)S1);
        rest_from = 2;
        out.ndim = v->ndim;
    }
    int64_t have = 0;
    if (!rows->tnd && (!fe_mul_ok(v->shape[0], v->shape[1], &have) || have != rows->R))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "%s: expected %lld rows (the query's), got [%lld,%lld]", name,
                       (long long)rows->R, (long long)v->shape[0], (long long)v->shape[1]);
    if (rows->tnd && v->shape[0] != rows->R)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "%s: expected %lld rows (the query's T1), got %lld", name,
                       (long long)rows->R, (long long)v->shape[0]);
    out.shape[0] = rows->R;
    out.shape[1] = 1;
    out.strides[0] = out.strides[1] = row_stride;
    for (int64_t d = rest_from; d < v->ndim; d++) {
        out.shape[2 + d - rest_from] = v->shape[d];
        out.strides[2 + d - rest_from] = v->strides[d];
    }
    *v = out;
    return ACLNN_SUCCESS;
}

void fe_v2_cache_view(const fe_v2_rows *rows, fe_view *v) {
    if (!rows->key_tnd || v->ndim + 1 > FE_MAX_DIMS) return; /* BSND and paged keys are caches already */
    for (int64_t d = v->ndim; d >= 1; d--) {
        v->shape[d] = v->shape[d - 1];
        v->strides[d] = v->strides[d - 1];
    }
    v->shape[0] = rows->num_blocks;
    v->shape[1] = rows->block_size;
    v->strides[0] = rows->block_size * v->strides[1];
    v->ndim++;
}

aclnnStatus fe_v2_rebind(fe_args *args, lig_tensor **lt, const fe_view *v, const char *name, const char *api) {
    return fe_args_reshape(args, lt, v->data, v->dtype, v->ndim, v->shape, v->strides, name, api);
}

aclnnStatus fe_v2_row_tensors(const fe_v2_rows *rows, fe_args *args, const char *api, lig_tensor **lengths,
                              lig_tensor **table) {
    const int64_t ls[1] = {rows->R}, ts[2] = {rows->R, rows->cols};
    aclnnStatus st = fe_args_host_int64(args, rows->lengths, 1, ls, "lengths", api, lengths);
    return st != ACLNN_SUCCESS ? st : fe_args_host_int64(args, rows->table, 2, ts, "table", api, table);
}

/* ---- after lig -------------------------------------------------------------------------------- */

typedef struct v2_post {
    int64_t R, G, K;
    char *idx;
    size_t idx_es;
    int64_t idx_s[3];
    char *off; /* NULL: no offset */
    size_t off_es;
    int64_t off_s[2];
    char *val; /* NULL: nothing to fill */
    aclDataType val_dt;
    int64_t val_s[3];
} v2_post;

static void run_post(const void *ctx) {
    const v2_post *p = ctx;
    for (int64_t r = 0; r < p->R; r++)
        for (int64_t g = 0; g < p->G; g++) {
            if (p->off) {
                const char *o = p->off + (size_t)(r * p->off_s[0] + g * p->off_s[1]) * p->off_es;
                int64_t add;
                if (p->off_es == 4) {
                    int32_t v;
                    memcpy(&v, o, sizeof v);
                    add = v;
                } else {
                    memcpy(&add, o, sizeof add);
                }
                for (int64_t k = 0; k < p->K; k++) {
                    char *at = p->idx + (size_t)(r * p->idx_s[0] + g * p->idx_s[1] + k * p->idx_s[2]) * p->idx_es;
                    /* unsigned sums: the device's two's-complement wrap, without C's overflow */
                    if (p->idx_es == 4) {
                        int32_t v;
                        memcpy(&v, at, sizeof v);
                        if (v == -1) continue;
                        uint32_t u = (uint32_t)v + (uint32_t)add;
                        memcpy(at, &u, sizeof u);
                    } else {
                        int64_t v;
                        memcpy(&v, at, sizeof v);
                        if (v == -1) continue;
                        uint64_t u = (uint64_t)v + (uint64_t)add;
                        memcpy(at, &u, sizeof u);
                    }
                }
            }
            if (p->val)
                for (int64_t k = 0; k < p->K; k++) {
                    char *at = p->val + (size_t)(r * p->val_s[0] + g * p->val_s[1] + k * p->val_s[2]) *
                                            fe_dtype_size(p->val_dt);
                    if (p->val_dt == ACL_FLOAT) {
                        const uint32_t ninf = 0xFF800000u;
                        memcpy(at, &ninf, sizeof ninf);
                    } else {
                        const uint16_t ninf = p->val_dt == ACL_BF16 ? 0xFF80u : 0xFC00u;
                        memcpy(at, &ninf, sizeof ninf);
                    }
                }
        }
}

/* (G, K) and the strides of a row view [R,1,G,K] or [R,1,K]. */
static aclnnStatus slots_of(const fe_view *v, const char *name, const char *api, int64_t *G, int64_t *K,
                            int64_t s[3]) {
    s[0] = v->strides[0];
    if (v->ndim == 4) {
        *G = v->shape[2], *K = v->shape[3], s[1] = v->strides[2], s[2] = v->strides[3];
    } else if (v->ndim == 3) {
        *G = 1, *K = v->shape[2], s[1] = 0, s[2] = v->strides[2];
    } else {
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "%s: expected [B,S1,N2,topk] or [T1,N2,topk], got %lld dimensions",
                       name, (long long)(v->ndim - (v->ndim > 0)));
    }
    return ACLNN_SUCCESS;
}

aclnnStatus fe_v2_post(const fe_v2_rows *rows, fe_args *args, const char *api, const aclTensor *indices,
                       const aclTensor *outputIdxOffset, const aclTensor *values_to_fill) {
    if (!outputIdxOffset && !values_to_fill) return ACLNN_SUCCESS;
    v2_post *p = calloc(1, sizeof *p);
    if (!p) return fe_fail(ACLNN_ERR_RUNTIME_ERROR, api, "out of memory");
    args->post = (fe_post){.run = run_post, .ctx = p};
    fe_view iv = fe_view_of(indices, NULL);
    aclnnStatus st = fe_v2_row_view(rows, "sparseIndicesOut", api, &iv);
    if (st == ACLNN_SUCCESS) st = slots_of(&iv, "sparseIndicesOut", api, &p->G, &p->K, p->idx_s);
    if (st != ACLNN_SUCCESS) return st;
    p->R = rows->R;
    p->idx = iv.data;
    p->idx_es = fe_dtype_size(indices->dtype);
    if (outputIdxOffset) {
        lig_tensor *unused;
        if ((st = fe_args_bind(args, outputIdxOffset, "outputIdxOffsetOptional", api, false, &unused)) != ACLNN_SUCCESS)
            return st;
        if (outputIdxOffset->dtype != ACL_INT32 && outputIdxOffset->dtype != ACL_INT64)
            return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "outputIdxOffsetOptional: expected dtype ACL_INT32, got %s",
                           fe_dtype_name(outputIdxOffset->dtype));
        fe_view ov = fe_view_of(outputIdxOffset, NULL);
        const int64_t want = rows->tnd ? 1 : 2; /* dimensions before N2 */
        if (ov.ndim != want && ov.ndim != want + 1)
            return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                           "outputIdxOffsetOptional: expected %s, got %lld dimensions",
                           rows->tnd ? "[T1,N2] or [T1]" : "[B,S1,N2] or [B,S1]", (long long)ov.ndim);
        if ((st = fe_v2_row_view(rows, "outputIdxOffsetOptional", api, &ov)) != ACLNN_SUCCESS) return st;
        if (ov.ndim == 3 && ov.shape[2] != p->G)
            return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "outputIdxOffsetOptional: expected N2 = %lld offsets a row, got %lld",
                           (long long)p->G, (long long)ov.shape[2]);
        p->off = ov.data;
        p->off_es = fe_dtype_size(outputIdxOffset->dtype);
        p->off_s[0] = ov.strides[0];
        p->off_s[1] = ov.ndim == 3 ? ov.strides[2] : 0;
    }
    if (values_to_fill) {
        lig_tensor *unused;
        if ((st = fe_args_bind(args, values_to_fill, "sparseValuesOut", api, false, &unused)) != ACLNN_SUCCESS)
            return st;
        if (values_to_fill->dtype != ACL_FLOAT && values_to_fill->dtype != ACL_BF16 &&
            values_to_fill->dtype != ACL_FLOAT16)
            return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                           "sparseValuesOut: expected dtype ACL_BF16, ACL_FLOAT or ACL_FLOAT16, got %s",
                           fe_dtype_name(values_to_fill->dtype));
        if (values_to_fill->ndim != indices->ndim ||
            memcmp(values_to_fill->shape, indices->shape, sizeof(int64_t) * (size_t)indices->ndim))
            return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                           "sparseValuesOut: expected sparseIndicesOut's shape (or an empty tensor), got another");
        fe_view vv = fe_view_of(values_to_fill, NULL);
        int64_t G, K;
        if ((st = fe_v2_row_view(rows, "sparseValuesOut", api, &vv)) != ACLNN_SUCCESS ||
            (st = slots_of(&vv, "sparseValuesOut", api, &G, &K, p->val_s)) != ACLNN_SUCCESS)
            return st;
        p->val = vv.data;
        p->val_dt = values_to_fill->dtype;
    }
    return ACLNN_SUCCESS;
}

/* See forward_build.h. The problem and its parts live in one allocation, the problem first: the
 * executor's problem pointer is the allocation's. */
#include "api/forward_build.h"

#include <stdio.h>
#include <stdlib.h>

#include "api/quant_logits_schedule.h"
#include "api/sparse_blocks.h"
#include "core/error.h"
#include "core/fwd_problem.h"
#include "core/tensor.h"

typedef struct fwd_storage {
    lig_fwd_problem pb; /* first */
    lig_paged_keys paged;
    lig_quant_scales scales;
    lig_key_ranges ranges; /* one allocation: hi = lo + rows */
    lig_logits_out logits;
    lig_fwd_schedule schedule; /* one allocation: batch_block0 = start + pieces + 1 */
    lig_sparse_blocks sparse;  /* one allocation: count, then the ids */
} fwd_storage;

static void free_storage(void *p) {
    fwd_storage *s = p;
    lig_problem_free(&s->pb.pr);
    free(s->ranges.lo);
    free(s->schedule.start);
    free(s->sparse.count);
    free(s);
}

static int64_t read_range(const lig_tensor *t, int64_t r, int64_t S1) {
    if (t->ndim == 1) return lig_load_int(t->dtype, (const char *)t->data + (size_t)(r * t->strides[0]) * lig_dtype_size(t->dtype));
    const int64_t b = r / S1, i = r % S1;
    return lig_load_int(t->dtype,
                        (const char *)t->data + (size_t)(b * t->strides[0] + i * t->strides[1]) * lig_dtype_size(t->dtype));
}

/* The logits operator's ranges [key_start, key_end) of its `rows` rows into *out (owned by the
 * caller on success): 0 <= start <= end <= S2, and W columns hold every row's scores. */
static lig_status read_ranges(const lig_fwd_call *c, int64_t rows, lig_key_ranges *out) {
    const lig_problem *pr = &c->pr;
    const int64_t bound = pr->S2, W = c->logits_cols;
    const char *what = c->paged ? "max_blocks_per_seq x block_size" : pr->tnd ? "T2" : "S2";
    int64_t *v = malloc(sizeof(int64_t) * (size_t)(2 * rows + 1));
    if (!v) return lig_fail(LIG_ERR_RUNTIME, "key_end: expected memory for %lld ranges, got none", (long long)rows);
    int64_t need = 0; /* the columns the logits must have */
    for (int64_t r = 0; r < rows; r++) {
        const int64_t s = c->key_start ? read_range(c->key_start, r, pr->S1) : 0, e = read_range(c->key_end, r, pr->S1);
        const int64_t b = pr->tnd ? 0 : r / pr->S1, i = pr->tnd ? r : r % pr->S1;
        char at[48];
        if (pr->tnd) snprintf(at, sizeof at, "[%lld]", (long long)i);
        else snprintf(at, sizeof at, "[%lld,%lld]", (long long)b, (long long)i);
        lig_status st = LIG_SUCCESS;
        if (s < 0 || s > bound)
            st = lig_fail(LIG_ERR_PARAM_INVALID, "key_start: expected values in [0, %lld] (%s), got %lld at %s",
                          (long long)bound, what, (long long)s, at);
        else if (e < s || e > bound)
            st = lig_fail(LIG_ERR_PARAM_INVALID, "key_end: expected values in [key_start = %lld, %lld] (%s), got %lld at %s",
                          (long long)s, (long long)bound, what, (long long)e, at);
        if (st != LIG_SUCCESS) {
            free(v);
            return st;
        }
        v[r] = s;
        v[rows + r] = e;
        const int64_t cols = c->compressed ? e - s : e;
        need = cols > need ? cols : need;
    }
    if (c->logits && W < need) {
        free(v);
        return lig_fail(LIG_ERR_PARAM_INVALID, "logits: expected at least %lld columns (the %s), got %lld", (long long)need,
                        c->compressed ? "longest key range, compressed" : "largest key_end", (long long)W);
    }
    *out = (lig_key_ranges){.lo = v, .hi = v + rows};
    return LIG_SUCCESS;
}

/* The call's rows and what each sees into c->pr: the sequence lengths and the mask, or the logits
 * operator's key ranges (stored in s, which c->pr then points into). */
static lig_status resolve(lig_fwd_call *c, fwd_storage *s) {
    if (c->op != LIG_OP_QUANT_LOGITS && c->op != LIG_OP_SPARSE_LOGITS)
        return lig_problem_resolve(&c->pr, c->paged, c->sparse_mode, c->pre_tokens, c->next_tokens,
                                   c->actual_seq_lengths_query, c->actual_seq_lengths_key);
    /* BSND: B batches of S1 rows; TND: one sequence of T1 rows over the T2 keys (DeepGEMM's
     * fp8_mqa_logits) */
    const int64_t batches = c->pr.tnd ? 1 : c->pr.B, per = c->pr.S1;
    lig_status st = read_ranges(c, batches * per, &s->ranges);
    if (st != LIG_SUCCESS) return st;
    return lig_problem_resolve_ranges(&c->pr, c->paged, batches, per, &s->ranges);
}

/* The parts of the checked, resolved call (the problem's geometry already in s->pb.pr). */
static void build_parts(const lig_fwd_call *c, fwd_storage *s) {
    lig_fwd_problem *pb = &s->pb;
    const lig_problem *pr = &pb->pr;
    pb->q = lig_problem_view(pr, c->query, true, true);
    pb->k = c->paged ? lig_problem_cache_view(c->key) : lig_problem_view(pr, c->key, true, true);
    pb->w = lig_problem_view(pr, c->weights, true, false);
    pb->has_topk = c->sparse_indices != NULL;
    if (c->sparse_indices) pb->idx = lig_problem_view(pr, c->sparse_indices, !c->short_form, true);
    pb->has_values = c->sparse_values != NULL;
    if (c->sparse_values) pb->val = lig_problem_view(pr, c->sparse_values, !c->short_form, true);
    if (c->paged) {
        const lig_tensor *t = c->block_table;
        s->paged = (lig_paged_keys){.data = t->data, .dtype = t->dtype, .esize = lig_dtype_size(t->dtype),
                                    .batch = t->strides[0], .step = t->strides[1], .blocks = t->shape[1],
                                    .block_size = c->key->shape[1], .num_blocks = c->key->shape[0]};
        pb->paged = &s->paged;
    }
    if (c->key_dequant_scale) { /* the quantized forwards */
        /* MXFP4 block scales have a last axis of blocks (the view's dim), unless it was left out */
        const lig_tensor *sk = c->key_dequant_scale, *sq = c->query_dequant_scale;
        const bool sk_blocks = sk->ndim == c->key->ndim;
        s->scales.sk = c->paged ? lig_problem_cache_scale_view(sk) : lig_problem_view(pr, sk, true, sk_blocks);
        if (c->paged && sk_blocks) s->scales.sk.dim = sk->strides[3];
        s->scales.has_sq = sq != NULL;
        if (sq) s->scales.sq = lig_problem_view(pr, sq, true, sq->ndim == c->weights->ndim + 1);
        pb->scales = &s->scales;
    }
    pb->ranges = pr->ranges;
    if (c->logits) {
        s->logits = (lig_logits_out){.view = lig_problem_view(pr, c->logits, !c->logits_short, true),
                                     .cols = c->logits_cols, .compressed = c->compressed, .clean = c->clean_logits};
        pb->logits = &s->logits;
    }
    if (s->schedule.start) pb->schedule = &s->schedule;
    if (c->sparse_logits) {
        s->sparse.out = lig_problem_view(pr, c->sparse_logits, !c->sparse_short, true);
        pb->sparse = &s->sparse;
    }
}

lig_status lig_fwd_phase1(lig_fwd_call *c) {
    lig_status st = lig_fwd_check_arguments(c);
    if (st != LIG_SUCCESS) return st;
    fwd_storage *s = calloc(1, sizeof *s);
    if (!s) return lig_fail(LIG_ERR_RUNTIME, "executor: expected memory for a plan, got none");
    if ((st = resolve(c, s)) != LIG_SUCCESS) {
        free(s->ranges.lo);
        free(s);
        return st;
    }
    s->pb.pr = c->pr; /* the batches are the storage's from here on */
    st = lig_fwd_check_resolved(c);
    if (st == LIG_SUCCESS && c->sparse_kv_block_indices) st = lig_sparse_blocks_read(c, &s->ranges, &s->sparse);
    if (st == LIG_SUCCESS && c->schedule) {
        st = lig_logits_schedule_read(c->schedule, &s->pb.pr, c->key->shape[1], &s->schedule.start, &s->schedule.pieces);
        if (st == LIG_SUCCESS) s->schedule.batch_block0 = s->schedule.start + s->schedule.pieces + 1;
    }
    if (st != LIG_SUCCESS) {
        free_storage(s);
        return st;
    }
    build_parts(c, s);
    return lig_executor_plan(c->op, c->placed, &s->pb, free_storage, c->workspace_size, c->executor);
}

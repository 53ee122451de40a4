/* Planning the CPU forward: per-thread scratch only, bounded by K and one block of keys, never
 * by the [S1, S2] score matrix. */
#include <stdio.h>
#include <stdlib.h>

#include "backends/cpu/operators/plan_alloc.h"
#include "backends/cpu/operators/indexer_plan.h"
#include "backends/cpu/operators/sparse_logits_walk.h"
#include "backends/cpu/operators/topk.h"
#include "core/error.h"
#include "core/settings.h"
#include "core/workspace.h"

/* Each thread's scratch and the workspace. The top-k grows with K and the longest key length,
 * the engine's part with the stripe's query heads; a size past 2^63 bytes names the operand that
 * drives it, and no workspace size is reported. */
static lig_status size_scratch(lig_cpu_fwd_plan *p, uint64_t topk_bytes, int64_t rows) {
    const lig_problem *pr = &p->pb->pr;
    char topk_detail[128], engine_detail[128];
    snprintf(topk_detail, sizeof topk_detail, "K = %lld, %lld candidates kept per row", (long long)pr->K,
             (long long)p->heap_cap);
    snprintf(engine_detail, sizeof engine_detail, "%lld heads per key head, D = %lld", (long long)pr->G,
             (long long)pr->D);
    const uint64_t topk = lig_size_mul(topk_bytes, (uint64_t)rows), engine = p->engine->scratch_bytes(&p->ctx);
    lig_status st = lig_size_check(topk, "sparse_count", "the bytes of each thread's top-k scratch", topk_detail);
    if (st == LIG_SUCCESS)
        st = lig_size_check(engine, "query", "the bytes of each thread's scoring scratch", engine_detail);
    if (st != LIG_SUCCESS) return st;
    /* the shared part: the sliced stripes' kept candidates and their counts */
    uint64_t at = 0;
    const uint64_t slots = (uint64_t)lig_fwd_split_slots(p->heap_cap);
    p->scratch.cand = lig_ws_take(&at, lig_size_mul3(sizeof(lig_candidate), slots, (uint64_t)p->heap_cap));
    p->scratch.count = lig_ws_take(&at, sizeof(int64_t) * slots);
    p->scratch.threads_at = at;
    at = 0;
    const uint64_t nb = (uint64_t)p->ctx.block;
    p->scratch.key = lig_ws_take(&at, 2 * sizeof(const char *) * nb);
    p->scratch.q = lig_ws_take(&at, 3 * sizeof(const char *) * (uint64_t)rows);
    p->scratch.score = lig_ws_take(&at, sizeof(float) * nb * (uint64_t)rows);
    p->scratch.topk_bytes = topk_bytes;
    p->scratch.topk = lig_ws_take(&at, topk);
    p->scratch.engine = lig_ws_take(&at, engine);
    p->scratch.floor = lig_ws_take(&at, 64 + (sizeof(float) + 1) * LIG_FWD_MAX_ROWS); /* a slice_floor */
    p->scratch.seg = lig_ws_take(&at, p->pb->sparse ? lig_size_mul(sizeof(lig_sparse_segment), nb) : 0);
    p->scratch.total = at;
    p->workspace_size = lig_ws_total(p->scratch.threads_at, (uint64_t)p->threads, at);
    return lig_size_check(p->workspace_size, topk > engine ? "sparse_count" : "query", "the bytes of the workspace",
                          topk > engine ? topk_detail : engine_detail);
}

lig_status lig_cpu_plan_indexer(const lig_fwd_problem *pb, lig_backend_plan *out) {
    const lig_kernel_set *ks;
    lig_status st;
    lig_cpu_fwd_plan *p = lig_cpu_plan_alloc(sizeof *p, &ks, &st);
    if (!p) return st;
    const lig_problem *pr = &pb->pr;
    p->pb = pb;
    int64_t longest = 0;
    for (int64_t b = 0; b < pr->B; b++)
        if (pr->bt.lk[b] > longest) longest = pr->bt.lk[b];
    p->heap_cap = pr->K < longest ? pr->K : longest;
    /* rows per stripe: each keeps its own top-k, so a very large K takes fewer rows at a time */
    const uint64_t topk_bytes = lig_topk_scratch_bytes(p->heap_cap);
    const lig_quant_scales none = {0}, *scales = pb->scales ? pb->scales : &none;
    int64_t rows = pb->scales ? lig_fwd_quant_rows_for(pr->G) : lig_fwd_rows_for(pr->G);
    while (rows > 1 && topk_bytes > LIG_FWD_TOPK_BUDGET / (uint64_t)rows) rows--;
    /* few rows (decode): the split walk's stripes, wider, of each batch's rows, so that they share
     * every key block, perhaps sliced along the keys (fwd_split.h); the scratch is sized for
     * such a stripe either way */
    int64_t split_rows = lig_fwd_split_stripe_rows(pr->G, rows);
    while (split_rows > rows && topk_bytes > LIG_FWD_TOPK_BUDGET / (uint64_t)split_rows) split_rows--;
    p->stripe_rows = rows;
    if (lig_fwd_list_stripes(pr, split_rows, &p->split)) rows = split_rows;
    /* quantized inputs take the engine the set's kernels call for */
    p->engine = pb->scales ? lig_fwd_quant_engine_for(ks, pb->q.dtype, pr->D)
                           : lig_fwd_float_engine_for(ks, pb->q.dtype, rows, pr->G);
    p->own_threads = lig_fwd_engine_own_threads(p->engine, ks);
    p->ctx = (lig_fwd_ctx){.ks = ks, .G = pr->G, .D = pr->D, .rows = split_rows, .dtype = pb->q.dtype, .q_head = pb->q.head,
                           .q_dim = pb->q.dim, .w_head = pb->w.head, .k_dim = pb->k.dim, .w_dtype = pb->w.dtype,
                           .has_sq = scales->has_sq, .sq_dtype = scales->sq.dtype, .sk_dtype = scales->sk.dtype,
                           .sq_head = scales->sq.head, .sq_dim = scales->sq.dim, .sk_dim = scales->sk.dim};
    p->engine->configure(&p->ctx);
    if (p->split.n > 0)
        lig_fwd_split_stripes(&p->split, pr->K, p->ctx.block, lig_fwd_split_keys(), lig_fwd_split_slots(p->heap_cap));
    const int threads = lig_settings_threads();
    p->threads = threads < 1 ? 1 : threads;
    /* a paged cache without blocks holds no key: phase 2's table check refuses every batch that
     * has keys, and the others only get -1 / -inf */
    const bool trivial = pr->D == 0 || pr->G == 0 || pr->key_rows == 0 || (pb->paged && pb->paged->num_blocks == 0);
    p->walk = trivial           ? LIG_FWD_WALK_TRIVIAL
              : pr->units == 0  ? LIG_FWD_WALK_NONE
              : pb->sparse      ? LIG_FWD_WALK_SPARSE
              : pb->schedule    ? LIG_FWD_WALK_PIECES
              : p->split.n == 0 ? LIG_FWD_WALK_STRIPES
                                : LIG_FWD_WALK_SPLIT;
    if (p->walk != LIG_FWD_WALK_TRIVIAL && p->walk != LIG_FWD_WALK_NONE) { /* a zero extent takes no scratch (contract 6.4) */
        if ((st = size_scratch(p, topk_bytes, split_rows)) != LIG_SUCCESS) {
            lig_cpu_plan_free(p);
            return st;
        }
    }
    *out = (lig_backend_plan){.plan = p, .workspace_size = p->workspace_size, .kernel_set = p->engine->kernels_name(&p->ctx),
                              .run = lig_cpu_run_indexer, .free = lig_cpu_plan_free};
    return LIG_SUCCESS;
}

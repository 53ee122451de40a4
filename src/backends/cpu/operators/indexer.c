/* LightningIndexer phase 2 on the CPU (docs/contract.md 2.1; the quantized forward of 2.4 too,
 * with its engine and scales): for each unit (batch, valid row, key head)
 * stream the visible keys in blocks, have the plan's engine score them,
 * I = sum_h w_h * ReLU(q_h . k), and keep the best sparse_count (topk.h). Nothing of size
 * S1 x S2 is ever held; each unit's result is independent of the others, so the output is
 * the same for any thread count. The parts of the problem present (paged keys, scales, key ranges,
 * logits, a schedule) decide where keys are read and results go; the plan picks the walker.
 *
 * The pieces of work (docs/architecture.md "Words for work"): a walk hands out jobs through one
 * shared counter; a job runs one or more stripes (units of one key head in consecutive rows of
 * one batch, scored together) over their keys, block by block, or over one slice of them (the
 * split walk), or a merge of one row's slices. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "backends/cpu/operators/fill.h"
#include "backends/cpu/runtime/first_failure.h"
#include "backends/cpu/operators/indexer_plan.h"
#include "backends/cpu/operators/logits_out.h"
#include "backends/cpu/operators/sparse_logits_walk.h"
#include "backends/cpu/operators/topk.h"
#include "backends/cpu/runtime/fp_mode.h"
#include "backends/cpu/runtime/threadpool.h"
#include "core/dtype_convert.h"
#include "core/error.h"
#include "core/workspace.h"

typedef struct fwd_run {
    const lig_cpu_fwd_plan *p;
    char *ws;
} fwd_run;

static void store_index(lig_dtype dtype, char *dst, int64_t v) {
    if (dtype == LIG_INT32) {
        const int32_t x = (int32_t)v;
        memcpy(dst, &x, sizeof x);
    } else {
        memcpy(dst, &v, sizeof v);
    }
}

/* Writes one unit's K slots: the n selected candidates, then -1 / -inf. The common outputs (int32
 * indices, fp32 values, slots contiguous) take loops of their own, a copy and a fill: a
 * per-element dtype switch and stride cost as much as a fifth of the top-k. */
static void write_slots(const lig_fwd_problem *pb, const lig_unit *x, const lig_candidate *c, int64_t n) {
    const lig_problem *pr = &pb->pr;
    char *ip = lig_q_row_ptr(&pb->idx, pr, x->b, x->t, x->g);
    const int64_t istep = pb->idx.dim * (int64_t)pb->idx.esize;
    if (pb->idx.dtype == LIG_INT32 && istep == (int64_t)sizeof(int32_t)) {
        for (int64_t j = 0; j < n; j++) {
            const int32_t v = (int32_t)c[j].key;
            memcpy(ip + sizeof v * (size_t)j, &v, sizeof v);
        }
        for (int64_t j = n; j < pr->K; j++) memcpy(ip + sizeof(int32_t) * (size_t)j, &(int32_t){-1}, sizeof(int32_t));
    } else {
        for (int64_t j = 0; j < pr->K; j++, ip += istep) store_index(pb->idx.dtype, ip, j < n ? c[j].key : -1);
    }
    if (!pb->has_values) return;
    char *vp = lig_q_row_ptr(&pb->val, pr, x->b, x->t, x->g);
    const int64_t vstep = pb->val.dim * (int64_t)pb->val.esize;
    if (pb->val.dtype == LIG_FLOAT32 && vstep == (int64_t)sizeof(float)) {
        for (int64_t j = 0; j < n; j++) memcpy(vp + sizeof(float) * (size_t)j, &c[j].score, sizeof(float));
        for (int64_t j = n; j < pr->K; j++) memcpy(vp + sizeof(float) * (size_t)j, &(float){-INFINITY}, sizeof(float));
    } else {
        for (int64_t j = 0; j < pr->K; j++, vp += vstep) lig_store_float(pb->val.dtype, vp, j < n ? c[j].score : -INFINITY);
    }
}

/* D, N1 or S2 is 0: every visible key scores exactly 0, so the first visible keys win. */
static void run_trivial_unit(const lig_fwd_problem *pb, int64_t u) {
    const lig_problem *pr = &pb->pr;
    if (!pb->has_topk) return;
    const lig_unit x = lig_unit_decode(pr, u);
    char *ip = lig_q_row_ptr(&pb->idx, pr, x.b, x.t, x.g);
    char *vp = pb->has_values ? lig_q_row_ptr(&pb->val, pr, x.b, x.t, x.g) : NULL;
    for (int64_t j = 0; j < pr->K; j++) {
        const bool taken = x.lo + j <= x.hi;
        store_index(pb->idx.dtype, ip + (size_t)(j * pb->idx.dim) * pb->idx.esize, taken ? x.lo + j : -1);
        if (vp) lig_store_float(pb->val.dtype, vp + (size_t)(j * pb->val.dim) * pb->val.esize, taken ? 0.0f : -INFINITY);
    }
}

/* A thread's bound from the slices of one stripe it ran before (lower keys, since a thread takes
 * its jobs in increasing order): has[i] says that K candidates of row i with lower keys rank at
 * least worst[i], so a later key that does not rank above it cannot be in the row's result (an
 * equal rank loses its tie to the lower keys). It only saves offers: the merge's result is the
 * same with or without it, whatever slices a thread happened to run. */
typedef struct slice_floor {
    int64_t stripe; /* -1: none */
    bool has[LIG_FWD_MAX_ROWS];
    float worst[LIG_FWD_MAX_ROWS];
} slice_floor;
_Static_assert(sizeof(slice_floor) <= 64 + (sizeof(float) + 1) * LIG_FWD_MAX_ROWS, "indexer_plan.c sizes a slice_floor");

/* Where a stripe's rows leave their top-k: written to the outputs (NULL), or kept, in key order, as
 * one slice's candidates (cand: row i's at cand + i * kept; count[i]: how many), with the thread's
 * floor read and raised. */
typedef struct slice_out {
    lig_candidate *cand;
    int64_t *count;
    int64_t kept;
    slice_floor *floor;
} slice_out;

/* Keys s0 .. s0 + n - 1 of batch b, head g, of a key-row view (the keys or their scales): their
 * addresses, contiguous or through the paged cache's table. */
static void gather_keys(const lig_fwd_problem *pb, const lig_view4 *v, int64_t b, int64_t s0, int64_t n, int64_t g,
                        const char **out) {
    if (pb->paged)
        for (int64_t i = 0; i < n; i++) out[i] = lig_paged_key_elem(pb->paged, v, b, s0 + i, g);
    else
        for (int64_t i = 0; i < n; i++) out[i] = lig_k_row_ptr(v, &pb->pr, b, s0 + i, g);
}

/* A stripe: up to ctx.rows units of one key head in consecutive rows of one batch (x[0 .. m)), over
 * the keys k0 .. k1 (the first block starts at k0): the keys any of them sees go through the engine
 * once per block, and each row offers the scores of the keys it sees to its own top-k. */
static void run_stripe(const fwd_run *r, char *s, const lig_unit *x, int64_t m, int64_t k0, int64_t k1,
                       const slice_out *out) {
    const lig_cpu_fwd_plan *p = r->p;
    const lig_fwd_problem *pb = p->pb;
    const lig_problem *pr = &pb->pr;
    const lig_fwd_scratch_layout *L = &p->scratch;
    const char **key = (const char **)(void *)(s + L->key), **ksc = key + p->ctx.block;
    const char **q = (const char **)(void *)(s + L->q), **w = q + p->ctx.rows, **sq = w + p->ctx.rows;
    float *score = (float *)(void *)(s + L->score);
    const lig_quant_scales *scales = pb->scales;
    const bool has_sq = scales && scales->has_sq;
    lig_topk top[LIG_FWD_MAX_ROWS];
    for (int64_t i = 0; i < m; i++) {
        const int64_t h0 = x[i].g * pr->G, a = x[i].lo > k0 ? x[i].lo : k0, e = x[i].hi < k1 ? x[i].hi : k1;
        const int64_t visible = e >= a ? e - a + 1 : 0;
        q[i] = lig_q_row_ptr(&pb->q, pr, x[i].b, x[i].t, h0);
        w[i] = lig_q_row_ptr(&pb->w, pr, x[i].b, x[i].t, h0);
        if (has_sq) sq[i] = lig_q_row_ptr(&scales->sq, pr, x[i].b, x[i].t, h0);
        top[i] = lig_topk_start(s + L->topk + (uint64_t)i * L->topk_bytes, p->heap_cap, visible < pr->K ? visible : pr->K);
        if (out && out->floor->has[i]) lig_topk_floor(&top[i], out->floor->worst[i]);
    }
    p->engine->begin_rows(&p->ctx, s + L->engine, m, q, w, has_sq ? sq : NULL);
    const int64_t block = p->ctx.block;
    for (int64_t s0 = k0; s0 <= k1; s0 += block) {
        const int64_t nb = k1 - s0 + 1 < block ? k1 - s0 + 1 : block;
        gather_keys(pb, &pb->k, x[0].b, s0, nb, x[0].g, key);
        if (scales) gather_keys(pb, &scales->sk, x[0].b, s0, nb, x[0].g, ksc); /* through the same table when paged */
        p->engine->score_block(&p->ctx, s + L->engine, m, nb, key, scales ? ksc : NULL, score);
        for (int64_t i = 0; i < m; i++) {
            /* the keys of the block row i sees: [max(lo_i, s0), min(hi_i, s0 + nb - 1)] */
            const int64_t a = x[i].lo > s0 ? x[i].lo - s0 : 0, e = x[i].hi - s0 + 1 < nb ? x[i].hi - s0 + 1 : nb;
            if (a >= e) continue;
            if (pb->logits) lig_logits_store(pb, &x[i], score + i * block + a, e - a, s0 + a);
            lig_topk_offer_run(&top[i], score + i * block + a, e - a, s0 + a);
        }
    }
    if (!pb->has_topk) return; /* the logits alone: written above */
    for (int64_t i = 0; i < m; i++) {
        if (out) { /* the slice's best, still in key order, for the merge */
            lig_topk_cut(&top[i]);
            if (top[i].full && top[i].cap == pr->K) { /* K kept, all above the floor: a higher one */
                out->floor->has[i] = true;
                out->floor->worst[i] = top[i].worst;
            }
            lig_topk_kept(&top[i], out->cand + i * out->kept);
            out->count[i] = top[i].n;
        } else {
            lig_topk_finish(&top[i]);
            write_slots(pb, &x[i], top[i].best, top[i].n);
        }
    }
}

/* Job v of the stripes walk: the rows [v / N2 * stripe_rows, ...) of key head v % N2, one stripe
 * per batch they reach. */
static void run_rows_job(const fwd_run *r, char *s, int64_t v) {
    const lig_problem *pr = &r->p->pb->pr;
    const int64_t R = r->p->stripe_rows, rows_total = pr->units / pr->N2, g = v % pr->N2, r0 = v / pr->N2 * R;
    const int64_t r1 = r0 + R < rows_total ? r0 + R : rows_total;
    lig_unit x[LIG_FWD_MAX_ROWS];
    int64_t m = 0, lo, hi;
    for (int64_t row = r0; row <= r1; row++) {
        const lig_unit u = row < r1 ? lig_unit_decode(pr, row * pr->N2 + g) : (lig_unit){0};
        if (m > 0 && (row == r1 || u.b != x[0].b)) {
            lig_fwd_rows_span(x, m, &lo, &hi);
            run_stripe(r, s, x, m, lo, hi, NULL);
            m = 0;
        }
        if (row < r1) x[m++] = u;
    }
}

/* The rows of a stripe, decoded. */
static void stripe_units(const lig_problem *pr, const lig_fwd_stripe *st, lig_unit *x) {
    for (int64_t i = 0; i < st->m; i++) x[i] = lig_unit_decode(pr, (st->row0 + i) * pr->N2 + st->g);
}

/* Job v of the split walk: slice c of its stripe, written out when the stripe has one slice, else
 * kept for the merge. */
static void run_slice(const fwd_run *r, char *s, int64_t v) {
    const lig_cpu_fwd_plan *p = r->p;
    const lig_fwd_stripes *sp = &p->split;
    int64_t i = 0;
    while (i + 1 < sp->n && sp->stripe[i + 1].first_job <= v) i++;
    const lig_fwd_stripe *st = &sp->stripe[i];
    lig_unit x[LIG_FWD_MAX_ROWS];
    stripe_units(&p->pb->pr, st, x);
    if (st->slices == 1) {
        run_stripe(r, s, x, st->m, st->lo, st->hi, NULL);
        return;
    }
    const int64_t c = v - st->first_job, k0 = st->lo + c * st->slice_keys;
    const int64_t k1 = st->hi - k0 < st->slice_keys ? st->hi : k0 + st->slice_keys - 1;
    const int64_t slot = st->slot + c * st->m;
    slice_floor *floor = (slice_floor *)(void *)(s + p->scratch.floor);
    if (floor->stripe != i) *floor = (slice_floor){.stripe = i};
    const slice_out out = {.cand = (lig_candidate *)(void *)(r->ws + p->scratch.cand) + slot * p->heap_cap,
                           .count = (int64_t *)(void *)(r->ws + p->scratch.count) + slot,
                           .kept = p->heap_cap,
                           .floor = floor};
    run_stripe(r, s, x, st->m, k0, k1, &out);
}

/* Job v of the pieces walk, piece v of a schedule (the logits alone): the global cache blocks
 * piece_start[v] .. piece_start[v + 1] - 1, i.e. for each batch they reach a range of its keys,
 * which every stripe of the batch's rows and every key head scores (each row its own part of it)
 * and writes. */
static void run_piece(const fwd_run *r, char *s, int64_t v) {
    const lig_cpu_fwd_plan *p = r->p;
    const lig_fwd_problem *pb = p->pb;
    const lig_problem *pr = &pb->pr;
    const lig_fwd_schedule *sc = pb->schedule;
    const int64_t g0 = sc->start[v], g1 = sc->start[v + 1], bs = pb->paged->block_size, *first = sc->batch_block0;
    lig_unit x[LIG_FWD_MAX_ROWS];
    for (int64_t b = 0; b < pr->B && g0 < g1; b++) {
        if (first[b + 1] <= g0 || first[b] >= g1) continue;
        const int64_t k0 = ((g0 > first[b] ? g0 : first[b]) - first[b]) * bs;
        const int64_t k1 = ((g1 < first[b + 1] ? g1 : first[b + 1]) - first[b]) * bs - 1; /* <= lk[b] - 1 + bs - 1 */
        for (int64_t t0 = 0; t0 < pr->bt.lq[b]; t0 += p->ctx.rows)
            for (int64_t g = 0; g < pr->N2; g++) {
                const int64_t m = pr->bt.lq[b] - t0 < p->ctx.rows ? pr->bt.lq[b] - t0 : p->ctx.rows;
                for (int64_t i = 0; i < m; i++) x[i] = lig_unit_decode(pr, (pr->bt.row_prefix[b] + t0 + i) * pr->N2 + g);
                int64_t lo, hi;
                lig_fwd_rows_span(x, m, &lo, &hi);
                lo = lo > k0 ? lo : k0;
                hi = hi < k1 ? hi : k1;
                if (lo <= hi) run_stripe(r, s, x, m, lo, hi, NULL);
            }
    }
}

/* Job v of the merge: row v of the sliced stripes (in stripe order) takes the best of its slices'
 * candidates, offered slice after slice, i.e. in increasing key order, as the unsplit walk offers
 * them. */
static void run_merge(const fwd_run *r, char *s, int64_t v) {
    const lig_cpu_fwd_plan *p = r->p;
    const lig_problem *pr = &p->pb->pr;
    const lig_fwd_stripes *sp = &p->split;
    const lig_fwd_stripe *st = sp->stripe;
    for (;; st++) {
        if (st->slices > 1 && v < st->m) break;
        if (st->slices > 1) v -= st->m;
    }
    lig_unit x[LIG_FWD_MAX_ROWS];
    stripe_units(pr, st, x);
    const lig_unit *u = &x[v];
    const int64_t visible = u->hi >= u->lo ? u->hi - u->lo + 1 : 0;
    lig_topk top = lig_topk_start(s + p->scratch.topk, p->heap_cap, visible < pr->K ? visible : pr->K);
    const lig_candidate *cand = (const lig_candidate *)(const void *)(r->ws + p->scratch.cand);
    const int64_t *count = (const int64_t *)(const void *)(r->ws + p->scratch.count);
    for (int64_t c = 0, slot = st->slot + v; c < st->slices; c++, slot += st->m)
        lig_topk_offer_candidates(&top, cand + slot * p->heap_cap, count[slot]);
    lig_topk_finish(&top);
    write_slots(p->pb, u, top.best, top.n);
}

typedef void (*job_fn)(const fwd_run *r, char *s, int64_t v);

/* Jobs 0 .. jobs - 1 of one kind, taken in turn by the threads from one counter. */
typedef struct job_walk {
    fwd_run *r;
    job_fn fn;
    int64_t jobs;
    bool engine; /* the engine's per-thread setup around them */
    atomic_llong next;
} job_walk;

static void jobs_task(void *ctx, int tid, int n) {
    job_walk *wk = ctx;
    (void)n;
    const lig_cpu_fwd_plan *p = wk->r->p;
    char *s = wk->r->ws + p->scratch.threads_at + (uint64_t)tid * p->scratch.total;
    if (wk->engine && p->engine->thread_begin) p->engine->thread_begin(&p->ctx);
    *(slice_floor *)(void *)(s + p->scratch.floor) = (slice_floor){.stripe = -1};
    for (;;) {
        const int64_t v = atomic_fetch_add_explicit(&wk->next, 1, memory_order_relaxed);
        if (v >= wk->jobs) break;
        wk->fn(wk->r, s, v);
    }
    if (wk->engine && p->engine->thread_end) p->engine->thread_end(&p->ctx);
}

static void run_jobs(fwd_run *r, job_fn fn, int64_t jobs, bool engine, double flops) {
    const lig_cpu_fwd_plan *p = r->p;
    job_walk wk = {.r = r, .fn = fn, .jobs = jobs, .engine = engine};
    atomic_init(&wk.next, 0);
    (engine && p->own_threads ? lig_parallel_own_threads : lig_parallel)(lig_threads_for(flops, p->threads), jobs_task,
                                                                        &wk);
}

/* A paged cache's table entries for the blocks that hold each batch's keys. */
static void scan_table(void *ctx, int64_t b0, int64_t b1, lig_failure *first) {
    const lig_fwd_problem *pb = ctx;
    const lig_paged_keys *t = pb->paged;
    const int64_t bs = t->block_size;
    for (int64_t b = b0; b < b1; b++) {
        const int64_t lk = pb->pr.bt.lk[b];
        const int64_t used = bs ? lk / bs + (lk % bs != 0) : 0; /* lk + bs - 1 may pass 2^63 */
        for (int64_t j = 0; j < used; j++) {
            const int64_t block = lig_table_block(t, b, j);
            if (block < 0 || block >= t->num_blocks) {
                *first = (lig_failure){.item = b, .slot = j, .int_value = block};
                return;
            }
        }
    }
}

/* Before anything is written: every table entry a unit reads names a block of the cache. Rows
 * with key ranges read the blocks of their ranges, the others those of their batch's keys. */
static lig_status check_table(const lig_cpu_fwd_plan *p) {
    const lig_fwd_problem *pb = p->pb;
    const lig_problem *pr = &pb->pr;
    const int64_t num_blocks = pb->paged->num_blocks;
    if (pb->ranges) {
        const lig_failure bad = lig_logits_scan_table(pb, p->threads);
        if (bad.item == INT64_MAX) return LIG_SUCCESS;
        const int64_t b = lig_batch_of_row(pr, bad.item), t = bad.item - pr->bt.row_prefix[b];
        return lig_fail(LIG_ERR_PARAM_INVALID,
                        "block_table: expected block numbers in [0, %lld) (num_blocks) for the blocks that hold the "
                        "keys [%lld, %lld) of row %lld of batch %lld, got %lld at [%lld,%lld]",
                        (long long)num_blocks, (long long)pb->ranges->lo[bad.item], (long long)pb->ranges->hi[bad.item] + 1,
                        (long long)t, (long long)b, (long long)bad.int_value, (long long)b, (long long)bad.slot);
    }
    const lig_failure bad = lig_first_failure(pr->B, lig_threads_for(1.0 * (double)pr->B * (double)pb->paged->blocks, p->threads),
                                              scan_table, (void *)pb);
    if (bad.item == INT64_MAX) return LIG_SUCCESS;
    return lig_fail(LIG_ERR_PARAM_INVALID,
                    "block_table: expected block numbers in [0, %lld) (num_blocks) for the blocks that hold the %lld "
                    "keys of batch %lld, got %lld at [%lld,%lld]",
                    (long long)num_blocks, (long long)pr->bt.lk[bad.item], (long long)bad.item,
                    (long long)bad.int_value, (long long)bad.item, (long long)bad.slot);
}

/* ---- the walkers: the plan picks one (indexer_plan.h) ---------------------------------------- */

static double walk_flops(const lig_problem *pr) {
    return 2.0 * (double)pr->units * (double)pr->S2 * (double)(pr->G * pr->D);
}

static void walk_none(fwd_run *r) { (void)r; }

/* D, N1 or the keys are 0: every visible score is exactly 0. */
static void walk_trivial(fwd_run *r) {
    const lig_fwd_problem *pb = r->p->pb;
    if (pb->sparse) {
        lig_sparse_trivial(pb);
        return;
    }
    for (int64_t u = 0; u < pb->pr.units; u++) run_trivial_unit(pb, u);
    if (pb->logits) lig_logits_zero(pb);
}

/* A caller's schedule (the logits alone): its pieces are the jobs. */
static void walk_pieces(fwd_run *r) { run_jobs(r, run_piece, r->p->pb->schedule->pieces, true, walk_flops(&r->p->pb->pr)); }

static void walk_stripes(fwd_run *r) {
    const lig_problem *pr = &r->p->pb->pr;
    const int64_t R = r->p->stripe_rows, jobs = (pr->units / pr->N2 + R - 1) / R * pr->N2;
    run_jobs(r, run_rows_job, jobs, true, walk_flops(pr));
}

static void walk_split(fwd_run *r) {
    const lig_cpu_fwd_plan *p = r->p;
    const lig_fwd_stripes *sp = &p->split;
    run_jobs(r, run_slice, sp->jobs, true, walk_flops(&p->pb->pr));
    /* the merge reads what every slice kept: after the join above */
    if (sp->merge_rows > 0 && p->pb->has_topk) run_jobs(r, run_merge, sp->merge_rows, false, 4e6 * (double)sp->merge_rows);
}

static void run_sparse_job(const fwd_run *r, char *s, int64_t v) { lig_sparse_job(r->p, s, v); }

/* The sparse logits: the chosen blocks' keys of each row (flops counted over every column). */
static void walk_sparse(fwd_run *r) {
    const lig_fwd_problem *pb = r->p->pb;
    const double flops = 2.0 * (double)pb->pr.units * (double)pb->sparse->cols * (double)(pb->pr.G * pb->pr.D);
    run_jobs(r, run_sparse_job, lig_sparse_jobs(r->p), true, flops);
}

static void (*const walkers[])(fwd_run *r) = {
    [LIG_FWD_WALK_NONE] = walk_none,     [LIG_FWD_WALK_TRIVIAL] = walk_trivial, [LIG_FWD_WALK_PIECES] = walk_pieces,
    [LIG_FWD_WALK_STRIPES] = walk_stripes, [LIG_FWD_WALK_SPLIT] = walk_split, [LIG_FWD_WALK_SPARSE] = walk_sparse,
};

static lig_status run_indexer(void *plan, void *workspace, void *stream) {
    const lig_cpu_fwd_plan *p = plan;
    const lig_fwd_problem *pb = p->pb;
    const lig_problem *pr = &pb->pr;
    (void)stream;
    lig_status st;
    if (pb->paged && (st = pb->sparse ? lig_sparse_check_table(p) : check_table(p)) != LIG_SUCCESS) return st;
    /* rows that no unit writes: past each batch's valid length (BSND) or the last end (TND) */
    if (pb->has_topk) lig_fill_query_rows(pr, &pb->idx, pr->N2, pr->K, -1.0, false);
    if (pb->has_values) lig_fill_query_rows(pr, &pb->val, pr->N2, pr->K, -INFINITY, false);
    if (pb->logits && pb->logits->clean) lig_logits_clean(pb, p->threads);
    fwd_run r = {.p = p, .ws = lig_ws_base(workspace)};
    walkers[p->walk](&r);
    return LIG_SUCCESS;
}

lig_status lig_cpu_run_indexer(void *plan, void *workspace, void *stream) {
    return lig_fp_mode_run(run_indexer, plan, workspace, stream);
}

/* The indexer's dense softmax log-sum-exp on the CPU (docs/contract.md 2.7): the forward's walk
 * over stripes (a few rows of one key head, indexer.c), each stripe scoring blocks of keys with the
 * forward's engine, so that every score is the forward's to the bit; where the forward offers a
 * block to each row's top-k, this folds it into the row's online log-sum-exp. A row reads the
 * blocks of its own visible prefix, from key 0 in key order, the block length fixed by the
 * engine: its value depends on nothing else, so the output is the same for every thread count.
 * Nothing of size S1 x S2 is held. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>

#include "backends/cpu/operators/dense_softmax_lse_plan.h"
#include "backends/cpu/operators/fill.h"
#include "backends/cpu/operators/plan_alloc.h"
#include "backends/cpu/runtime/fp_mode.h"
#include "backends/cpu/runtime/threadpool.h"
#include "core/error.h"
#include "core/settings.h"
#include "core/workspace.h"

/* ---- the online log-sum-exp of one row ---------------------------------------------------- */

/* The running max m (fp32, a score) and sum s = sum exp(x - m) (double) of the finite scores
 * so far; NaN and +inf scores only set flags (contract 2.7: they decide the result alone). */
typedef struct lse_acc {
    float m;
    double s;
    bool nan, pinf;
} lse_acc;

static lse_acc lse_start(void) { return (lse_acc){.m = -INFINITY, .s = 0.0}; }

/* Folds scores x[0 .. n) in order: first the block's max, so that the sum is rescaled at most
 * once per block, then each term. -inf adds exactly 0. */
static void lse_fold(lse_acc *a, const float *x, int64_t n) {
    float bm = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        if (v != v) a->nan = true;
        else if (v == INFINITY) a->pinf = true;
        else if (v > bm) bm = v;
    }
    if (bm > a->m) {
        a->s *= exp((double)a->m - (double)bm); /* exp(-inf) = 0 while the sum is still empty */
        a->m = bm;
    }
    if (a->m == -INFINITY) return; /* only -inf, NaN or +inf so far: no finite term */
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        if (v == v && v != INFINITY && v != -INFINITY) a->s += exp((double)v - (double)a->m);
    }
}

/* m + log(s) rounded once to fp32; -inf when no term was added. */
static float lse_finish(const lse_acc *a) {
    if (a->nan) return NAN;
    if (a->pinf) return INFINITY;
    if (a->s == 0.0) return -INFINITY;
    return (float)((double)a->m + log(a->s));
}

/* ---- the walk ------------------------------------------------------------------------------ */

typedef struct lse_run {
    const lig_cpu_dense_lse_plan *p;
    char *ws;
    int64_t stripe_rows, jobs;
    atomic_llong next;
} lse_run;

static void store_lse(const lig_dense_lse_problem *pb, const lig_unit *x, float value) {
    *(float *)(void *)lig_q_row_ptr(&pb->lse, &pb->pr, x->b, x->t, x->g) = value;
}

/* A stripe: up to ctx.rows rows of one key head in consecutive rows of one batch (x[0 .. m)),
 * seeing n[i] entries each: the keys any of them sees go through the engine once per block. */
static void run_stripe(const lig_cpu_dense_lse_plan *p, char *s, const lig_unit *x, const int64_t *n, int64_t m) {
    const lig_dense_lse_problem *pb = p->pb;
    const lig_problem *pr = &pb->pr;
    const char **key = (const char **)(void *)(s + p->key_at);
    const char **q = (const char **)(void *)(s + p->q_at), **w = q + p->ctx.rows;
    float *score = (float *)(void *)(s + p->score_at);
    lse_acc acc[LIG_FWD_MAX_ROWS];
    int64_t longest = 0;
    for (int64_t i = 0; i < m; i++) {
        const int64_t h0 = x[i].g * pr->G;
        q[i] = lig_q_row_ptr(&pb->q, pr, x[i].b, x[i].t, h0);
        w[i] = lig_q_row_ptr(&pb->w, pr, x[i].b, x[i].t, h0);
        acc[i] = lse_start();
        if (n[i] > longest) longest = n[i];
    }
    const int64_t block = p->ctx.block;
    if (longest > 0) {
        p->engine->begin_rows(&p->ctx, s + p->engine_at, m, q, w, NULL);
        for (int64_t s0 = 0; s0 < longest; s0 += block) {
            const int64_t nb = longest - s0 < block ? longest - s0 : block;
            for (int64_t i = 0; i < nb; i++) key[i] = lig_k_row_ptr(&pb->k, pr, x[0].b, s0 + i, x[0].g);
            p->engine->score_block(&p->ctx, s + p->engine_at, m, nb, key, NULL, score);
            for (int64_t i = 0; i < m; i++) {
                const int64_t e = n[i] - s0 < nb ? n[i] - s0 : nb; /* the row's keys in this block */
                if (e > 0) lse_fold(&acc[i], score + i * block, e);
            }
        }
    }
    for (int64_t i = 0; i < m; i++) store_lse(pb, &x[i], lse_finish(&acc[i]));
}

/* D == 0: every visible score is exactly 0, so a row's lse is log(n), as the fold computes it. */
static void run_trivial_rows(const lig_cpu_dense_lse_plan *p, const lig_unit *x, const int64_t *n, int64_t m) {
    for (int64_t i = 0; i < m; i++) {
        lse_acc a = lse_start();
        if (n[i] > 0) a = (lse_acc){.m = 0.0f, .s = (double)n[i]};
        store_lse(p->pb, &x[i], lse_finish(&a));
    }
}

/* Job v: the valid rows [v / N2 * R, ...) of key head v % N2, one stripe per batch they reach. */
static void run_job(const lse_run *r, char *s, int64_t v) {
    const lig_cpu_dense_lse_plan *p = r->p;
    const lig_dense_lse_problem *pb = p->pb;
    const lig_problem *pr = &pb->pr;
    const int64_t R = r->stripe_rows, rows_total = pr->units / pr->N2, g = v % pr->N2, r0 = v / pr->N2 * R;
    const int64_t r1 = r0 + R < rows_total ? r0 + R : rows_total;
    lig_unit x[LIG_FWD_MAX_ROWS];
    int64_t n[LIG_FWD_MAX_ROWS], m = 0;
    for (int64_t row = r0; row <= r1; row++) {
        const lig_unit u = row < r1 ? lig_unit_decode(pr, row * pr->N2 + g) : (lig_unit){0};
        if (m > 0 && (row == r1 || u.b != x[0].b)) {
            if (p->trivial) run_trivial_rows(p, x, n, m);
            else run_stripe(p, s, x, n, m);
            m = 0;
        }
        if (row < r1) {
            n[m] = lig_dense_lse_visible(pb, u.b, u.t);
            x[m++] = u;
        }
    }
}

static void jobs_task(void *ctx, int tid, int nthreads) {
    lse_run *r = ctx;
    (void)nthreads;
    const lig_cpu_dense_lse_plan *p = r->p;
    char *s = r->ws ? r->ws + (uint64_t)tid * p->scratch : NULL; /* the trivial walk has no workspace */
    const bool engine = !p->trivial;
    if (engine && p->engine->thread_begin) p->engine->thread_begin(&p->ctx);
    for (;;) {
        const int64_t v = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed);
        if (v >= r->jobs) break;
        run_job(r, s, v);
    }
    if (engine && p->engine->thread_end) p->engine->thread_end(&p->ctx);
}

static lig_status run_lse(void *plan, void *workspace, void *stream) {
    const lig_cpu_dense_lse_plan *p = plan;
    const lig_dense_lse_problem *pb = p->pb;
    const lig_problem *pr = &pb->pr;
    (void)stream;
    /* rows that no stripe writes: past each batch's valid length (BSND) or the last end (TND) */
    lig_fill_query_rows(pr, &pb->lse, pr->N2, 1, -INFINITY, false);
    if (pr->units == 0) return LIG_SUCCESS;
    lse_run r = {.p = p, .ws = p->workspace_size ? lig_ws_base(workspace) : NULL, .stripe_rows = p->ctx.rows};
    r.jobs = (pr->units / pr->N2 + r.stripe_rows - 1) / r.stripe_rows * pr->N2;
    atomic_init(&r.next, 0);
    double flops = 0; /* the scores of the visible keys, as the forward counts them */
    for (int64_t b = 0; b < pr->B; b++) flops += (double)pr->bt.lq[b] * (double)pr->bt.lk[b];
    flops *= 2.0 * (double)pr->N1 * (double)pr->D;
    const int threads = p->trivial ? 1 : lig_threads_for(flops, p->threads);
    (!p->trivial && p->own_threads ? lig_parallel_own_threads : lig_parallel)(threads, jobs_task, &r);
    return LIG_SUCCESS;
}

static lig_status run_dense_lse(void *plan, void *workspace, void *stream) {
    return lig_fp_mode_run(run_lse, plan, workspace, stream);
}

/* ---- the plan ------------------------------------------------------------------------------- */

lig_status lig_cpu_plan_dense_indexer_softmax_lse(const lig_dense_lse_problem *pb, lig_backend_plan *out) {
    const lig_kernel_set *ks;
    lig_status st;
    lig_cpu_dense_lse_plan *p = lig_cpu_plan_alloc(sizeof *p, &ks, &st);
    if (!p) return st;
    p->pb = pb;
    const lig_problem *pr = &pb->pr;
    /* the forward's stripe (about 32 columns, rows x heads) and its engine for these inputs */
    const int64_t rows = lig_fwd_rows_for(pr->G);
    p->engine = lig_fwd_float_engine_for(ks, pb->q.dtype, rows, pr->G);
    p->own_threads = lig_fwd_engine_own_threads(p->engine, ks);
    p->ctx = (lig_fwd_ctx){.ks = ks, .G = pr->G, .D = pr->D, .rows = rows, .dtype = pb->q.dtype, .w_dtype = pb->w.dtype,
                           .q_head = pb->q.head, .q_dim = pb->q.dim, .w_head = pb->w.head, .k_dim = pb->k.dim};
    p->engine->configure(&p->ctx);
    const int threads = lig_settings_threads();
    p->threads = threads < 1 ? 1 : threads;
    p->trivial = pr->D == 0;
    if (pr->units > 0 && !p->trivial) { /* a zero extent takes no scratch (contract 6.4) */
        uint64_t at = 0;
        const uint64_t nb = (uint64_t)p->ctx.block, engine = p->engine->scratch_bytes(&p->ctx);
        p->key_at = lig_ws_take(&at, lig_size_mul(sizeof(const char *), nb));
        p->q_at = lig_ws_take(&at, 2 * sizeof(const char *) * (uint64_t)rows);
        p->score_at = lig_ws_take(&at, lig_size_mul3(sizeof(float), nb, (uint64_t)rows));
        p->engine_at = lig_ws_take(&at, engine);
        p->scratch = at;
        char detail[96];
        snprintf(detail, sizeof detail, "%lld heads per key head, D = %lld", (long long)pr->G, (long long)pr->D);
        if ((st = lig_cpu_plan_thread_workspace(at, p->threads, detail, &p->workspace_size)) != LIG_SUCCESS) {
            lig_cpu_plan_free(p);
            return st;
        }
    }
    *out = (lig_backend_plan){.plan = p, .workspace_size = p->workspace_size,
                              .kernel_set = p->trivial ? ks->name : p->engine->kernels_name(&p->ctx),
                              .run = run_dense_lse, .free = lig_cpu_plan_free};
    return LIG_SUCCESS;
}

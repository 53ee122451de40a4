/* LightningIndexerGrad phase 2 (SPEC section 1.2).
 *
 * Work is split into units, one per (batch, valid query row, key head), taken by the threads
 * in order from a shared counter. A unit's dQ and dW belong to it alone, so they are
 * accumulated in its scratch and stored once. dK is a scatter-add across units, accumulated
 * in fp32 in the workspace:
 *   deterministic: each unit writes the dK contribution of every counted slot into a ring of
 *     unit buffers; buffers are committed (added into the accumulator) strictly in unit order,
 *     slot by slot, by whichever thread finds the next unit ready. Every dK sum thus has one
 *     order, fixed by the input alone, whatever the thread count, and no thread ever waits
 *     at a barrier: only when the ring is full, which it rarely is (2 buffers per thread).
 *     A unit with more counted slots than a buffer holds waits for its turn and adds directly.
 *   non-deterministic: each unit adds its contributions straight into the accumulator under
 *     a spin lock per key row: same updates, order left to the scheduler.
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "api/error.h"
#include "api/executor.h"
#include "convert/dtype_convert.h"
#include "operators/indexer_grad_internal.h"
#include "runtime/cpu_dispatch.h"
#include "runtime/threadpool.h"

typedef enum emit_mode {
    EMIT_RING,   /* deterministic: contributions go to the unit's ring buffer */
    EMIT_LOCKED, /* non-deterministic: add under the key row's lock */
    EMIT_DIRECT  /* deterministic, a unit larger than a ring buffer: add in its turn */
} emit_mode;

typedef struct grad_run {
    const lig_indexer_grad_plan *p;
    const lig_kernels *kr;
    char *ws; /* aligned workspace base */
    float *acc;
    atomic_llong next_unit;
    /* non-deterministic */
    atomic_uint *locks;
    /* deterministic: the commit ring */
    float *ring;              /* [ring_units][unit_cap][D] contributions */
    int64_t *ring_key;        /* [ring_units][unit_cap] accumulator rows */
    int64_t *ring_count;      /* [ring_units] slots written */
    atomic_llong *ring_ready; /* [ring_units] the unit whose contributions a buffer holds */
    atomic_llong committed;   /* units [0, committed) are in the accumulator */
    atomic_int committing;    /* held by the one thread adding buffers */
} grad_run;

static char *scratch_of(const grad_run *r, int tid) {
    return r->ws + r->p->ws.scratch + (uint64_t)tid * r->p->ws.scratch_stride;
}

/* One step of a wait loop: a pause while the wait is short, then giving the core away, so
 * that a thread we wait for can run when the machine has more threads than cores. */
static inline void backoff(int *spins) {
    if (++*spins > 64) {
        sched_yield();
        return;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void lock_row(atomic_uint *l) {
    int spins = 0;
    while (atomic_exchange_explicit(l, 1u, memory_order_acquire)) {
        while (atomic_load_explicit(l, memory_order_relaxed)) backoff(&spins);
    }
}

static void unlock_row(atomic_uint *l) { atomic_store_explicit(l, 0u, memory_order_release); }

/* Multiplies one block of nb gathered slots and emits its dK contributions (into the ring
 * from slot `ring_slot` on, in EMIT_RING mode). */
static void flush_block(const grad_run *r, const lig_grad_scratch_layout *L, char *s, int64_t nb, emit_mode mode,
                        int64_t ring_slot) {
    const lig_indexer_grad_plan *p = r->p;
    const int64_t G = p->pr.G, D = p->pr.D;
    const float *q = (const float *)(s + L->q), *qt = (const float *)(s + L->qt), *kp = (const float *)(s + L->kp);
    float *dq = (float *)(s + L->dq), *at = (float *)(s + L->a), *dw = (float *)(s + L->dw);
    const float *w = (const float *)(s + L->w), *dy = (const float *)(s + L->dy);
    const int64_t *key = (const int64_t *)(s + L->key);
    const lig_sgemm_fn sgemm = r->kr->sgemm;

    sgemm(nb, G, D, kp, D, 1, qt, G, at, G, false); /* S^T[n][h] = k_n . q_h */
    r->kr->grad_gate(at, nb, G, w, dy, dw); /* strict: the ReLU's gradient at 0 is 0 */
    sgemm(G, D, nb, at, 1, G, kp, D, dq, D, true); /* dQ[h] += sum_n A[h][n] k_n */
    float *contrib = mode == EMIT_RING ? r->ring + ring_slot * D : (float *)(s + L->tile);
    sgemm(nb, D, G, at, G, 1, q, D, contrib, D, false); /* C[n] = sum_h A[h][n] q_h */
    if (mode == EMIT_RING) {
        memcpy(r->ring_key + ring_slot, key, sizeof(int64_t) * (size_t)nb);
        return;
    }
    for (int64_t n = 0; n < nb; n++) {
        if (mode == EMIT_LOCKED) lock_row(&r->locks[key[n]]);
        r->kr->add_row(r->acc + key[n] * D, contrib + n * D, D);
        if (mode == EMIT_LOCKED) unlock_row(&r->locks[key[n]]);
    }
}

/* Runs unit u in the given scratch; in EMIT_RING mode its contributions start at ring slot
 * `ring_at`. Returns the slots it counted. */
static int64_t run_unit(const grad_run *r, char *s, int64_t u, emit_mode mode, int64_t ring_at) {
    const lig_indexer_grad_plan *p = r->p;
    const lig_kernels *kr = r->kr;
    const lig_grad_scratch_layout L = lig_grad_scratch_layout_for(p->pr.G, p->pr.D);
    const int64_t G = p->pr.G, D = p->pr.D;
    const lig_unit x = lig_unit_decode(&p->pr, u);
    float *q = (float *)(s + L.q), *qt = (float *)(s + L.qt), *dq = (float *)(s + L.dq), *kp = (float *)(s + L.kp);
    float *w = (float *)(s + L.w), *dw = (float *)(s + L.dw), *dy = (float *)(s + L.dy);
    int64_t *key = (int64_t *)(s + L.key);

    for (int64_t i = 0; i < G; i++) {
        const int64_t h = x.g * G + i;
        kr->load_row(p->q.dtype, lig_q_row_ptr(&p->q, &p->pr, x.b, x.t, h), p->q.dim, D, q + i * D);
        w[i] = lig_load_float(p->w.dtype, lig_q_row_ptr(&p->w, &p->pr, x.b, x.t, h));
        dw[i] = 0.0f;
    }
    for (int64_t i = 0; i < G; i++)
        for (int64_t d = 0; d < D; d++) qt[d * G + i] = q[i * D + d];
    memset(dq, 0, sizeof(float) * (size_t)(G * D));

    const char *ip = lig_q_row_ptr(&p->idx, &p->pr, x.b, x.t, x.g);
    const char *yp = lig_q_row_ptr(&p->dy, &p->pr, x.b, x.t, x.g);
    const int64_t istep = p->idx.dim * (int64_t)p->idx.esize, ystep = p->dy.dim * (int64_t)p->dy.esize;
    const int64_t acc_row0 = (x.b * p->pr.key_batch + p->pr.bt.k_base[x.b]) * p->pr.N2 + x.g;
    int64_t nb = 0, emitted = 0;
    for (int64_t j = 0; j < p->pr.K; j++, ip += istep, yp += ystep) {
        const int64_t sk = lig_load_int(p->idx.dtype, ip);
        if (sk < x.lo || sk > x.hi) continue; /* padding (-1) or outside the visible range */
        kr->load_row(p->k.dtype, lig_k_row_ptr(&p->k, &p->pr, x.b, sk, x.g), p->k.dim, D, kp + nb * D);
        dy[nb] = lig_load_float(p->dy.dtype, yp);
        key[nb] = acc_row0 + sk * p->pr.N2;
        if (++nb == LIG_GRAD_BLOCK) {
            flush_block(r, &L, s, nb, mode, ring_at + emitted);
            emitted += nb;
            nb = 0;
        }
    }
    if (nb) flush_block(r, &L, s, nb, mode, ring_at + emitted);
    emitted += nb;

    for (int64_t i = 0; i < G; i++) {
        const int64_t h = x.g * G + i;
        kr->store_row(dq + i * D, D, p->dq.dtype, lig_q_row_ptr(&p->dq, &p->pr, x.b, x.t, h), p->dq.dim);
        lig_store_float(p->dw.dtype, lig_q_row_ptr(&p->dw, &p->pr, x.b, x.t, h), dw[i]);
    }
    return emitted;
}

/* Adds every ready buffer into the accumulator, in unit order, unless another thread is
 * already doing so. Rechecks after letting go, so a unit finished meanwhile is not left
 * waiting for the next caller. */
static void try_commit(grad_run *r) {
    const lig_indexer_grad_plan *p = r->p;
    const int64_t D = p->pr.D;
    for (;;) {
        if (atomic_exchange_explicit(&r->committing, 1, memory_order_acquire)) return;
        int64_t c = atomic_load_explicit(&r->committed, memory_order_relaxed);
        while (c < p->pr.units && atomic_load_explicit(&r->ring_ready[c % p->ring_units], memory_order_acquire) == c) {
            const int64_t b = c % p->ring_units, n = r->ring_count[b];
            const float *src = r->ring + b * p->unit_cap * D;
            const int64_t *key = r->ring_key + b * p->unit_cap;
            for (int64_t i = 0; i < n; i++) r->kr->add_row(r->acc + key[i] * D, src + i * D, D);
            atomic_store_explicit(&r->committed, ++c, memory_order_release);
        }
        atomic_store_explicit(&r->committing, 0, memory_order_release);
        if (c >= p->pr.units || atomic_load_explicit(&r->ring_ready[c % p->ring_units], memory_order_acquire) != c)
            return;
    }
}

/* Waits (helping to commit) until units [0, u) are in the accumulator. */
static void wait_committed(grad_run *r, int64_t u) {
    int spins = 0;
    while (atomic_load_explicit(&r->committed, memory_order_acquire) < u) {
        try_commit(r);
        backoff(&spins);
    }
}

/* Counted slots of unit u, to tell whether it fits a ring buffer. */
static int64_t counted_slots(const lig_indexer_grad_plan *p, int64_t u) {
    const lig_unit x = lig_unit_decode(&p->pr, u);
    const char *ip = lig_q_row_ptr(&p->idx, &p->pr, x.b, x.t, x.g);
    const int64_t step = p->idx.dim * (int64_t)p->idx.esize;
    int64_t n = 0;
    for (int64_t j = 0; j < p->pr.K; j++, ip += step) {
        const int64_t sk = lig_load_int(p->idx.dtype, ip);
        n += sk >= x.lo && sk <= x.hi;
    }
    return n;
}

static void deterministic_task(void *ctx, int tid, int n) {
    grad_run *r = ctx;
    const lig_indexer_grad_plan *p = r->p;
    (void)n;
    char *s = scratch_of(r, tid);
    for (;;) {
        const int64_t u = atomic_fetch_add_explicit(&r->next_unit, 1, memory_order_relaxed);
        if (u >= p->pr.units) break;
        if (p->pr.K > p->unit_cap && counted_slots(p, u) > p->unit_cap) {
            /* too large for a buffer: in its turn, add directly (nobody commits past u meanwhile,
             * since u's buffer is never marked ready) */
            wait_committed(r, u);
            run_unit(r, s, u, EMIT_DIRECT, 0);
            atomic_store_explicit(&r->committed, u + 1, memory_order_release);
        } else {
            const int64_t b = u % p->ring_units;
            wait_committed(r, u - p->ring_units + 1); /* buffer b's previous unit is committed */
            r->ring_count[b] = run_unit(r, s, u, EMIT_RING, b * p->unit_cap);
            atomic_store_explicit(&r->ring_ready[b], u, memory_order_release);
        }
        try_commit(r);
    }
    wait_committed(r, p->pr.units); /* leaves only when every unit is in */
}

static void nondeterministic_task(void *ctx, int tid, int n) {
    grad_run *r = ctx;
    (void)n;
    char *s = scratch_of(r, tid);
    for (;;) {
        const int64_t u = atomic_fetch_add_explicit(&r->next_unit, 1, memory_order_relaxed);
        if (u >= r->p->pr.units) break;
        run_unit(r, s, u, EMIT_LOCKED, 0);
    }
}

/* Zero-fills rows [r0, r1) of batch b of a query- or key-row view (heads x dims each). */
static void zero_rows(const lig_view4 *v, int64_t b, int64_t r0, int64_t r1, int64_t heads, int64_t dims) {
    if (heads == 0 || dims == 0) return; /* no elements: the view's data may be NULL */
    for (int64_t t = r0; t < r1; t++)
        for (int64_t h = 0; h < heads; h++) {
            char *e = v->data + (size_t)(b * v->batch + t * v->row + h * v->head) * v->esize;
            for (int64_t d = 0; d < dims; d++) lig_store_float(v->dtype, e + (size_t)(d * v->dim) * v->esize, 0.0f);
        }
}

/* dQ and dW of every row that no unit writes (all rows when nothing is computed). */
static void zero_query_rows(const lig_indexer_grad_plan *p, bool all) {
    if (p->pr.tnd) {
        const int64_t first = all ? 0 : p->pr.bt.row_prefix[p->pr.B]; /* TND valid rows are [0, aq[B-1]) */
        zero_rows(&p->dq, 0, first, p->pr.S1, p->pr.N1, p->pr.D);
        zero_rows(&p->dw, 0, first, p->pr.S1, p->pr.N1, 1);
        return;
    }
    for (int64_t b = 0; b < p->pr.B; b++) {
        const int64_t first = all ? 0 : p->pr.bt.lq[b];
        zero_rows(&p->dq, b, first, p->pr.S1, p->pr.N1, p->pr.D);
        zero_rows(&p->dw, b, first, p->pr.S1, p->pr.N1, 1);
    }
}

/* Key rows of the output: BSND rows are (b, s) with s < S2, TND rows are global. */
static char *dk_row_ptr(const lig_indexer_grad_plan *p, int64_t row, int64_t g) {
    const lig_view4 *v = &p->dk;
    const int64_t b = p->pr.tnd ? 0 : row / p->pr.S2, s = p->pr.tnd ? row : row - b * p->pr.S2;
    return v->data + (size_t)(b * v->batch + s * v->row + g * v->head) * v->esize;
}

static void zero_acc_task(void *ctx, int tid, int n) {
    const grad_run *r = ctx;
    const int64_t total = r->p->pr.key_rows * r->p->pr.N2 * r->p->pr.D;
    const int64_t a = total * tid / n, b = total * (tid + 1) / n;
    memset(r->acc + a, 0, sizeof(float) * (size_t)(b - a));
}

static void store_dk_task(void *ctx, int tid, int n) {
    const grad_run *r = ctx;
    const lig_indexer_grad_plan *p = r->p;
    const int64_t rows = p->pr.key_rows * p->pr.N2;
    for (int64_t i = rows * tid / n; i < rows * (tid + 1) / n; i++) {
        const int64_t row = i / p->pr.N2, g = i - row * p->pr.N2;
        r->kr->store_row(r->acc + i * p->pr.D, p->pr.D, p->dk.dtype, dk_row_ptr(p, row, g), p->dk.dim);
    }
}

static lig_status run_plan(const lig_indexer_grad_plan *p, void *workspace, uint64_t workspace_size, void *stream) {
    lig_status st = lig_check_run_args(workspace, workspace_size, p->ws.total, LIG_EXECUTOR_INDEXER_GRAD, stream);
    if (st != LIG_SUCCESS) return st;
    /* at most the threads the scratch exists for; few for a small problem */
    const int threads =
        lig_threads_for(6.0 * (double)p->pr.units * (double)p->pr.K * (double)(p->pr.G * p->pr.D), p->threads);

    grad_run r = {.p = p, .kr = lig_kernels_get()};
    if (p->empty) {
        st = lig_grad_check_indices(p, threads);
        if (st != LIG_SUCCESS) return st;
        zero_query_rows(p, true);
        for (int64_t row = 0; p->pr.D > 0 && row < p->pr.key_rows; row++)
            for (int64_t g = 0; g < p->pr.N2; g++) {
                char *e = dk_row_ptr(p, row, g);
                for (int64_t d = 0; d < p->pr.D; d++)
                    lig_store_float(p->dk.dtype, e + (size_t)(d * p->dk.dim) * p->dk.esize, 0.0f);
            }
        return LIG_SUCCESS;
    }

    r.ws = lig_ws_base(workspace);
    r.acc = (float *)(r.ws + p->ws.dk_acc);
    st = lig_grad_check_indices(p, threads);
    if (st != LIG_SUCCESS) return st; /* nothing has been written */

    zero_query_rows(p, false);
    lig_parallel(threads, zero_acc_task, &r);
    atomic_store(&r.next_unit, 0);
    if (p->deterministic) {
        r.ring = (float *)(r.ws + p->ws.ring);
        r.ring_key = (int64_t *)(r.ws + p->ws.ring_key);
        r.ring_count = (int64_t *)(r.ws + p->ws.ring_count);
        r.ring_ready = (atomic_llong *)(void *)(r.ws + p->ws.ring_ready);
        for (int64_t b = 0; b < p->ring_units; b++) atomic_init(&r.ring_ready[b], -1);
        atomic_init(&r.committed, 0);
        atomic_init(&r.committing, 0);
        lig_parallel(threads, deterministic_task, &r);
    } else {
        r.locks = (atomic_uint *)(void *)(r.ws + p->ws.locks);
        memset((void *)r.locks, 0, sizeof(uint32_t) * (size_t)(p->pr.key_rows * p->pr.N2));
        lig_parallel(threads, nondeterministic_task, &r);
    }
    lig_parallel(threads, store_dk_task, &r);
    return LIG_SUCCESS;
}

lig_status lig_indexer_grad(void *workspace, uint64_t workspace_size, lig_executor *executor, void *stream) {
    lig_status st;
    const lig_indexer_grad_plan *plan = lig_executor_plan(executor, LIG_EXECUTOR_INDEXER_GRAD, &st);
    if (plan) st = run_plan(plan, workspace, workspace_size, stream);
    lig_destroy_executor(executor); /* consumed, success or not */
    return st;
}

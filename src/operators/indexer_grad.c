/* LightningIndexerGrad phase 2 (SPEC section 1.2).
 *
 * Work is split into units, one per (batch, valid query row, key head). A unit's dQ and dW
 * belong to it alone, so they are accumulated in its scratch and stored once. dK is a
 * scatter-add across units, accumulated in fp32 in the workspace:
 *   deterministic: units run in waves of consecutive units; each unit writes the dK
 *     contribution of every counted slot into the wave's pool, then all threads add the pool
 *     into the accumulator in (unit, slot) order, each thread owning a column range. The
 *     order of every dK sum is therefore fixed by the input alone, whatever the threads.
 *   non-deterministic: each unit adds its contributions straight into the accumulator under
 *     a spin lock per key row: no wave barriers, same updates, order left to the scheduler.
 */
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
    EMIT_POOL,   /* deterministic wave: contributions go to the pool */
    EMIT_LOCKED, /* non-deterministic: add under the key row's lock */
    EMIT_DIRECT  /* a unit running alone: add directly */
} emit_mode;

typedef struct grad_run {
    const lig_indexer_grad_plan *p;
    const lig_kernels *kr;
    char *ws; /* aligned workspace base */
    float *acc;
    int64_t *unit_offset; /* deterministic: counted slots before each unit */
    float *pool;
    int64_t *pool_key;
    atomic_uint *locks;
    /* the current parallel step */
    int64_t u_begin, u_end, pool_base, pool_count;
    atomic_llong next_unit;
} grad_run;

static char *scratch_of(const grad_run *r, int tid) {
    return r->ws + r->p->ws.scratch + (uint64_t)tid * r->p->ws.scratch_stride;
}

static void lock_row(atomic_uint *l) {
    while (atomic_exchange_explicit(l, 1u, memory_order_acquire)) {
        while (atomic_load_explicit(l, memory_order_relaxed)) {
        }
    }
}

static void unlock_row(atomic_uint *l) { atomic_store_explicit(l, 0u, memory_order_release); }

/* Multiplies one block of nb gathered slots and emits its dK contributions (to the pool
 * from `pool_slot` on, in EMIT_POOL mode). */
static void flush_block(const grad_run *r, const lig_grad_scratch_layout *L, char *s, int64_t nb, emit_mode mode,
                        int64_t pool_slot) {
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
    float *contrib = mode == EMIT_POOL ? r->pool + pool_slot * D : (float *)(s + L->tile);
    sgemm(nb, D, G, at, G, 1, q, D, contrib, D, false); /* C[n] = sum_h A[h][n] q_h */
    if (mode == EMIT_POOL) {
        memcpy(r->pool_key + pool_slot, key, sizeof(int64_t) * (size_t)nb);
        return;
    }
    for (int64_t n = 0; n < nb; n++) {
        if (mode == EMIT_LOCKED) lock_row(&r->locks[key[n]]);
        r->kr->add_row(r->acc + key[n] * D, contrib + n * D, D);
        if (mode == EMIT_LOCKED) unlock_row(&r->locks[key[n]]);
    }
}

static void run_unit(const grad_run *r, char *s, int64_t u, emit_mode mode, int64_t pool_at) {
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
            flush_block(r, &L, s, nb, mode, pool_at + emitted);
            emitted += nb;
            nb = 0;
        }
    }
    if (nb) flush_block(r, &L, s, nb, mode, pool_at + emitted);

    for (int64_t i = 0; i < G; i++) {
        const int64_t h = x.g * G + i;
        kr->store_row(dq + i * D, D, p->dq.dtype, lig_q_row_ptr(&p->dq, &p->pr, x.b, x.t, h), p->dq.dim);
        lig_store_float(p->dw.dtype, lig_q_row_ptr(&p->dw, &p->pr, x.b, x.t, h), dw[i]);
    }
}

/* Threads take units [u_begin, u_end) one at a time: rows differ in cost (causal masks),
 * and which thread runs a unit never changes a result. */
static void units_task(void *ctx, int tid, int n) {
    grad_run *r = ctx;
    (void)n;
    char *s = scratch_of(r, tid);
    const emit_mode mode = r->p->deterministic ? EMIT_POOL : EMIT_LOCKED;
    for (;;) {
        const int64_t u = r->u_begin + atomic_fetch_add_explicit(&r->next_unit, 1, memory_order_relaxed);
        if (u >= r->u_end) break;
        run_unit(r, s, u, mode, mode == EMIT_POOL ? r->unit_offset[u] - r->pool_base : 0);
    }
}

/* Adds the wave's pool into the accumulator in pool order; thread tid owns a column range. */
static void apply_pool_task(void *ctx, int tid, int n) {
    const grad_run *r = ctx;
    const int64_t D = r->p->pr.D, chunks = (D + 15) / 16;
    const int64_t c0 = chunks * tid / n * 16, c1m = chunks * (tid + 1) / n * 16, c1 = c1m < D ? c1m : D;
    if (c0 >= c1) return;
    for (int64_t i = 0; i < r->pool_count; i++)
        r->kr->add_row(r->acc + r->pool_key[i] * D + c0, r->pool + i * D + c0, c1 - c0);
}

static void run_deterministic(grad_run *r, int threads) {
    const lig_indexer_grad_plan *p = r->p;
    int64_t *off = r->unit_offset;
    for (int64_t u = 0; u < p->pr.units; u++) off[u + 1] += off[u]; /* counts -> prefix */
    const int64_t C = p->pool_slots;
    const int64_t apply_threads = (p->pr.D + 15) / 16 < threads ? (p->pr.D + 15) / 16 : threads;
    int64_t u = 0;
    while (u < p->pr.units) {
        if (off[u + 1] - off[u] > C) { /* a unit larger than a wave runs alone, in slot order */
            run_unit(r, scratch_of(r, 0), u, EMIT_DIRECT, 0);
            u++;
            continue;
        }
        /* the wave: the most consecutive units whose slots fit the pool */
        int64_t lo = u + 1, hi = p->pr.units;
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo + 1) / 2;
            if (off[mid] - off[u] <= C) lo = mid;
            else hi = mid - 1;
        }
        r->u_begin = u;
        r->u_end = lo;
        r->pool_base = off[u];
        r->pool_count = off[lo] - off[u];
        atomic_store(&r->next_unit, 0);
        lig_parallel(threads, units_task, r);
        if (r->pool_count) lig_parallel((int)apply_threads, apply_pool_task, r);
        u = lo;
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
    int threads = lig_get_num_threads();
    if (threads > p->threads) threads = p->threads; /* scratch exists for this many */

    grad_run r = {.p = p, .kr = lig_kernels_get()};
    if (p->empty) {
        st = lig_grad_check_indices(p, NULL, threads);
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
    r.unit_offset = (int64_t *)(r.ws + p->ws.unit_offset);
    r.unit_offset[0] = 0;
    st = lig_grad_check_indices(p, r.unit_offset + 1, threads);
    if (st != LIG_SUCCESS) return st; /* nothing has been written */

    zero_query_rows(p, false);
    lig_parallel(threads, zero_acc_task, &r);
    if (p->deterministic) {
        r.pool = (float *)(r.ws + p->ws.pool);
        r.pool_key = (int64_t *)(r.ws + p->ws.pool_key);
        run_deterministic(&r, threads);
    } else {
        r.locks = (atomic_uint *)(void *)(r.ws + p->ws.locks);
        memset((void *)r.locks, 0, sizeof(uint32_t) * (size_t)(p->pr.key_rows * p->pr.N2));
        r.u_begin = 0;
        r.u_end = p->pr.units;
        atomic_store(&r.next_unit, 0);
        lig_parallel(threads, units_task, &r);
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

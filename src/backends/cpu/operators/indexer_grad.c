/* LightningIndexerGrad phase 2 on the CPU (docs/contract.md section 2.2).
 *
 * Work is split into units, one per (batch, valid query row, key head); each unit is a job, taken
 * by the threads in order from a shared counter (the words: docs/architecture.md "Words for
 * work"). A unit's counted slots go to the plan's engine in blocks;
 * its dQ and dW belong to it alone and are stored once. dK is a scatter-add across units,
 * accumulated in fp32 in the workspace:
 *   deterministic: every block of a unit is a chunk with a sequence number fixed by the input
 *     (the index pass numbers each unit's chunks). A chunk is produced once the chunk
 *     ring_chunks before it is committed, so at most ring_chunks are ever in flight and as many
 *     buffers suffice; the engine writes the contributions into a free buffer, taken from a
 *     stack, so that the one freed last (still in cache) is reused first. Chunks are committed
 *     (added into the accumulator) strictly in sequence order, slot by slot, by whichever
 *     thread finds the next one ready, which then frees its buffer. Every dK sum thus has one
 *     order, fixed by the input alone, whatever the thread count or ring capacity, and no
 *     thread waits at a barrier, only when the ring is full. A unit of any size streams
 *     through the same ring.
 *   non-deterministic: each block's contributions are added straight into the accumulator
 *     under a spin lock per key row: same updates, order left to the scheduler.
 *
 * The walk is shared: an operator that computes dy itself (the KL loss, sparse_grad_kl_loss.c) runs
 * lig_cpu_grad_execute with a dy source, which gives each unit's dy in fp32 before its walk. A
 * problem without sparse_indices (the dense KL gradient, dense_kl_grad.c) has every visible key of
 * a unit as its slots, in key order.
 */
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "backends/cpu/operators/bf16_operands.h"
#include "backends/cpu/operators/fill.h"
#include "backends/cpu/operators/indexer_grad_plan.h"
#include "backends/cpu/runtime/fp_mode.h"
#include "backends/cpu/runtime/threadpool.h"
#include "core/dtype_convert.h"
#include "core/error.h"
#include "core/workspace.h"

typedef struct grad_run {
    const lig_cpu_grad_plan *p;
    const lig_grad_dy_source *source; /* NULL: dy from the tensor */
    char *ws; /* aligned workspace base */
    float *acc;
    atomic_llong next_unit;
    /* non-deterministic */
    atomic_uint *locks;
    /* deterministic: the commit ring */
    const int64_t *chunk_base; /* [units + 1] */
    int64_t chunks;            /* chunk_base[units]: every chunk of the problem */
    float *ring;               /* buffers [ring_chunks][block][contrib_ld]: contributions */
    float *ring_scale;         /* buffers [ring_chunks][block] */
    int64_t *ring_key;         /* buffers [ring_chunks][block]: accumulator rows */
    int64_t *ring_count;       /* buffers [ring_chunks]: slots written */
    atomic_llong *ring_ready;  /* [ring_chunks], by seq % ring_chunks: the chunk published there */
    int64_t *ring_buffer;      /* [ring_chunks], by seq % ring_chunks: the buffer holding it */
    int64_t *free_stack;       /* [ring_chunks]: free buffers, the last freed on top */
    int64_t free_top;          /* entries in free_stack */
    atomic_int free_lock;
    atomic_llong committed;    /* chunks [0, committed) are in the accumulator */
    atomic_int committing;     /* held by the one thread adding buffers */
} grad_run;

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

/* The free-buffer stack, under its own lock: a buffer's commit (reads) happens before its next
 * producer's writes through the lock's release and acquire. */
static int64_t take_buffer(grad_run *r) {
    int spins = 0;
    while (atomic_exchange_explicit(&r->free_lock, 1, memory_order_acquire)) backoff(&spins);
    const int64_t b = r->free_stack[--r->free_top]; /* never empty: at most ring_chunks in flight */
    atomic_store_explicit(&r->free_lock, 0, memory_order_release);
    return b;
}

static void free_buffer(grad_run *r, int64_t b) {
    int spins = 0;
    while (atomic_exchange_explicit(&r->free_lock, 1, memory_order_acquire)) backoff(&spins);
    r->free_stack[r->free_top++] = b;
    atomic_store_explicit(&r->free_lock, 0, memory_order_release);
}

/* Adds every ready buffer into the accumulator, in sequence order, unless another thread is
 * already doing so. Every accumulator write happens under `committing` (acquired on entry,
 * released on exit), so successive committers see each other's sums. Rechecks after letting
 * go, so a chunk finished meanwhile is not left waiting for the next caller. */
static void try_commit(grad_run *r) {
    const lig_cpu_grad_plan *p = r->p;
    const int64_t D = p->pb->pr.D, ld = p->ctx.contrib_ld, nb = p->ctx.block, R = p->ring_chunks;
    for (;;) {
        if (atomic_exchange_explicit(&r->committing, 1, memory_order_acquire)) return;
        int64_t c = atomic_load_explicit(&r->committed, memory_order_relaxed); /* written only under the flag */
        while (c < r->chunks && atomic_load_explicit(&r->ring_ready[c % R], memory_order_acquire) == c) {
            const int64_t b = r->ring_buffer[c % R], n = r->ring_count[b];
            const float *src = r->ring + b * nb * ld, *scale = r->ring_scale + b * nb;
            const int64_t *key = r->ring_key + b * nb;
            for (int64_t i = 0; i < n; i++) {
                if (i + 4 < n) /* four rows ahead: the adds wait on memory, not on arithmetic */
                    for (int64_t off = 0; off < D * 4; off += 64) __builtin_prefetch((const char *)(r->acc + key[i + 4] * D) + off, 1, 3);
                p->ctx.ks->f32->axpy_row(r->acc + key[i] * D, scale[i], src + i * ld, D);
            }
            free_buffer(r, b);
            /* release: the producer that reuses buffer b reads this before writing into it */
            atomic_store_explicit(&r->committed, ++c, memory_order_release);
        }
        atomic_store_explicit(&r->committing, 0, memory_order_release);
        if (c >= r->chunks || atomic_load_explicit(&r->ring_ready[c % R], memory_order_acquire) != c) return;
    }
}

/* Waits (helping to commit) until chunks [0, seq) are in the accumulator. */
static void wait_committed(grad_run *r, int64_t seq) {
    int spins = 0;
    while (atomic_load_explicit(&r->committed, memory_order_acquire) < seq) {
        try_commit(r);
        backoff(&spins);
    }
}

/* One block's slots: key rows, gradients and accumulator rows (two per thread: the block
 * being computed and the next one, whose rows are fetched meanwhile). */
typedef struct slot_list {
    const char **key;
    float *dy;
    int64_t *acc_row;
    int64_t n;
} slot_list;

static slot_list list_of(const lig_cpu_grad_plan *p, char *s, int which) {
    const lig_grad_scratch_layout *L = &p->scratch;
    const int64_t nb = p->ctx.block;
    return (slot_list){.key = (const char **)(void *)(s + L->key) + which * nb,
                       .dy = (float *)(void *)(s + L->dy) + which * nb,
                       .acc_row = (int64_t *)(void *)(s + L->acc_row) + which * nb};
}

/* Asks for the accumulator rows a block will add into, so that its commit finds them close. */
static void prefetch_acc_rows(const grad_run *r, const slot_list *b) {
    const int64_t D = r->p->pb->pr.D;
    for (int64_t n = 0; n < b->n; n++) {
        const char *row = (const char *)(r->acc + b->acc_row[n] * D);
        for (int64_t off = 0; off < D * 4; off += 64) __builtin_prefetch(row + off, 1, 2);
    }
}

/* Hands one block to the engine and routes its contributions: chunk `seq` of the ring
 * (deterministic) or locked adds from the thread's scratch. */
static void emit_block(grad_run *r, char *s, const slot_list *b, const slot_list *next, int64_t seq) {
    const lig_cpu_grad_plan *p = r->p;
    const lig_grad_scratch_layout *L = &p->scratch;
    const int64_t D = p->pb->pr.D, ld = p->ctx.contrib_ld, block = p->ctx.block, nb = b->n;
    prefetch_acc_rows(r, b);
    if (p->pb->deterministic) {
        wait_committed(r, seq - p->ring_chunks + 1); /* the chunk that last used entry seq % R is in */
        const int64_t k = take_buffer(r), e = seq % p->ring_chunks;
        p->engine->block(&p->ctx, s + L->engine, nb, b->key, b->dy, next->key, next->n, r->ring + k * block * ld,
                         r->ring_scale + k * block);
        memcpy(r->ring_key + k * block, b->acc_row, sizeof(int64_t) * (size_t)nb);
        r->ring_count[k] = nb;
        r->ring_buffer[e] = k;
        atomic_store_explicit(&r->ring_ready[e], seq, memory_order_release);
        try_commit(r);
        return;
    }
    float *contrib = (float *)(void *)(s + L->contrib), *scale = (float *)(void *)(s + L->scale);
    p->engine->block(&p->ctx, s + L->engine, nb, b->key, b->dy, next->key, next->n, contrib, scale);
    for (int64_t n = 0; n < nb; n++) {
        lock_row(&r->locks[b->acc_row[n]]);
        p->ctx.ks->f32->axpy_row(r->acc + b->acc_row[n] * D, scale[n], contrib + n * ld, D);
        unlock_row(&r->locks[b->acc_row[n]]);
    }
}

/* Walks a unit's slots. */
typedef struct slot_cursor {
    const char *ip, *yp;
    int64_t j, istep, ystep, acc_row0;
    lig_unit x;
    const float *dy_counted; /* a dy source's values, one per counted slot (NULL: the dy tensor) */
    int64_t counted;         /* counted slots read so far */
} slot_cursor;

/* Fills b with the unit's next counted slots, up to a block. */
static void next_block(const lig_cpu_grad_plan *p, slot_cursor *c, slot_list *b) {
    const lig_grad_problem *pb = p->pb;
    const lig_problem *pr = &pb->pr;
    b->n = 0;
    if (lig_grad_dense(pb)) { /* every visible key, in key order; dy from the source */
        for (; c->j < lig_grad_dense_slots(&c->x) && b->n < p->ctx.block; c->j++) {
            const int64_t sk = c->x.lo + c->j;
            b->key[b->n] = lig_k_row_ptr(&pb->k, pr, c->x.b, sk, c->x.g);
            b->dy[b->n] = c->dy_counted[c->counted++];
            b->acc_row[b->n++] = c->acc_row0 + sk * pr->N2;
        }
        return;
    }
    for (; c->j < pr->K && b->n < p->ctx.block; c->j++, c->ip += c->istep) {
        const int64_t sk = lig_load_int(pb->idx.dtype, c->ip);
        if (sk < c->x.lo || sk > c->x.hi) continue; /* padding (-1) or outside the visible range */
        b->key[b->n] = lig_k_row_ptr(&pb->k, pr, c->x.b, sk, c->x.g);
        /* the tensor's dy at slot j (its pointer is NULL with a dy source: never offset then) */
        b->dy[b->n] = c->dy_counted ? c->dy_counted[c->counted++] : lig_load_float(pb->dy.dtype, c->yp + c->j * c->ystep);
        b->acc_row[b->n++] = c->acc_row0 + sk * pr->N2;
    }
}

/* Runs unit u in the thread's scratch s. */
static void run_unit(grad_run *r, char *s, int64_t u) {
    const lig_cpu_grad_plan *p = r->p;
    const lig_grad_problem *pb = p->pb;
    const lig_problem *pr = &pb->pr;
    const lig_grad_scratch_layout *L = &p->scratch;
    const lig_unit x = lig_unit_decode(pr, u);
    const int64_t h0 = x.g * pr->G;
    /* first the source's dy (its own products, in its scratch), then the engine's unit */
    const float *dy_counted = r->source ? r->source->unit_dy(r->source->ctx, s + L->extra, u, &x) : NULL;
    p->engine->begin_unit(&p->ctx, s + L->engine, lig_q_row_ptr(&pb->q, pr, x.b, x.t, h0),
                          lig_q_row_ptr(&pb->w, pr, x.b, x.t, h0));
    slot_cursor c = {.ip = lig_grad_dense(pb) ? NULL : lig_q_row_ptr(&pb->idx, pr, x.b, x.t, x.g),
                     .yp = dy_counted ? NULL : lig_q_row_ptr(&pb->dy, pr, x.b, x.t, x.g),
                     .istep = pb->idx.dim * (int64_t)pb->idx.esize,
                     .ystep = pb->dy.dim * (int64_t)pb->dy.esize,
                     .acc_row0 = (x.b * pr->key_batch + pr->bt.k_base[x.b]) * pr->N2 + x.g,
                     .x = x,
                     .dy_counted = dy_counted};
    slot_list lists[2] = {list_of(p, s, 0), list_of(p, s, 1)};
    int64_t seq = r->chunk_base ? r->chunk_base[u] : 0;
    int cur = 0;
    next_block(p, &c, &lists[cur]);
    while (lists[cur].n > 0) {
        next_block(p, &c, &lists[1 - cur]); /* read one block ahead: its rows are fetched meanwhile */
        emit_block(r, s, &lists[cur], &lists[1 - cur], seq++);
        cur = 1 - cur;
    }
    p->engine->end_unit(&p->ctx, s + L->engine, lig_q_row_ptr(&pb->dq, pr, x.b, x.t, h0),
                        lig_q_row_ptr(&pb->dw, pr, x.b, x.t, h0));
}

static void units_task(void *ctx, int tid, int n) {
    grad_run *r = ctx;
    const lig_cpu_grad_plan *p = r->p;
    (void)n;
    char *s = r->ws + p->ws.scratch + (uint64_t)tid * p->ws.scratch_stride;
    /* the engine's per-thread setup, or the set's bf16 setup for a dy source's own bf16 products */
    const bool bf16_setup = !p->engine->thread_begin && p->extra_bf16_threads;
    if (p->engine->thread_begin) p->engine->thread_begin(&p->ctx);
    if (bf16_setup) lig_bf16_thread_begin(p->ctx.ks);
    for (;;) {
        const int64_t u = atomic_fetch_add_explicit(&r->next_unit, 1, memory_order_relaxed);
        if (u >= p->pb->pr.units) break;
        run_unit(r, s, u);
    }
    if (p->engine->thread_end) p->engine->thread_end(&p->ctx);
    if (bf16_setup) lig_bf16_thread_end(p->ctx.ks);
    if (p->pb->deterministic) wait_committed(r, r->chunks); /* leaves only when every chunk is in */
}

/* Key rows of the output: BSND rows are (b, s) with s < S2, TND rows are global. */
static char *dk_row_ptr(const lig_grad_problem *pb, int64_t row, int64_t g) {
    const int64_t b = pb->pr.tnd ? 0 : row / pb->pr.S2, s = pb->pr.tnd ? row : row - b * pb->pr.S2;
    return lig_view_row_ptr(&pb->dk, b, s, g);
}

static void zero_acc_task(void *ctx, int tid, int n) {
    const grad_run *r = ctx;
    const lig_problem *pr = &r->p->pb->pr;
    const int64_t total = pr->key_rows * pr->N2 * pr->D;
    const int64_t a = total * tid / n, b = total * (tid + 1) / n;
    memset(r->acc + a, 0, sizeof(float) * (size_t)(b - a));
}

static void store_dk_task(void *ctx, int tid, int n) {
    const grad_run *r = ctx;
    const lig_grad_problem *pb = r->p->pb;
    const int64_t rows = pb->pr.key_rows * pb->pr.N2, D = pb->pr.D;
    for (int64_t i = rows * tid / n; i < rows * (tid + 1) / n; i++) {
        const int64_t row = i / pb->pr.N2, g = i - row * pb->pr.N2;
        r->p->ctx.ks->f32->store_row(r->acc + i * D, D, pb->dk.dtype, dk_row_ptr(pb, row, g), pb->dk.dim);
    }
}

int lig_cpu_grad_threads(const lig_cpu_grad_plan *p, double flops) { return lig_threads_for(flops, p->threads); }

/* A problem with nothing to multiply still gives a dy source every unit (its own outputs: a loss,
 * a softmax), split evenly: each unit's values are its own, so any split gives the same. */
static void source_only_task(void *ctx, int tid, int nthreads) {
    const grad_run *r = ctx;
    const lig_cpu_grad_plan *p = r->p;
    const lig_problem *pr = &p->pb->pr;
    char *s = r->ws + p->ws.scratch + (uint64_t)tid * p->ws.scratch_stride + p->scratch.extra;
    if (p->extra_bf16_threads) lig_bf16_thread_begin(p->ctx.ks);
    for (int64_t u = pr->units * tid / nthreads; u < pr->units * (tid + 1) / nthreads; u++) {
        const lig_unit x = lig_unit_decode(pr, u);
        (void)r->source->unit_dy(r->source->ctx, s, u, &x);
    }
    if (p->extra_bf16_threads) lig_bf16_thread_end(p->ctx.ks);
}

lig_status lig_cpu_grad_execute(const lig_cpu_grad_plan *p, void *workspace, const lig_grad_dy_source *source,
                                double flops) {
    const lig_grad_problem *pb = p->pb;
    const lig_problem *pr = &pb->pr;
    /* at most the threads the scratch exists for; few for a small problem */
    const int threads = lig_cpu_grad_threads(p, flops);

    grad_run r = {.p = p, .source = source};
    if (p->empty) {
        lig_status st = lig_grad_index_pass(p, threads, NULL);
        if (st != LIG_SUCCESS) return st;
        lig_fill_query_rows(pr, &pb->dq, pr->N1, pr->D, 0.0, true);
        lig_fill_query_rows(pr, &pb->dw, pr->N1, 1, 0.0, true);
        lig_fill_key_rows(pr, &pb->dk, pr->N2, pr->D, 0.0);
        if (source && pr->units > 0) {
            r.ws = lig_ws_base(workspace);
            (p->own_threads ? lig_parallel_own_threads : lig_parallel)(threads, source_only_task, &r);
        }
        return LIG_SUCCESS;
    }

    r.ws = lig_ws_base(workspace);
    r.acc = (float *)(void *)(r.ws + p->ws.dk_acc);
    int64_t *chunk_base = pb->deterministic ? (int64_t *)(void *)(r.ws + p->ws.chunk_base) : NULL;
    lig_status st = lig_grad_index_pass(p, threads, chunk_base);
    if (st != LIG_SUCCESS) return st; /* nothing has been written */

    lig_fill_query_rows(pr, &pb->dq, pr->N1, pr->D, 0.0, false);
    lig_fill_query_rows(pr, &pb->dw, pr->N1, 1, 0.0, false);
    lig_parallel(threads, zero_acc_task, &r);
    atomic_init(&r.next_unit, 0);
    if (pb->deterministic) {
        r.chunk_base = chunk_base;
        r.chunks = chunk_base[pr->units];
        r.ring = (float *)(void *)(r.ws + p->ws.ring);
        r.ring_scale = (float *)(void *)(r.ws + p->ws.ring_scale);
        r.ring_key = (int64_t *)(void *)(r.ws + p->ws.ring_key);
        r.ring_count = (int64_t *)(void *)(r.ws + p->ws.ring_count);
        r.ring_ready = (atomic_llong *)(void *)(r.ws + p->ws.ring_ready);
        r.ring_buffer = (int64_t *)(void *)(r.ws + p->ws.ring_buffer);
        r.free_stack = (int64_t *)(void *)(r.ws + p->ws.free_stack);
        for (int64_t b = 0; b < p->ring_chunks; b++) {
            atomic_init(&r.ring_ready[b], -1);
            r.free_stack[b] = p->ring_chunks - 1 - b; /* buffer 0 on top */
        }
        r.free_top = p->ring_chunks;
        atomic_init(&r.free_lock, 0);
        atomic_init(&r.committed, 0);
        atomic_init(&r.committing, 0);
    } else {
        r.locks = (atomic_uint *)(void *)(r.ws + p->ws.locks);
        memset((void *)r.locks, 0, sizeof(uint32_t) * (size_t)(pr->key_rows * pr->N2));
    }
    (p->own_threads ? lig_parallel_own_threads : lig_parallel)(threads, units_task, &r);
    lig_parallel(threads, store_dk_task, &r);
    return LIG_SUCCESS;
}

static lig_status run_indexer_grad(void *plan, void *workspace, void *stream) {
    const lig_cpu_grad_plan *p = plan;
    const lig_problem *pr = &p->pb->pr;
    (void)stream;
    return lig_cpu_grad_execute(p, workspace, NULL, 6.0 * (double)pr->units * (double)pr->K * (double)(pr->G * pr->D));
}

lig_status lig_cpu_run_indexer_grad(void *plan, void *workspace, void *stream) {
    return lig_fp_mode_run(run_indexer_grad, plan, workspace, stream);
}

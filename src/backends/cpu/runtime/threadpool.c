#include "backends/cpu/runtime/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "backends/cpu/runtime/fp_mode.h"
#include "core/settings.h"
#include "core/tuning.h"

#define MAX_THREADS LIG_MAX_THREADS

int lig_threads_for(double flops, int cap) {
    /* LIG_MIN_FLOPS_PER_THREAD (core/tuning.h); the tests set 0 so that even their small problems run
     * on every thread */
    const double per_thread = lig_tuning_current().min_flops_per_thread;
    int n = lig_settings_threads();
    if (n > cap) n = cap;
    if (per_thread > 0 && (double)n * per_thread > flops) n = flops < per_thread ? 1 : (int)(flops / per_thread);
    return n < 1 ? 1 : n;
}

/* Pool state, guarded by `mu`; `busy` serialises whole parallel regions. Worker w (1-based)
 * runs task w - call_first_worker when w <= call_workers. */
static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static int n_workers;
static unsigned long generation;
static lig_task_fn call_fn;
static void *call_ctx;
static int call_n, call_workers, call_first_worker;
static int pending;
static unsigned long start_generation[MAX_THREADS + 1]; /* generation each worker was created at */

static void *worker_main(void *arg) {
    const int w = (int)(intptr_t)arg;
    /* a worker inherits its creator's mode; it is lig's thread, so it keeps lig's from now on */
    (void)lig_fp_mode_enter();
    unsigned long seen;
    pthread_mutex_lock(&mu);
    seen = start_generation[w]; /* not `generation`: a call may have been posted already */
    for (;;) {
        while (generation == seen) pthread_cond_wait(&work_cv, &mu);
        seen = generation;
        if (w > call_workers) continue;
        lig_task_fn fn = call_fn;
        void *ctx = call_ctx;
        const int n = call_n, tid = w - call_first_worker;
        pthread_mutex_unlock(&mu);
        fn(ctx, tid, n);
        pthread_mutex_lock(&mu);
        if (--pending == 0) pthread_cond_signal(&done_cv);
    }
    return NULL;
}

/* fork() copies only the forking thread: in the child the workers are gone, and a lock that one
 * of them (or another thread of the parent) held would stay held. `mu` is taken across the
 * fork so that the child's copy of the state is not half-written; the child then starts from
 * an empty pool, as a new process does. A parallel region that another thread of the parent
 * was running belongs to that thread, which the child does not have either. */
static void before_fork(void) { pthread_mutex_lock(&mu); }

static void after_fork_in_parent(void) { pthread_mutex_unlock(&mu); }

static void after_fork_in_child(void) {
    const pthread_mutex_t fresh_mutex = PTHREAD_MUTEX_INITIALIZER;
    const pthread_cond_t fresh_cond = PTHREAD_COND_INITIALIZER;
    busy = fresh_mutex;
    mu = fresh_mutex;
    work_cv = fresh_cond;
    done_cv = fresh_cond;
    n_workers = 0;
    pending = 0;
    call_workers = 0;
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void watch_forks(void) { pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child); }

/* Grows the pool to `want` workers (called with `busy` held); returns how many it has, at most `want`. */
static int ensure_workers(int want) {
    pthread_once(&fork_once, watch_forks);
    if (want > MAX_THREADS) want = MAX_THREADS;
    while (n_workers < want) {
        pthread_t th;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        /* workers start at the current generation, so they never run an old call */
        pthread_mutex_lock(&mu);
        start_generation[n_workers + 1] = generation;
        int ok = pthread_create(&th, &attr, worker_main, (void *)(intptr_t)(n_workers + 1)) == 0;
        if (ok) n_workers++;
        pthread_mutex_unlock(&mu);
        pthread_attr_destroy(&attr);
        if (!ok) break;
    }
    return n_workers < want ? n_workers : want;
}

/* Posts tasks [0, n), task t on worker t + first_worker (called with `busy` held), runs
 * task 0 on the caller when first_worker is 0, and waits for the workers. */
static void run_call(lig_task_fn fn, void *ctx, int n, int first_worker) {
    pthread_mutex_lock(&mu);
    call_fn = fn;
    call_ctx = ctx;
    call_n = n;
    call_first_worker = first_worker;
    call_workers = n - 1 + first_worker;
    pending = n - 1 + first_worker;
    generation++;
    pthread_cond_broadcast(&work_cv);
    pthread_mutex_unlock(&mu);

    if (first_worker == 0) fn(ctx, 0, n);

    pthread_mutex_lock(&mu);
    while (pending > 0) pthread_cond_wait(&done_cv, &mu);
    pthread_mutex_unlock(&mu);
}

void lig_parallel(int want, lig_task_fn fn, void *ctx) {
    if (want > MAX_THREADS) want = MAX_THREADS;
    if (want <= 1 || pthread_mutex_trylock(&busy) != 0) {
        fn(ctx, 0, 1);
        return;
    }
    const int n = ensure_workers(want - 1) + 1;
    if (n <= 1) {
        pthread_mutex_unlock(&busy);
        fn(ctx, 0, 1);
        return;
    }
    run_call(fn, ctx, n, 0);
    pthread_mutex_unlock(&busy);
}

void lig_parallel_own_threads(int want, lig_task_fn fn, void *ctx) {
    if (want > MAX_THREADS) want = MAX_THREADS;
    if (want < 1) want = 1;
    pthread_mutex_lock(&busy); /* the caller's thread may not stand in, so wait for the pool */
    const int n = ensure_workers(want);
    if (n < 1) {
        /* no thread could be made: running on the caller's is the only way to finish */
        pthread_mutex_unlock(&busy);
        fn(ctx, 0, 1);
        return;
    }
    run_call(fn, ctx, n, 1);
    pthread_mutex_unlock(&busy);
}

int lig_pool_workers(void) {
    pthread_mutex_lock(&mu);
    const int n = n_workers;
    pthread_mutex_unlock(&mu);
    return n;
}

#include "backends/cpu/runtime/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/settings.h"

#define MAX_THREADS LIG_MAX_THREADS

static double min_flops_per_thread = 4e6;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

/* LIG_MIN_FLOPS_PER_THREAD overrides the threshold; the tests set 0 so that even their small
 * problems run on every thread. Read once, not on every call. */
static void read_env(void) {
    const char *env = getenv("LIG_MIN_FLOPS_PER_THREAD");
    if (env && *env) min_flops_per_thread = strtod(env, NULL);
}

int lig_threads_for(double flops, int cap) {
    pthread_once(&env_once, read_env);
    const double per_thread = min_flops_per_thread;
    int n = lig_settings_threads();
    if (n > cap) n = cap;
    if (per_thread > 0 && (double)n * per_thread > flops) n = flops < per_thread ? 1 : (int)(flops / per_thread);
    return n < 1 ? 1 : n;
}

/* Pool state, guarded by `mu`; `busy` serialises whole parallel regions. */
static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static int n_workers;
static unsigned long generation;
static lig_task_fn job_fn;
static void *job_ctx;
static int job_n;
static int pending;
static unsigned long start_generation[MAX_THREADS]; /* generation each worker was created at */

static void *worker_main(void *arg) {
    const int tid = (int)(intptr_t)arg;
    unsigned long seen;
    pthread_mutex_lock(&mu);
    seen = start_generation[tid]; /* not `generation`: a job may have been posted already */
    for (;;) {
        while (generation == seen) pthread_cond_wait(&work_cv, &mu);
        seen = generation;
        if (tid >= job_n) continue;
        lig_task_fn fn = job_fn;
        void *ctx = job_ctx;
        int n = job_n;
        pthread_mutex_unlock(&mu);
        fn(ctx, tid, n);
        pthread_mutex_lock(&mu);
        if (--pending == 0) pthread_cond_signal(&done_cv);
    }
    return NULL;
}

/* Grows the pool to `want - 1` workers (called with `busy` held); returns the usable count. */
static int ensure_workers(int want) {
    while (n_workers < want - 1) {
        pthread_t th;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        /* workers start at the current generation, so they never run an old job */
        pthread_mutex_lock(&mu);
        start_generation[n_workers + 1] = generation;
        int ok = pthread_create(&th, &attr, worker_main, (void *)(intptr_t)(n_workers + 1)) == 0;
        if (ok) n_workers++;
        pthread_mutex_unlock(&mu);
        pthread_attr_destroy(&attr);
        if (!ok) break;
    }
    return n_workers + 1 < want ? n_workers + 1 : want;
}

void lig_parallel(int want, lig_task_fn fn, void *ctx) {
    if (want > MAX_THREADS) want = MAX_THREADS;
    if (want <= 1 || pthread_mutex_trylock(&busy) != 0) {
        fn(ctx, 0, 1);
        return;
    }
    int n = ensure_workers(want);
    if (n <= 1) {
        pthread_mutex_unlock(&busy);
        fn(ctx, 0, 1);
        return;
    }
    pthread_mutex_lock(&mu);
    job_fn = fn;
    job_ctx = ctx;
    job_n = n;
    pending = n - 1;
    generation++;
    pthread_cond_broadcast(&work_cv);
    pthread_mutex_unlock(&mu);

    fn(ctx, 0, n);

    pthread_mutex_lock(&mu);
    while (pending > 0) pthread_cond_wait(&done_cv, &mu);
    pthread_mutex_unlock(&mu);
    pthread_mutex_unlock(&busy);
}

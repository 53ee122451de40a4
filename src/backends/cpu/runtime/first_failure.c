#include "backends/cpu/runtime/first_failure.h"

#include "backends/cpu/runtime/threadpool.h"
#include "core/settings.h"

typedef struct scan_task {
    int64_t n;
    lig_scan_fn scan;
    void *ctx;
    lig_failure first[LIG_MAX_THREADS];
} scan_task;

static void scan_range(void *arg, int tid, int n) {
    scan_task *t = arg;
    t->first[tid].item = INT64_MAX;
    t->scan(t->ctx, t->n * tid / n, t->n * (tid + 1) / n, &t->first[tid]);
}

lig_failure lig_first_failure(int64_t n, int threads, lig_scan_fn scan, void *ctx) {
    static _Thread_local scan_task t; /* large: keep it off the stack */
    t.n = n;
    t.scan = scan;
    t.ctx = ctx;
    for (int i = 0; i < LIG_MAX_THREADS; i++) t.first[i].item = INT64_MAX;
    if (threads > LIG_MAX_THREADS) threads = LIG_MAX_THREADS;
    if (n < threads) threads = n < 1 ? 1 : (int)n;
    lig_parallel(threads, scan_range, &t);
    lig_failure worst = {.item = INT64_MAX};
    for (int i = 0; i < LIG_MAX_THREADS; i++)
        if (t.first[i].item < worst.item) worst = t.first[i];
    return worst;
}

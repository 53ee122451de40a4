/* A persistent fork-join pool. The caller runs as thread 0; concurrent or nested callers
 * that find the pool busy run their task alone, which only changes speed, never results
 * (every operator's output is independent of the thread count it gets).
 *
 * The pool survives fork(): a child process starts with no workers (the parent's do not exist
 * there) and makes its own on its first parallel call, so it computes what the parent would. */
#ifndef LIG_CPU_RUNTIME_THREADPOOL_H
#define LIG_CPU_RUNTIME_THREADPOOL_H

typedef void (*lig_task_fn)(void *ctx, int tid, int nthreads);

/* Threads worth waking for about `flops` of work: the configured count, at most `cap` (what
 * the plan sized scratch for), and no more than one per few MFLOP, since waking a thread
 * costs tens of microseconds. */
int lig_threads_for(double flops, int cap);

/* Runs fn(ctx, tid, n) for every tid in [0, n), n <= want, and returns when all are done. */
void lig_parallel(int want, lig_task_fn fn, void *ctx);

/* As lig_parallel, but every task runs on one of lig's own threads and none on the caller's,
 * even at n = 1 or when the pool is busy (then it waits for the pool). For work that changes
 * per-thread state the caller may own, such as AMX tile configurations. */
void lig_parallel_own_threads(int want, lig_task_fn fn, void *ctx);

/* Test hook: the number of worker threads the pool has in this process. */
int lig_pool_workers(void);

#endif

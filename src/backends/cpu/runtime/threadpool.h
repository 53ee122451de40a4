/* A persistent fork-join pool. The caller runs as thread 0; concurrent or nested callers
 * that find the pool busy run their task alone, which only changes speed, never results
 * (every operator's output is independent of the thread count it gets). */
#ifndef LIG_CPU_RUNTIME_THREADPOOL_H
#define LIG_CPU_RUNTIME_THREADPOOL_H

typedef void (*lig_task_fn)(void *ctx, int tid, int nthreads);

/* Threads worth waking for about `flops` of work: the configured count, at most `cap` (what
 * the plan sized scratch for), and no more than one per few MFLOP, since waking a thread
 * costs tens of microseconds. */
int lig_threads_for(double flops, int cap);

/* Runs fn(ctx, tid, n) for every tid in [0, n), n <= want, and returns when all are done. */
void lig_parallel(int want, lig_task_fn fn, void *ctx);

#endif

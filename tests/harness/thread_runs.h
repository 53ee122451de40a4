/* Bitwise reproducibility across thread counts and runs (contract 7): one call made again under
 * each thread count of a list, its output's bytes compared with the first run's. */
#ifndef LIG_TESTS_HARNESS_THREAD_RUNS_H
#define LIG_TESTS_HARNESS_THREAD_RUNS_H

#include <stdbool.h>

#include "tensor_buffers.h"

/* One run: makes the case, calls the operator and returns its output (or NULL after a failed
 * CHECK); `first` is true for the first run, which the callback checks against its reference. */
typedef const tbuf *(*thread_run_fn)(void *ctx, bool first);
/* Releases what the run made. */
typedef void (*thread_run_done_fn)(void *ctx);

/* Runs once per entry of threads[0 .. runs) (lig_set_num_threads), comparing every output element's
 * fp32 bytes with the first run's; restores the default thread count. */
void th_check_thread_runs(const char *label, const int *threads, int runs, thread_run_fn run, thread_run_done_fn done,
                          void *ctx);

#endif

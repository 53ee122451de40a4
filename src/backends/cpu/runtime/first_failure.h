/* A parallel scan for the first bad item: phase 2's checks that run before anything is
 * written (the backward's indices, the KL step's target) report the lowest failing item,
 * whatever the thread count. */
#ifndef LIG_CPU_RUNTIME_FIRST_FAILURE_H
#define LIG_CPU_RUNTIME_FIRST_FAILURE_H

#include <stdint.h>

typedef struct lig_failure {
    int64_t item;    /* INT64_MAX: none */
    int64_t slot;
    int64_t int_value; /* what was found there, as an integer or as a float */
    double value;
} lig_failure;

/* Scans [lo, hi) in order; on the first bad item records it in *first and returns. */
typedef void (*lig_scan_fn)(void *ctx, int64_t lo, int64_t hi, lig_failure *first);

/* Splits [0, n) over up to `threads` threads and returns the failure with the lowest item
 * (item INT64_MAX when every range passed). */
lig_failure lig_first_failure(int64_t n, int threads, lig_scan_fn scan, void *ctx);

#endif

#ifndef LIG_BENCH_STREAM_READ_H
#define LIG_BENCH_STREAM_READ_H

/* A plain read of a decode step's cache bytes, the bandwidth the decode is measured against
 * (bench/stream_read.c). */
#include <stddef.h>

typedef struct bench_stream_time {
    double wall, cpu; /* seconds per read of every byte: wall clock, and the process's CPU time / threads */
} bench_stream_time;

/* Reads the n buffers (bytes[i] bytes at parts[i]) `threads` threads at once, each its contiguous
 * share of every buffer, as 64-bit words summed into 4 chains (the loads are the work); repeated
 * until at least min_bytes were read in all (so a cache-resident buffer is not timed by the thread
 * start), timed over all the repeats. */
bench_stream_time bench_stream_read(const void *const *parts, const size_t *bytes, int n, int threads, double min_bytes);

#endif

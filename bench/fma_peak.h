#ifndef LIG_BENCH_FMA_PEAK_H
#define LIG_BENCH_FMA_PEAK_H

/* Best-of-three fp32 FMA throughput of `threads` threads running at once, in GFLOP/s. */
double lig_bench_fma_peak_gflops(int threads);

#endif

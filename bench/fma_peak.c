/* The machine's fp32 FMA peak, measured: each thread runs independent chains of AVX2 FMAs
 * (enough accumulators to cover the FMA latency on every x86 core with two FMA pipes).
 * Reported per thread count, in GFLOP/s (an FMA is 2 flops, 8 lanes per ymm). */
#include "fma_peak.h"

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define CHAINS 12

__attribute__((target("avx2,fma"))) static double fma_loop(int64_t iters) {
    __m256 acc[CHAINS];
    const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < CHAINS; i++) acc[i] = _mm256_set1_ps((float)i);
    for (int64_t n = 0; n < iters; n++) {
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
    }
    __m256 s = acc[0];
    for (int i = 1; i < CHAINS; i++) s = _mm256_add_ps(s, acc[i]);
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0]; /* keeps the loop alive */
}
#define FLOPS_PER_ITER (CHAINS * 8 * 2)
#else
static double fma_loop(int64_t iters) {
    float acc[8] = {0};
    for (int64_t n = 0; n < iters; n++)
        for (int i = 0; i < 8; i++) acc[i] = acc[i] * 0.999999f + 1e-7f;
    return acc[0];
}
#define FLOPS_PER_ITER (8 * 2)
#endif

static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct job {
    int64_t iters;
    double sink;
} job;

static void *run_job(void *arg) {
    job *j = arg;
    j->sink = fma_loop(j->iters);
    return NULL;
}

double lig_bench_fma_peak_gflops(int threads) {
    enum { MAX = 256 };
    if (threads < 1) threads = 1;
    if (threads > MAX) threads = MAX;
    const int64_t iters = 40 * 1000 * 1000;
    double best = 0;
    for (int rep = 0; rep < 3; rep++) { /* best of three: the peak is what the core can do */
        pthread_t th[MAX];
        job jobs[MAX];
        const double t0 = seconds();
        for (int i = 0; i < threads; i++) {
            jobs[i].iters = iters;
            pthread_create(&th[i], NULL, run_job, &jobs[i]);
        }
        for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
        const double dt = seconds() - t0;
        const double gf = (double)FLOPS_PER_ITER * (double)iters * threads / dt * 1e-9;
        if (gf > best) best = gf;
    }
    return best;
}

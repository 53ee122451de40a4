/* The streaming read that lig-decode-bench sets beside each decode step: the same bytes the step
 * reads (the key codes and their scales, or the bf16 keys), read as plainly as C reads memory. Each
 * thread sums its share of every buffer as 64-bit lanes in four independent chains (so the adds
 * never limit the loads; 256-bit loads where the CPU has AVX2), and the sum goes to a volatile
 * sink, so the loads cannot be dropped. With T threads the buffers are split the way the decode
 * splits its keys: contiguous ranges, one per thread. (_GNU_SOURCE comes from bench/CMakeLists.txt.) */
#include "stream_read.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* the AVX2 read: x86-64 with GCC or clang (per-function target, CPU asked at run time) */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define STREAM_AVX2 1
#endif

enum { MAX_PARTS = 4, MAX_THREADS = 64 };

static volatile uint64_t sink;

typedef struct job {
    const unsigned char *p[MAX_PARTS];
    size_t n[MAX_PARTS];
    int parts, passes;
} job;

/* The portable read: 64-bit words, four chains. */
static uint64_t read_words(const unsigned char *p, size_t n) {
    uint64_t a = 0, b = 0, c = 0, d = 0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        memcpy(w, p + i, 32);
        a += w[0], b += w[1], c += w[2], d += w[3];
    }
    for (; i < n; i++) a += p[i];
    return a + b + c + d;
}

#ifdef STREAM_AVX2
/* On x86-64 with AVX2 (asked of the CPU at run time; compiled with a per-function target, so the
 * build's flags do not matter): 256-bit loads, the width the kernels load at, four chains. */
__attribute__((target("avx2"))) static uint64_t read_avx2(const unsigned char *p, size_t n) {
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    size_t i = 0;
    for (; i + 128 <= n; i += 128) {
        a = _mm256_add_epi64(a, _mm256_loadu_si256((const __m256i *)(p + i)));
        b = _mm256_add_epi64(b, _mm256_loadu_si256((const __m256i *)(p + i + 32)));
        c = _mm256_add_epi64(c, _mm256_loadu_si256((const __m256i *)(p + i + 64)));
        d = _mm256_add_epi64(d, _mm256_loadu_si256((const __m256i *)(p + i + 96)));
    }
    uint64_t lanes[4];
    _mm256_storeu_si256((__m256i *)lanes, _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d)));
    return lanes[0] + lanes[1] + lanes[2] + lanes[3] + read_words(p + i, n - i);
}
#endif

static uint64_t read_bytes(const unsigned char *p, size_t n) {
#ifdef STREAM_AVX2
    if (__builtin_cpu_supports("avx2")) return read_avx2(p, n);
#endif
    return read_words(p, n);
}

static void *run(void *arg) {
    const job *j = arg;
    uint64_t s = 0;
    for (int r = 0; r < j->passes; r++)
        for (int i = 0; i < j->parts; i++) s += read_bytes(j->p[i], j->n[i]);
    sink += s;
    return NULL;
}

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

bench_stream_time bench_stream_read(const void *const *parts, const size_t *bytes, int n, int threads, double min_bytes) {
    bench_stream_time t = {0, 0};
    if (n < 1 || n > MAX_PARTS || threads < 1) return t;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    double total = 0;
    for (int i = 0; i < n; i++) total += (double)bytes[i];
    if (total <= 0) return t;
    const int passes = total >= min_bytes ? 1 : (int)(min_bytes / total) + 1;
    job jobs[MAX_THREADS];
    for (int k = 0; k < threads; k++) {
        jobs[k] = (job){.parts = n, .passes = passes};
        for (int i = 0; i < n; i++) {
            const size_t lo = bytes[i] * (size_t)k / (size_t)threads, hi = bytes[i] * (size_t)(k + 1) / (size_t)threads;
            jobs[k].p[i] = (const unsigned char *)parts[i] + lo;
            jobs[k].n[i] = hi - lo;
        }
    }
    pthread_t tid[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    const double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    for (int k = 1; k < threads; k++) started[k] = pthread_create(&tid[k], NULL, run, &jobs[k]) == 0;
    run(&jobs[0]);
    for (int k = 1; k < threads; k++) {
        if (started[k]) pthread_join(tid[k], NULL);
        else run(&jobs[k]); /* a thread that could not start: its share here */
    }
    const double w1 = clock_s(CLOCK_MONOTONIC), c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    t.wall = (w1 - w0) / passes;
    t.cpu = (c1 - c0) / passes / threads;
    return t;
}

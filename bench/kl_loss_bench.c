/* lig-kl-bench: times lig_sparse_indexer_grad_kl_loss (contract 2.5, the fused KL loss with the main
 * attention's target) on inputs prepared by bench/run_kl_bench.py, one configuration per process
 * (so the peak RSS is this configuration's own), and measures the unit peaks for the report.
 *
 *   lig-kl-bench --data DIR --seq S --heads N1 --dm Dm --dr Dr --idx-heads Nidx1 --dim D --topk K
 *                --scale SCALE --threads T --det 0|1|2 --reps R [--dump]
 *   lig-kl-bench --peaks 1,2
 *   lig-kl-bench --workspace-sweep --threads T [shape]
 *
 * Problem: B = 1, BSND, bf16, sparse_mode 3 (causal), Nidx2 = 1, INT32 indices, softmax_max and
 * softmax_sum [1,1,S,N1] FLOAT32, target head_mean, d_weights in bf16. DIR holds the raw
 * little-endian inputs (query.bin, key.bin, query_rope.bin, key_rope.bin, query_index.bin,
 * key_index.bin, weights.bin: bf16; sparse_indices.bin: int32; softmax_max.bin, softmax_sum.bin:
 * fp32), written by run_kl_bench.py from a causal top-k and the main attention's own statistics.
 *
 * Timing: phase 1 and the workspace (allocated and touched) are outside; one warm-up, then R timed
 * phase-2 runs, each by the wall clock and by the process's CPU time (all threads; on a machine
 * shared with other work the wall clock also counts the time other processes hold the cores). Printed, one JSON object on stdout: the kernel set the plan runs, the times, the
 * workspace size, the process's peak RSS (read after the timings), the loss, the counted slots and
 * flops (2*N1*(Dm+Dr) + 2*Nidx1*D + 6*Nidx1*D per counted slot), and an FNV-1a hash of the
 * outputs (loss, dQ, dK, dW) so the driver can compare runs and thread counts bitwise. --dump
 * writes the outputs to DIR/lig_dq.bin, lig_dk.bin, lig_dw.bin for the driver's checks.
 * --det 2 interleaves: every rep runs the non-deterministic plan, then the deterministic one (medians
 * of both, "median_s" and "median_nondet_s"; the workspace is the larger), so their ratio is measured
 * under the same load. --workspace-sweep prints phase 1's workspace for N1 in {16, 128}, K in
 * {512, 2048} and S in {1024, 4096}, deterministic and not (phase 1 only). --peaks prints the measured peaks of every unit (unit_peaks.c), per thread count, best of 3. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <lig.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "unit_peaks.h"

#define MAX_REPS 64

typedef struct options {
    const char *data;
    int64_t S, N1, Dm, Dr, Ni, D, K;
    double scale;
    int threads, det, reps, dump, sweep;
    const char *peaks;
} options;

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double now(void) { return clock_s(CLOCK_MONOTONIC); }
/* CPU seconds of all the process's threads: on a shared machine, what a run costs while it runs */
static double cpu_now(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "lig-kl-bench: out of memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

/* Reads DIR/name, which must hold exactly `bytes` bytes. */
static void *load(const options *o, const char *name, size_t bytes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", o->data, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "lig-kl-bench: cannot open %s\n", path);
        exit(2);
    }
    void *p = xmalloc(bytes);
    const size_t got = fread(p, 1, bytes, f);
    const int extra = fgetc(f);
    fclose(f);
    if (got != bytes || extra != EOF) {
        fprintf(stderr, "lig-kl-bench: %s is not %zu bytes (shape arguments and data disagree)\n", path, bytes);
        exit(2);
    }
    return p;
}

static void save(const options *o, const char *name, const void *p, size_t bytes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", o->data, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, bytes, f) != bytes) {
        fprintf(stderr, "lig-kl-bench: cannot write %s\n", path);
        exit(2);
    }
    fclose(f);
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of n values; sorted receives them in ascending order. */
static double median_of(const double *v, int n, double *sorted) {
    memcpy(sorted, v, sizeof(double) * (size_t)n);
    qsort(sorted, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

static lig_tensor *tensor(void *data, lig_dtype dt, int64_t ndim, const int64_t *shape) {
    lig_tensor *t = lig_create_tensor(data, dt, ndim, shape, NULL);
    if (!t) {
        fprintf(stderr, "lig-kl-bench: lig_create_tensor: %s\n", lig_get_last_error());
        exit(2);
    }
    return t;
}

static void check(lig_status st, const char *what) {
    if (st != LIG_SUCCESS) {
        fprintf(stderr, "lig-kl-bench: %s failed (%d): %s\n", what, (int)st, lig_get_last_error());
        exit(1);
    }
}

static int run_peaks(const char *list) {
    printf("{\"peaks\": [");
    const char *p = list;
    int first = 1;
    while (*p) {
        const int threads = atoi(p);
        for (int u = 0; u < BENCH_UNIT_COUNT; u++) {
            if (!bench_unit_available(u)) continue;
            printf("%s{\"unit\": \"%s\", \"label\": \"%s\", \"threads\": %d, \"gflops\": %.2f, \"gflops_cpu_time\": %.2f}",
                   first ? "" : ", ", bench_unit_key(u), bench_unit_label(u), threads, bench_unit_peak_gflops(u, threads, 3),
                   bench_unit_peak_gflops_cpu_time(u, 3));
            first = 0;
            fflush(stdout);
        }
        p = strchr(p, ',');
        if (!p) break;
        p++;
    }
    printf("]}\n");
    return 0;
}

/* Phase 1 alone for the shape in o (buffers allocated, never touched: phase 1 reads no contents):
 * the workspace it asks for at o->threads threads, deterministic or not. */
static uint64_t workspace_for(const options *o, bool det) {
    const int64_t S = o->S, N1 = o->N1, Dm = o->Dm, Dr = o->Dr, Ni = o->Ni, D = o->D, K = o->K;
    const int64_t sq[] = {1, S, N1, Dm}, sk[] = {1, S, 1, Dm}, sqr[] = {1, S, N1, Dr}, skr[] = {1, S, 1, Dr};
    const int64_t sqi[] = {1, S, Ni, D}, ski[] = {1, S, 1, D}, sw[] = {1, S, Ni}, si[] = {1, S, 1, K};
    const int64_t sst[] = {1, 1, S, N1}, sl[] = {1};
    const int64_t *shapes[] = {sq, sk, sqr, skr, sqi, ski, sw, si, sst, sst, sqi, ski, sw, sl};
    const int64_t ndims[] = {4, 4, 4, 4, 4, 4, 3, 4, 4, 4, 4, 4, 3, 1};
    const lig_dtype types[] = {LIG_BFLOAT16, LIG_BFLOAT16, LIG_BFLOAT16, LIG_BFLOAT16, LIG_BFLOAT16,
                               LIG_BFLOAT16, LIG_BFLOAT16, LIG_INT32,    LIG_FLOAT32,  LIG_FLOAT32,
                               LIG_BFLOAT16, LIG_BFLOAT16, LIG_BFLOAT16, LIG_FLOAT32};
    enum { NT = 14 };
    lig_tensor *t[NT];
    void *buf[NT];
    for (int i = 0; i < NT; i++) {
        size_t n = types[i] == LIG_BFLOAT16 ? 2 : 4;
        for (int d = 0; d < ndims[i]; d++) n *= (size_t)shapes[i][d];
        buf[i] = xmalloc(n);
        t[i] = tensor(buf[i], types[i], ndims[i], shapes[i]);
    }
    lig_set_num_threads(o->threads);
    uint64_t ws = 0;
    lig_executor *ex = NULL;
    check(lig_sparse_indexer_grad_kl_loss_get_workspace_size(t[0], t[1], t[4], t[5], t[6], t[7], t[8], t[9], NULL, t[2], t[3],
                                                        NULL, NULL, 0.04, "BSND", 3, INT64_MAX, INT64_MAX,
                                                        LIG_KL_TARGET_HEAD_MEAN, det, t[10], t[11], t[12], t[13], &ws,
                                                        &ex),
          "lig_sparse_indexer_grad_kl_loss_get_workspace_size");
    lig_destroy_executor(ex);
    for (int i = 0; i < NT; i++) {
        lig_destroy_tensor(t[i]);
        free(buf[i]);
    }
    return ws;
}

/* --workspace-sweep: the workspace for the shape given, then for N1 in {16, 128}, K in {512, 2048},
 * S in {1024, 4096} (the other dims as given), deterministic and not: it must not grow with N1 x K x S. */
static int run_workspace_sweep(options o) {
    const int64_t n1s[] = {16, 128}, ks[] = {512, 2048}, ss[] = {1024, 4096};
    const int64_t own[3] = {o.N1, o.K, o.S};
    printf("{\"workspace\": [");
    int first = 1;
    for (int a = -1; a < 2; a++) /* a = -1: the shape given */
        for (int b = a < 0 ? 1 : 0; b < 2; b++)
            for (int c = a < 0 ? 1 : 0; c < 2; c++) {
                o.N1 = a < 0 ? own[0] : n1s[a];
                o.K = a < 0 ? own[1] : ks[b];
                o.S = a < 0 ? own[2] : ss[c];
                printf("%s{\"heads\": %lld, \"topk\": %lld, \"seq\": %lld, \"threads\": %d, \"det\": %llu, "
                       "\"nondet\": %llu}",
                       first ? "" : ", ", (long long)o.N1, (long long)o.K, (long long)o.S, o.threads,
                       (unsigned long long)workspace_for(&o, true), (unsigned long long)workspace_for(&o, false));
                first = 0;
            }
    printf("]}\n");
    return 0;
}

static int run_bench(const options *o) {
    const int64_t S = o->S, N1 = o->N1, Dm = o->Dm, Dr = o->Dr, Ni = o->Ni, D = o->D, K = o->K;
    const size_t bf = 2;
    void *q = load(o, "query.bin", (size_t)(S * N1 * Dm) * bf), *k = load(o, "key.bin", (size_t)(S * Dm) * bf);
    void *qr = Dr ? load(o, "query_rope.bin", (size_t)(S * N1 * Dr) * bf) : NULL;
    void *kr = Dr ? load(o, "key_rope.bin", (size_t)(S * Dr) * bf) : NULL;
    void *qi = load(o, "query_index.bin", (size_t)(S * Ni * D) * bf), *ki = load(o, "key_index.bin", (size_t)(S * D) * bf);
    void *w = load(o, "weights.bin", (size_t)(S * Ni) * bf);
    int32_t *idx = load(o, "sparse_indices.bin", (size_t)(S * K) * 4);
    void *smax = load(o, "softmax_max.bin", (size_t)(S * N1) * 4), *ssum = load(o, "softmax_sum.bin", (size_t)(S * N1) * 4);
    void *dq = xmalloc((size_t)(S * Ni * D) * bf), *dk = xmalloc((size_t)(S * D) * bf), *dw = xmalloc((size_t)(S * Ni) * bf);
    float loss = 0.0f;

    const int64_t sq[] = {1, S, N1, Dm}, sk[] = {1, S, 1, Dm}, sqr[] = {1, S, N1, Dr}, skr[] = {1, S, 1, Dr};
    const int64_t sqi[] = {1, S, Ni, D}, ski[] = {1, S, 1, D}, sw[] = {1, S, Ni}, si[] = {1, S, 1, K};
    const int64_t sst[] = {1, 1, S, N1}, sl[] = {1};
    lig_tensor *tq = tensor(q, LIG_BFLOAT16, 4, sq), *tk = tensor(k, LIG_BFLOAT16, 4, sk);
    lig_tensor *tqr = Dr ? tensor(qr, LIG_BFLOAT16, 4, sqr) : NULL, *tkr = Dr ? tensor(kr, LIG_BFLOAT16, 4, skr) : NULL;
    lig_tensor *tqi = tensor(qi, LIG_BFLOAT16, 4, sqi), *tki = tensor(ki, LIG_BFLOAT16, 4, ski);
    lig_tensor *tw = tensor(w, LIG_BFLOAT16, 3, sw), *ti = tensor(idx, LIG_INT32, 4, si);
    lig_tensor *tmax = tensor(smax, LIG_FLOAT32, 4, sst), *tsum = tensor(ssum, LIG_FLOAT32, 4, sst);
    lig_tensor *tdq = tensor(dq, LIG_BFLOAT16, 4, sqi), *tdk = tensor(dk, LIG_BFLOAT16, 4, ski);
    lig_tensor *tdw = tensor(dw, LIG_BFLOAT16, 3, sw), *tl = tensor(&loss, LIG_FLOAT32, 1, sl);

    int64_t counted = 0; /* causal: slot j of row t counts when 0 <= idx <= t */
    for (int64_t t = 0; t < S; t++)
        for (int64_t j = 0; j < K; j++) counted += idx[t * K + j] >= 0 && idx[t * K + j] <= t;
    const double flops = (double)counted * (2.0 * (double)(N1 * (Dm + Dr)) + 8.0 * (double)(Ni * D));

    lig_set_num_threads(o->threads);
    /* --det 2: each rep runs non-deterministic then deterministic, so both see the same load (the
     * ratio of interleaved medians); the last run, whose outputs are hashed, is deterministic. */
    double times[MAX_REPS], times_nd[MAX_REPS], cpu[MAX_REPS], cpu_nd[MAX_REPS];
    uint64_t ws_max = 0;
    char *ws = NULL;
    static char set[64];
    for (int r = -1; r < o->reps; r++) { /* r = -1: the warm-up */
        for (int pass = o->det == 2 ? 0 : 1; pass < 2; pass++) {
            const bool det = o->det == 2 ? pass == 1 : o->det != 0;
            lig_executor *ex = NULL;
            uint64_t ws_size = 0;
            check(lig_sparse_indexer_grad_kl_loss_get_workspace_size(
                      tq, tk, tqi, tki, tw, ti, tmax, tsum, NULL, tqr, tkr, NULL, NULL, o->scale, "BSND", 3, INT64_MAX,
                      INT64_MAX, LIG_KL_TARGET_HEAD_MEAN, det, tdq, tdk, tdw, tl, &ws_size, &ex),
                  "lig_sparse_indexer_grad_kl_loss_get_workspace_size");
            snprintf(set, sizeof set, "%s", lig_executor_kernel_set(ex));
            if (ws_size > ws_max) {
                free(ws);
                ws = xmalloc((size_t)ws_size);
                memset(ws, 0, (size_t)ws_size); /* touched: page faults stay outside the timing */
                ws_max = ws_size;
            }
            const double t0 = now(), c0 = cpu_now();
            check(lig_sparse_indexer_grad_kl_loss(ws, ws_size, ex, NULL), "lig_sparse_indexer_grad_kl_loss");
            const double t1 = now(), c1 = cpu_now();
            if (r >= 0) {
                (o->det == 2 && pass == 0 ? times_nd : times)[r] = t1 - t0;
                (o->det == 2 && pass == 0 ? cpu_nd : cpu)[r] = c1 - c0;
            }
        }
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double sorted[MAX_REPS];
    const double median = median_of(times, o->reps, sorted);

    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv1a(h, &loss, sizeof loss);
    h = fnv1a(h, dq, (size_t)(S * Ni * D) * bf);
    h = fnv1a(h, dk, (size_t)(S * D) * bf);
    h = fnv1a(h, dw, (size_t)(S * Ni) * bf);
    if (o->dump) {
        save(o, "lig_dq.bin", dq, (size_t)(S * Ni * D) * bf);
        save(o, "lig_dk.bin", dk, (size_t)(S * D) * bf);
        save(o, "lig_dw.bin", dw, (size_t)(S * Ni) * bf);
    }
    printf("{\"kernel_set\": \"%s\", \"threads\": %d, \"det\": %d, \"reps\": %d, \"median_s\": %.6f, \"min_s\": %.6f, "
           "\"times\": [",
           set, o->threads, o->det, o->reps, median, sorted[0]);
    for (int r = 0; r < o->reps; r++) printf("%s%.6f", r ? ", " : "", times[r]);
    double scratch[MAX_REPS];
    printf("], \"median_cpu_s\": %.6f, \"cpu_times\": [", median_of(cpu, o->reps, scratch));
    for (int r = 0; r < o->reps; r++) printf("%s%.6f", r ? ", " : "", cpu[r]);
    if (o->det == 2) {
        printf("], \"median_nondet_s\": %.6f, \"times_nondet\": [", median_of(times_nd, o->reps, scratch));
        for (int r = 0; r < o->reps; r++) printf("%s%.6f", r ? ", " : "", times_nd[r]);
        printf("], \"median_nondet_cpu_s\": %.6f, \"cpu_times_nondet\": [", median_of(cpu_nd, o->reps, scratch));
        for (int r = 0; r < o->reps; r++) printf("%s%.6f", r ? ", " : "", cpu_nd[r]);
    }
    printf("], \"workspace_bytes\": %llu, \"peak_rss_kib\": %ld, \"loss\": %.9g, \"counted_slots\": %lld, "
           "\"flops\": %.6g, \"gflops\": %.3f, \"hash\": \"%016llx\"}\n",
           (unsigned long long)ws_max, ru.ru_maxrss, (double)loss, (long long)counted, flops, flops / median * 1e-9,
           (unsigned long long)h);
    lig_tensor *all[] = {tq, tk, tqr, tkr, tqi, tki, tw, ti, tmax, tsum, tdq, tdk, tdw, tl};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) lig_destroy_tensor(all[i]);
    void *bufs[] = {q, k, qr, kr, qi, ki, w, idx, smax, ssum, dq, dk, dw, ws};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    return 0;
}

int main(int argc, char **argv) {
    options o = {.S = 4096, .N1 = 128, .Dm = 512, .Dr = 64, .Ni = 64, .D = 128, .K = 2048, .scale = 0.0,
                 .threads = 1, .det = 1, .reps = 5};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int64_t *field = !strcmp(a, "--seq")         ? &o.S
                         : !strcmp(a, "--heads")     ? &o.N1
                         : !strcmp(a, "--dm")        ? &o.Dm
                         : !strcmp(a, "--dr")        ? &o.Dr
                         : !strcmp(a, "--idx-heads") ? &o.Ni
                         : !strcmp(a, "--dim")       ? &o.D
                         : !strcmp(a, "--topk")      ? &o.K
                                                     : NULL;
        if (!strcmp(a, "--dump") || !strcmp(a, "--workspace-sweep")) {
            *(a[2] == 'd' ? &o.dump : &o.sweep) = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "lig-kl-bench: %s needs a value (see the comment at the top of kl_loss_bench.c)\n", a);
            return 2;
        }
        i++;
        if (field) *field = atoll(v);
        else if (!strcmp(a, "--data")) o.data = v;
        else if (!strcmp(a, "--scale")) o.scale = atof(v);
        else if (!strcmp(a, "--threads")) o.threads = atoi(v);
        else if (!strcmp(a, "--det")) o.det = atoi(v);
        else if (!strcmp(a, "--reps")) o.reps = atoi(v);
        else if (!strcmp(a, "--peaks")) o.peaks = v;
        else {
            fprintf(stderr, "lig-kl-bench: unknown option %s\n", a);
            return 2;
        }
    }
    if (o.peaks) return run_peaks(o.peaks);
    if (o.sweep) return run_workspace_sweep(o);
    if (!o.data || o.reps < 1 || o.reps > MAX_REPS || o.threads < 1 || o.scale <= 0.0) {
        fprintf(stderr, "lig-kl-bench: needs --data DIR, --scale > 0, --threads >= 1, 1 <= --reps <= %d\n", MAX_REPS);
        return 2;
    }
    return run_bench(&o);
}

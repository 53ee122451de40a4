/* lig-kl-bench: times lig_sparse_indexer_kl_loss (contract 2.5, the fused KL loss with the main
 * attention's target) on inputs prepared by bench/run_kl_bench.py, one configuration per process
 * (so the peak RSS is this configuration's own), and measures the unit peaks for the report.
 *
 *   lig-kl-bench --data DIR --seq S --heads N1 --dm Dm --dr Dr --idx-heads Nidx1 --dim D --topk K
 *                --scale SCALE --threads T --det 0|1 --reps R [--dump]
 *   lig-kl-bench --peaks 1,2
 *
 * Problem: B = 1, BSND, bf16, sparse_mode 3 (causal), Nidx2 = 1, INT32 indices, softmax_max and
 * softmax_sum [1,1,S,N1] FLOAT32, target head_mean, d_weights in bf16. DIR holds the raw
 * little-endian inputs (query.bin, key.bin, query_rope.bin, key_rope.bin, query_index.bin,
 * key_index.bin, weights.bin: bf16; sparse_indices.bin: int32; softmax_max.bin, softmax_sum.bin:
 * fp32), written by run_kl_bench.py from a causal top-k and the main attention's own statistics.
 *
 * Timing: phase 1 and the workspace (allocated and touched) are outside; one warm-up, then R timed
 * phase-2 runs. Printed, one JSON object on stdout: the kernel set the plan runs, the times, the
 * workspace size, the process's peak RSS (read after the timings), the loss, the counted slots and
 * flops (2*N1*(Dm+Dr) + 2*Nidx1*D + 6*Nidx1*D per counted slot), and an FNV-1a hash of the
 * outputs (loss, dQ, dK, dW) so the driver can compare runs and thread counts bitwise. --dump
 * writes the outputs to DIR/lig_dq.bin, lig_dk.bin, lig_dw.bin for the driver's checks.
 * --peaks prints the measured peaks of every unit (unit_peaks.c), per thread count, best of 3. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <lig.h>
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
    int threads, det, reps, dump;
    const char *peaks;
} options;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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
            printf("%s{\"unit\": \"%s\", \"label\": \"%s\", \"threads\": %d, \"gflops\": %.2f}", first ? "" : ", ",
                   bench_unit_key(u), bench_unit_label(u), threads, bench_unit_peak_gflops(u, threads, 3));
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
    double times[MAX_REPS];
    uint64_t ws_max = 0, ws_size = 0;
    char *ws = NULL;
    const char *set = "";
    for (int r = -1; r < o->reps; r++) { /* r = -1: the warm-up */
        lig_executor *ex = NULL;
        check(lig_sparse_indexer_kl_loss_get_workspace_size(tq, tk, tqi, tki, tw, ti, tmax, tsum, NULL, tqr, tkr, NULL,
                                                            NULL, o->scale, "BSND", 3, INT64_MAX, INT64_MAX,
                                                            LIG_KL_TARGET_HEAD_MEAN, o->det != 0, tdq, tdk, tdw, tl,
                                                            &ws_size, &ex),
              "lig_sparse_indexer_kl_loss_get_workspace_size");
        set = lig_executor_kernel_set(ex);
        if (ws_size > ws_max) {
            free(ws);
            ws = xmalloc((size_t)ws_size);
            memset(ws, 0, (size_t)ws_size); /* touched: page faults stay outside the timing */
            ws_max = ws_size;
        }
        static char set_copy[64];
        snprintf(set_copy, sizeof set_copy, "%s", set);
        set = set_copy;
        const double t0 = now();
        check(lig_sparse_indexer_kl_loss(ws, ws_size, ex, NULL), "lig_sparse_indexer_kl_loss");
        const double t1 = now();
        if (r >= 0) times[r] = t1 - t0;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double sorted[MAX_REPS];
    memcpy(sorted, times, sizeof(double) * (size_t)o->reps);
    qsort(sorted, (size_t)o->reps, sizeof(double), cmp_double);
    const double median = o->reps % 2 ? sorted[o->reps / 2] : 0.5 * (sorted[o->reps / 2 - 1] + sorted[o->reps / 2]);

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
        if (!strcmp(a, "--dump")) {
            o.dump = 1;
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
    if (!o.data || o.reps < 1 || o.reps > MAX_REPS || o.threads < 1 || o.scale <= 0.0) {
        fprintf(stderr, "lig-kl-bench: needs --data DIR, --scale > 0, --threads >= 1, 1 <= --reps <= %d\n", MAX_REPS);
        return 2;
    }
    return run_bench(&o);
}

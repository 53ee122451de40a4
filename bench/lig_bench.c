/* lig-bench: times lig_indexer_grad on DeepSeek-V3.2-shaped problems and reports GFLOP/s as
 * a fraction of the machine's fp32 FMA peak, measured in the same run.
 *
 * Each configuration runs in a forked child, so that its peak RSS is its own. Per
 * configuration: one warm-up, then --reps timed runs of phase 2 (phase 1 and the workspace
 * allocation are outside the timing); the median is reported.
 *
 *   lig-bench [--seq 2048[,4096...]] [--heads 64] [--kv-heads 1] [--dim 128] [--topk 2048]
 *             [--dtype bf16|fp16|fp32] [--threads 1,2] [--det 1|0|both] [--reps 5] [--json]
 */
#include <lig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fma_peak.h"

#define MAX_LIST 32

typedef struct options {
    int64_t seq[MAX_LIST];
    int n_seq;
    int threads[MAX_LIST];
    int n_threads;
    int det[2];
    int n_det;
    int64_t N1, N2, D, K;
    lig_dtype dtype;
    int reps;
    int json;
} options;

typedef struct result {
    double median_s, gflops;
    int64_t counted;
    uint64_t workspace;
    long peak_rss_kib;
    int ok;
    char error[256];
} result;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng = 0x1234567;
static uint64_t next_u64(void) {
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static const char *dtype_name(lig_dtype t) { return t == LIG_BFLOAT16 ? "bf16" : t == LIG_FLOAT16 ? "fp16" : "fp32"; }

/* Fills a float tensor of n elements with small random values in the given dtype. */
static void fill(void *data, lig_dtype t, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) {
        float f = scale * (float)((double)(next_u64() >> 11) * 0x1p-53 * 2.0 - 1.0);
        if (t == LIG_FLOAT32) {
            ((float *)data)[i] = f;
        } else {
            /* a value exactly representable in both 16-bit formats: rounding mode is moot */
            uint32_t x;
            f = (float)((int)(f * 64.0f)) / 64.0f;
            memcpy(&x, &f, 4);
            if (t == LIG_BFLOAT16) {
                ((uint16_t *)data)[i] = (uint16_t)(x >> 16);
            } else {
                const uint32_t sign = (x >> 16) & 0x8000u;
                const int e = (int)((x >> 23) & 0xff) - 127 + 15;
                const uint32_t m = (x >> 13) & 0x3ffu;
                ((uint16_t *)data)[i] = (uint16_t)((x & 0x7fffffffu) == 0 ? sign : sign | ((uint32_t)e << 10) | m);
            }
        }
    }
}

/* Row t selects min(t+1, K) distinct causal keys (Floyd's sampling), then -1: the counts of a
 * real top-k under sparse_mode 3. Returns the counted slots. */
static int64_t fill_indices(int32_t *idx, int64_t S, int64_t K, unsigned char *seen) {
    int64_t counted = 0;
    for (int64_t t = 0; t < S; t++) {
        int32_t *row = idx + t * K;
        const int64_t visible = t + 1, take = visible < K ? visible : K;
        int64_t n = 0;
        for (int64_t j = visible - take; j < visible; j++) {
            int64_t s = (int64_t)(next_u64() % (uint64_t)(j + 1));
            if (seen[s]) s = j;
            seen[s] = 1;
            row[n++] = (int32_t)s;
        }
        for (int64_t j = 0; j < n; j++) seen[row[j]] = 0;
        for (int64_t j = n; j < K; j++) row[j] = -1;
        counted += take;
    }
    return counted;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void run_config(const options *o, int64_t S, int threads, int det, result *r) {
    memset(r, 0, sizeof *r);
    lig_set_num_threads(threads);
    const int64_t B = 1, N1 = o->N1, N2 = o->N2, D = o->D, K = o->K;
    const size_t es = o->dtype == LIG_FLOAT32 ? 4 : 2;
    const size_t nq = (size_t)(B * S * N1 * D), nk = (size_t)(B * S * N2 * D), nw = (size_t)(B * S * N1),
                 ni = (size_t)(B * S * N2 * K);
    void *q = malloc(es * nq), *k = malloc(es * nk), *w = malloc(es * nw), *dy = malloc(es * ni);
    void *dq = malloc(es * nq), *dk = malloc(es * nk), *dw = malloc(es * nw);
    int32_t *idx = malloc(4 * ni);
    unsigned char *seen = calloc((size_t)S, 1);
    if (!q || !k || !w || !dy || !dq || !dk || !dw || !idx || !seen) {
        snprintf(r->error, sizeof r->error, "out of memory for the inputs");
        return;
    }
    fill(q, o->dtype, nq, 1.0f);
    fill(k, o->dtype, nk, 1.0f);
    fill(w, o->dtype, nw, 0.05f);
    fill(dy, o->dtype, ni, 0.01f);
    r->counted = 0;
    for (int64_t g = 0; g < N2; g++) { /* every key head selects its own keys */
        int32_t *tmp = malloc(4 * (size_t)(S * K));
        r->counted += fill_indices(tmp, S, K, seen);
        for (int64_t t = 0; t < S; t++) memcpy(idx + (t * N2 + g) * K, tmp + t * K, 4 * (size_t)K);
        free(tmp);
    }
    const int64_t qs[] = {B, S, N1, D}, ks[] = {B, S, N2, D}, ws[] = {B, S, N1}, is[] = {B, S, N2, K};
    lig_tensor *tq = lig_create_tensor(q, o->dtype, 4, qs, NULL), *tk = lig_create_tensor(k, o->dtype, 4, ks, NULL);
    lig_tensor *tw = lig_create_tensor(w, o->dtype, 3, ws, NULL), *tdy = lig_create_tensor(dy, o->dtype, 4, is, NULL);
    lig_tensor *ti = lig_create_tensor(idx, LIG_INT32, 4, is, NULL);
    lig_tensor *tdq = lig_create_tensor(dq, o->dtype, 4, qs, NULL), *tdk = lig_create_tensor(dk, o->dtype, 4, ks, NULL);
    lig_tensor *tdw = lig_create_tensor(dw, o->dtype, 3, ws, NULL);
    double times[256];
    const int reps = o->reps < 1 ? 1 : o->reps > 255 ? 255 : o->reps;
    void *workspace = NULL;
    for (int rep = -1; rep < reps; rep++) { /* rep -1 is the warm-up */
        lig_executor *e = NULL;
        lig_status st = lig_indexer_grad_get_workspace_size(tq, tk, tdy, ti, tw, NULL, NULL, N1, "BSND", 3, INT64_MAX,
                                                            INT64_MAX, det, tdq, tdk, tdw, &r->workspace, &e);
        if (st == LIG_SUCCESS && !workspace && r->workspace) {
            workspace = malloc(r->workspace);
            if (!workspace) {
                lig_destroy_executor(e);
                snprintf(r->error, sizeof r->error, "out of memory for the workspace");
                return;
            }
            memset(workspace, 0, r->workspace); /* fault the pages in before timing */
        }
        const double t0 = now();
        if (st == LIG_SUCCESS) st = lig_indexer_grad(workspace, r->workspace, e, NULL);
        const double dt = now() - t0;
        if (st != LIG_SUCCESS) {
            snprintf(r->error, sizeof r->error, "%s", lig_get_last_error());
            return;
        }
        if (rep >= 0) times[rep] = dt;
    }
    qsort(times, (size_t)reps, sizeof times[0], cmp_double);
    r->median_s = reps % 2 ? times[reps / 2] : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);
    r->gflops = 6.0 * (double)(N1 / N2) * (double)D * (double)r->counted / r->median_s * 1e-9;
    r->ok = 1;
}

/* Runs one configuration in a child process; its peak RSS comes back through wait4. */
static void run_isolated(const options *o, int64_t S, int threads, int det, result *r) {
    int fd[2];
    memset(r, 0, sizeof *r);
    if (pipe(fd) != 0) {
        snprintf(r->error, sizeof r->error, "pipe failed");
        return;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        result child;
        run_config(o, S, threads, det, &child);
        ssize_t n = write(fd[1], &child, sizeof child);
        _exit(n == (ssize_t)sizeof child ? 0 : 1);
    }
    close(fd[1]);
    ssize_t got = read(fd[0], r, sizeof *r);
    close(fd[0]);
    int status = 0;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    if (got != (ssize_t)sizeof *r) {
        memset(r, 0, sizeof *r);
        snprintf(r->error, sizeof r->error, "child died (status %d): out of memory?", status);
    }
    r->peak_rss_kib = ru.ru_maxrss;
}

static int parse_list(const char *s, int64_t *out, int cap) {
    int n = 0;
    while (*s && n < cap) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v < 1) return -1;
        out[n++] = v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return -1;
    }
    return n;
}

static void usage(void) {
    fprintf(stderr, "usage: lig-bench [--seq 2048[,4096..]] [--heads 64] [--kv-heads 1] [--dim 128] [--topk 2048]\n"
                    "                 [--dtype bf16|fp16|fp32] [--threads 1,2] [--det 1|0|both] [--reps 5] [--json]\n");
    exit(2);
}

int main(int argc, char **argv) {
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    options o = {.seq = {2048}, .n_seq = 1, .threads = {1, (int)(cpus > 1 ? cpus : 1)}, .n_threads = cpus > 1 ? 2 : 1,
                 .det = {1, 0}, .n_det = 2, .N1 = 64, .N2 = 1, .D = 128, .K = 2048, .dtype = LIG_BFLOAT16, .reps = 5};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) {
            o.json = 1;
            continue;
        }
        if (i + 1 >= argc) usage();
        const char *v = argv[++i];
        int64_t list[MAX_LIST];
        if (!strcmp(a, "--seq")) {
            if ((o.n_seq = parse_list(v, o.seq, MAX_LIST)) < 1) usage();
        } else if (!strcmp(a, "--threads")) {
            if ((o.n_threads = parse_list(v, list, MAX_LIST)) < 1) usage();
            for (int j = 0; j < o.n_threads; j++) o.threads[j] = (int)list[j];
        } else if (!strcmp(a, "--det")) {
            if (!strcmp(v, "both")) {
                o.n_det = 2;
            } else {
                o.n_det = 1;
                o.det[0] = atoi(v) != 0;
            }
        } else if (!strcmp(a, "--dtype")) {
            o.dtype = !strcmp(v, "fp32") ? LIG_FLOAT32 : !strcmp(v, "fp16") ? LIG_FLOAT16 : LIG_BFLOAT16;
            if (strcmp(v, "fp32") && strcmp(v, "fp16") && strcmp(v, "bf16")) usage();
        } else {
            long long x = atoll(v);
            if (x < 1) usage();
            if (!strcmp(a, "--heads")) o.N1 = x;
            else if (!strcmp(a, "--kv-heads")) o.N2 = x;
            else if (!strcmp(a, "--dim")) o.D = x;
            else if (!strcmp(a, "--topk")) o.K = x;
            else if (!strcmp(a, "--reps")) o.reps = (int)x;
            else usage();
        }
    }
    double peak[MAX_LIST];
    for (int j = 0; j < o.n_threads; j++) peak[j] = lig_bench_fma_peak_gflops(o.threads[j]);
    if (o.json) printf("{\"lig_version\": \"%s\", \"results\": [\n", lig_version());
    else {
        printf("lig %s LightningIndexerGrad bench | N1=%lld N2=%lld D=%lld K=%lld %s sparse_mode=3 S1=S2 | median of %d\n",
               lig_version(), (long long)o.N1, (long long)o.N2, (long long)o.D, (long long)o.K, dtype_name(o.dtype), o.reps);
        for (int j = 0; j < o.n_threads; j++)
            printf("measured fp32 FMA peak, %d thread%s: %.1f GFLOP/s\n", o.threads[j], o.threads[j] > 1 ? "s" : "", peak[j]);
        printf("%8s %7s %5s %10s %10s %8s %12s %12s\n", "S", "threads", "det", "median s", "GFLOP/s", "% peak",
               "workspace MiB", "peak RSS MiB");
    }
    int first = 1;
    for (int si = 0; si < o.n_seq; si++)
        for (int j = 0; j < o.n_threads; j++)
            for (int d = 0; d < o.n_det; d++) {
                result r;
                run_isolated(&o, o.seq[si], o.threads[j], o.det[d], &r);
                const double pct = r.ok ? 100.0 * r.gflops / peak[j] : 0.0;
                if (o.json) {
                    printf("%s  {\"S\": %lld, \"N1\": %lld, \"N2\": %lld, \"D\": %lld, \"K\": %lld, \"dtype\": \"%s\", "
                           "\"threads\": %d, \"deterministic\": %s, \"ok\": %s, \"median_s\": %.6f, \"gflops\": %.3f, "
                           "\"peak_gflops\": %.3f, \"percent_of_peak\": %.2f, \"counted_slots\": %lld, "
                           "\"workspace_bytes\": %llu, \"peak_rss_kib\": %ld, \"error\": \"%s\"}",
                           first ? "" : ",\n", (long long)o.seq[si], (long long)o.N1, (long long)o.N2, (long long)o.D,
                           (long long)o.K, dtype_name(o.dtype), o.threads[j], o.det[d] ? "true" : "false",
                           r.ok ? "true" : "false", r.median_s, r.gflops, peak[j], pct, (long long)r.counted,
                           (unsigned long long)r.workspace, r.peak_rss_kib, r.error);
                    first = 0;
                } else if (r.ok) {
                    printf("%8lld %7d %5s %10.4f %10.1f %7.1f%% %12.1f %12.1f\n", (long long)o.seq[si], o.threads[j],
                           o.det[d] ? "yes" : "no", r.median_s, r.gflops, pct, (double)r.workspace / 1048576.0,
                           (double)r.peak_rss_kib / 1024.0);
                } else {
                    printf("%8lld %7d %5s  failed: %s\n", (long long)o.seq[si], o.threads[j], o.det[d] ? "yes" : "no",
                           r.error);
                }
                fflush(stdout);
            }
    if (o.json) printf("\n]}\n");
    return 0;
}

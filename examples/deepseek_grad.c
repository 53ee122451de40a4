/* End-to-end check on DeepSeek-V3.2's indexer shape: N1 = 64 heads, one key head, D = 128,
 * top-k K = 2048, bf16, right-down causal. Builds a problem, runs lig_indexer_grad, times it,
 * and checks sampled rows of dQ/dW and sampled keys of dK against a float64 evaluation of the
 * formulas of contract 2.2 written here from scratch.
 *
 *   lig-deepseek-grad [--seq S] [--batch B] [--heads N1] [--dim D] [--topk K] [--threads T]
 *                     [--reps R] [--nondeterministic]
 */
#define _POSIX_C_SOURCE 200809L
#include <lig.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct options {
    int64_t B, S, N1, D, K;
    int threads, reps;
    bool deterministic;
} options;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t next_u64(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double uniform(void) { return (double)(next_u64() >> 11) * 0x1p-53; }

/* bf16 by truncation after rounding to nearest even; inputs here are finite */
static uint16_t to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}
static double from_bf16(uint16_t h) {
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* Raises *err to max |got - ref| and *max to max |ref| over n values, got in bf16. The bf16 values
 * are widened into `wide` by a loop of their own: gcc 12's aarch64 vectoriser (-O3) stops with an
 * internal compiler error in vect_transform_reduction on an fmax reduction into a double whose
 * operand is widened in the same loop (bf16 -> float -> double here; int -> double does it too), as
 * the loop that used to compare dK did. An fmax reduction over doubles alone vectorises. The maxima
 * are exact, so the order they are taken in does not change them. */
static void max_errors(const uint16_t *got, const double *ref, int64_t n, double *wide, double *err, double *max) {
    for (int64_t i = 0; i < n; i++) wide[i] = from_bf16(got[i]);
    double e = *err, m = *max;
    for (int64_t i = 0; i < n; i++) {
        e = fmax(e, fabs(wide[i] - ref[i]));
        m = fmax(m, fabs(ref[i]));
    }
    *err = e;
    *max = m;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s [--seq S] [--batch B] [--heads N1] [--dim D] [--topk K] [--threads T] [--reps R] "
            "[--nondeterministic]\n",
            argv0);
    exit(2);
}

static options parse(int argc, char **argv) {
    options o = {.B = 1, .S = 4096, .N1 = 64, .D = 128, .K = 2048, .threads = 0, .reps = 3, .deterministic = true};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--nondeterministic")) {
            o.deterministic = false;
            continue;
        }
        if (i + 1 >= argc) usage(argv[0]);
        long long v = atoll(argv[++i]);
        if (v < 1) usage(argv[0]);
        if (!strcmp(a, "--seq")) o.S = v;
        else if (!strcmp(a, "--batch")) o.B = v;
        else if (!strcmp(a, "--heads")) o.N1 = v;
        else if (!strcmp(a, "--dim")) o.D = v;
        else if (!strcmp(a, "--topk")) o.K = v;
        else if (!strcmp(a, "--threads")) o.threads = (int)v;
        else if (!strcmp(a, "--reps")) o.reps = (int)v;
        else usage(argv[0]);
    }
    return o;
}

int main(int argc, char **argv) {
    const options o = parse(argc, argv);
    const int64_t B = o.B, S = o.S, N1 = o.N1, D = o.D, K = o.K;
    if (o.threads) lig_set_num_threads(o.threads);
    printf("lig %s | LightningIndexerGrad | B=%lld S1=S2=%lld N1=%lld N2=1 D=%lld K=%lld bf16 sparse_mode=3 "
           "%s | %d threads\n",
           lig_version(), (long long)B, (long long)S, (long long)N1, (long long)D, (long long)K,
           o.deterministic ? "deterministic" : "non-deterministic", lig_get_num_threads());

    const size_t nq = (size_t)(B * S * N1 * D), nk = (size_t)(B * S * D), nw = (size_t)(B * S * N1),
                 ni = (size_t)(B * S * K);
    uint16_t *q = malloc(2 * nq), *k = malloc(2 * nk), *w = malloc(2 * nw), *dy = malloc(2 * ni);
    uint16_t *dq = malloc(2 * nq), *dk = malloc(2 * nk), *dw = malloc(2 * nw);
    int32_t *idx = malloc(4 * ni);
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)S);
    if (!q || !k || !w || !dy || !dq || !dk || !dw || !idx || !perm) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < nq; i++) q[i] = to_bf16((float)(uniform() * 2 - 1));
    for (size_t i = 0; i < nk; i++) k[i] = to_bf16((float)(uniform() * 2 - 1));
    for (size_t i = 0; i < nw; i++) w[i] = to_bf16((float)(uniform() / (double)N1));
    for (size_t i = 0; i < ni; i++) dy[i] = to_bf16((float)(uniform() * 2 - 1) * 1e-3f);
    /* each row selects min(t+1, K) distinct visible keys (a random top-k), then -1 padding */
    int64_t counted = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < S; t++) {
            const int64_t visible = t + 1, take = visible < K ? visible : K;
            for (int64_t s = 0; s < visible; s++) perm[s] = s;
            for (int64_t j = 0; j < take; j++) { /* partial Fisher-Yates */
                int64_t r = j + (int64_t)(next_u64() % (uint64_t)(visible - j));
                int64_t tmp = perm[j];
                perm[j] = perm[r];
                perm[r] = tmp;
            }
            int32_t *row = idx + (b * S + t) * K;
            for (int64_t j = 0; j < K; j++) row[j] = j < take ? (int32_t)perm[j] : -1;
            counted += take;
        }

    const int64_t qs[] = {B, S, N1, D}, ks[] = {B, S, 1, D}, wsh[] = {B, S, N1}, is[] = {B, S, K};
    lig_tensor *tq = lig_create_tensor(q, LIG_BFLOAT16, 4, qs, NULL), *tk = lig_create_tensor(k, LIG_BFLOAT16, 4, ks, NULL);
    lig_tensor *tw = lig_create_tensor(w, LIG_BFLOAT16, 3, wsh, NULL), *tdy = lig_create_tensor(dy, LIG_BFLOAT16, 3, is, NULL);
    lig_tensor *ti = lig_create_tensor(idx, LIG_INT32, 3, is, NULL);
    lig_tensor *tdq = lig_create_tensor(dq, LIG_BFLOAT16, 4, qs, NULL), *tdk = lig_create_tensor(dk, LIG_BFLOAT16, 4, ks, NULL);
    lig_tensor *tdw = lig_create_tensor(dw, LIG_BFLOAT16, 3, wsh, NULL);

    double *times = malloc(sizeof(double) * (size_t)o.reps);
    uint64_t ws_size = 0;
    void *workspace = NULL;
    for (int rep = 0; rep < o.reps; rep++) {
        lig_executor *exec = NULL;
        lig_status st = lig_indexer_grad_get_workspace_size(tq, tk, tdy, ti, tw, NULL, NULL, N1, "BSND", 3, INT64_MAX,
                                                            INT64_MAX, o.deterministic, tdq, tdk, tdw, &ws_size, &exec);
        if (st == LIG_SUCCESS && rep == 0) printf("kernels: %s (kernel sets on this CPU: %s)\n", lig_executor_kernel_set(exec), lig_kernel_sets());
        if (st == LIG_SUCCESS && !workspace && ws_size) workspace = malloc(ws_size);
        double t0 = now();
        if (st == LIG_SUCCESS) st = lig_indexer_grad(workspace, ws_size, exec, NULL);
        double dt = now() - t0;
        if (st != LIG_SUCCESS) {
            fprintf(stderr, "lig failed: %s: %s\n", lig_status_string(st), lig_get_last_error());
            return 1;
        }
        times[rep] = dt;
        const double flops = 6.0 * (double)N1 * (double)D * (double)counted;
        printf("  run %d: %.3f s, %.1f GFLOP/s (%lld counted slots, 6*G*D flops each)\n", rep + 1, dt, flops / dt * 1e-9,
               (long long)counted);
    }
    printf("workspace: %.1f MiB\n", (double)ws_size / (1 << 20));

    /* float64 check: sampled rows for dQ/dW, sampled keys for dK */
    double err_q = 0, max_q = 0, err_w = 0, max_w = 0, err_k = 0, max_k = 0;
    double *sc = malloc(sizeof(double) * (size_t)N1), *dqr = malloc(sizeof(double) * (size_t)(N1 * D));
    double *dkr = malloc(sizeof(double) * (size_t)D);
    double *wide = malloc(sizeof(double) * (size_t)(N1 * D)); /* max_errors' scratch: N1 * D >= N1, D */
    const int samples = 24;
    for (int n = 0; n < samples; n++) {
        const int64_t b = (int64_t)(next_u64() % (uint64_t)B);
        const int64_t t = n == 0 ? S - 1 : (int64_t)(next_u64() % (uint64_t)S);
        const uint16_t *qr = q + (b * S + t) * N1 * D;
        memset(dqr, 0, sizeof(double) * (size_t)(N1 * D));
        memset(sc, 0, sizeof(double) * (size_t)N1);
        for (int64_t j = 0; j < K; j++) {
            const int32_t s = idx[(b * S + t) * K + j];
            if (s < 0) continue;
            const uint16_t *kr = k + (b * S + s) * D;
            const double g = from_bf16(dy[(b * S + t) * K + j]);
            for (int64_t h = 0; h < N1; h++) {
                double dot = 0;
                for (int64_t d = 0; d < D; d++) dot += from_bf16(qr[h * D + d]) * from_bf16(kr[d]);
                if (dot <= 0) continue;
                sc[h] += dot * g;
                const double a = from_bf16(w[(b * S + t) * N1 + h]) * g;
                for (int64_t d = 0; d < D; d++) dqr[h * D + d] += a * from_bf16(kr[d]);
            }
        }
        max_errors(dw + (b * S + t) * N1, sc, N1, wide, &err_w, &max_w);
        max_errors(dq + (b * S + t) * N1 * D, dqr, N1 * D, wide, &err_q, &max_q);
        /* dK of key s: every (row, slot) that selected it */
        const int64_t s = (int64_t)(next_u64() % (uint64_t)S);
        memset(dkr, 0, sizeof(double) * (size_t)D);
        for (int64_t tt = s; tt < S; tt++)
            for (int64_t j = 0; j < K; j++) {
                if (idx[(b * S + tt) * K + j] != s) continue;
                const double g = from_bf16(dy[(b * S + tt) * K + j]);
                for (int64_t h = 0; h < N1; h++) {
                    const uint16_t *qh = q + ((b * S + tt) * N1 + h) * D;
                    double dot = 0;
                    for (int64_t d = 0; d < D; d++) dot += from_bf16(qh[d]) * from_bf16(k[(b * S + s) * D + d]);
                    if (dot <= 0) continue;
                    const double a = from_bf16(w[(b * S + tt) * N1 + h]) * g;
                    for (int64_t d = 0; d < D; d++) dkr[d] += a * from_bf16(qh[d]);
                }
            }
        max_errors(dk + (b * S + s) * D, dkr, D, wide, &err_k, &max_k);
    }
    const double rq = err_q / fmax(max_q, 1e-30), rw = err_w / fmax(max_w, 1e-30), rk = err_k / fmax(max_k, 1e-30);
    const bool ok = rq < 1e-2 && rw < 1e-2 && rk < 1e-2;
    printf("float64 check on %d sampled rows and keys: max error / max |ref|  dQ %.2e  dW %.2e  dK %.2e  -> %s\n",
           samples, rq, rw, rk, ok ? "OK" : "MISMATCH");
    for (int i = 1; i < o.reps; i++) /* insertion sort, for the median */
        for (int j = i; j > 0 && times[j] < times[j - 1]; j--) {
            double tmp = times[j];
            times[j] = times[j - 1];
            times[j - 1] = tmp;
        }
    const double median = o.reps % 2 ? times[o.reps / 2] : 0.5 * (times[o.reps / 2 - 1] + times[o.reps / 2]);
    printf("median of %d runs: %.3f s, %.1f GFLOP/s\n", o.reps, median,
           6.0 * (double)N1 * (double)D * (double)counted / median * 1e-9);
    free(times);

    lig_tensor *all[] = {tq, tk, tw, tdy, ti, tdq, tdk, tdw};
    for (int i = 0; i < 8; i++) lig_destroy_tensor(all[i]);
    free(workspace);
    free(q); free(k); free(w); free(dy); free(dq); free(dk); free(dw); free(idx); free(perm);
    free(sc); free(dqr); free(dkr); free(wide);
    return ok ? 0 : 1;
}

/* lig-quant-bench: the quantized forward's prefill (lig_quant_indexer), per kernel set this CPU
 * supports, INT8 and FP8 e4m3, against the measured peak of the unit each engine multiplies on
 * (unit_peaks.c, same run) and against lig's own bf16 forward (lig_indexer) on the same codes.
 *
 * Problem (issue 18's prefill): B = 1, S1 = S2 = S, N1 = 64 query heads on N2 = 1 key head, D = 128,
 * K = 2048, causal (sparse_mode 3), BSND, no query scales (folded into the weights, as DeepSeek
 * does), fp32 key scales and weights. --rows R runs only the last R query rows against all S keys
 * (sparse_mode 3 aligns them bottom-right, so each sees as many keys as in the full problem): the
 * dearest rows, for S = 32768. ops = 2 * N1 * D * (visible keys summed over the rows run): the dot
 * products, counted as the unit peaks count them (2 per multiply-add).
 *
 * Each figure is the median of --runs timed runs after one warm-up, planning excluded (phase 2
 * only), on --threads threads (1 by default), timed in the process's CPU time (--clock cpu, the
 * default: on a machine shared with other work a one-thread figure counts only the time this
 * process ran; the unit peaks are timed the same way) or wall-clock time (--clock wall). Every timed configuration checks sampled rows of its
 * last run against a float64 reference: each returned value within 3e-5 of the reference's
 * magnitude, every index visible, and no key left out scoring above the lowest kept one by more.
 *
 *   lig-quant-bench [--s 4096] [--rows S] [--runs 5] [--threads 1] [--sets scalar,avx2,...]
 *                   [--scalar-rows 128] [--clock cpu|wall] [--codes int8,fp8] [--peer 1]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lig.h"
#include "unit_peaks.h"

enum { N1 = 64, D = 128, K = 2048 };

static int use_cpu_time = 1; /* --clock cpu (default) or wall */

static double seconds(void) {
    struct timespec ts;
    clock_gettime(use_cpu_time ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct rng {
    uint64_t s;
} rng;

static double unit(rng *r) {
    r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(r->s >> 11) * 0x1p-53;
}

static double gaussian(rng *r) {
    const double u = unit(r) + 1e-300, v = unit(r);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* One problem's inputs in both forms: the codes (INT8 or FP8) with their scales, and the same
 * codes' values in bf16 (exact: INT8 integers and every FP8 value are bf16 values). */
typedef struct problem {
    int64_t S, rows; /* keys; the last `rows` query rows are run */
    lig_dtype qk;
    uint8_t *qc, *kc;       /* codes [rows][N1][D], [S][D] */
    float *w, *sk;          /* [rows][N1], [S] */
    uint16_t *qb, *kb, *wb; /* the bf16 forward's operands */
    int32_t *idx;
    float *val;
    double ops;
} problem;

static double code_value(lig_dtype qk, uint8_t c) {
    return qk == LIG_INT8 ? (double)(int8_t)c : (double)lig_float8_e4m3fn_to_float(c);
}

static uint8_t make_code(lig_dtype qk, rng *r) {
    if (qk == LIG_INT8) return (uint8_t)(int8_t)lrint(fmax(-127.0, fmin(127.0, gaussian(r) * 40.0)));
    return lig_float_to_float8_e4m3fn((float)(gaussian(r) * 48.0)); /* saturating: never NaN */
}

/* Query row i of the part run is row S - rows + i of the causal problem: it sees that many + 1 keys. */
static int64_t visible(const problem *P, int64_t i) { return P->S - P->rows + i + 1; }

static int make_problem(problem *P, int64_t S, int64_t rows, lig_dtype qk) {
    memset(P, 0, sizeof *P);
    P->S = S;
    P->rows = rows;
    P->qk = qk;
    const size_t nq = (size_t)(rows * N1 * D), nk = (size_t)(S * D), nw = (size_t)(rows * N1);
    P->qc = malloc(nq), P->kc = malloc(nk);
    P->w = malloc(4 * nw), P->sk = malloc(4 * (size_t)S);
    P->qb = malloc(2 * nq), P->kb = malloc(2 * nk), P->wb = malloc(2 * nw);
    P->idx = malloc(4 * (size_t)(rows * K)), P->val = malloc(4 * (size_t)(rows * K));
    if (!P->qc || !P->kc || !P->w || !P->sk || !P->qb || !P->kb || !P->wb || !P->idx || !P->val) return 0;
    rng r = {0x9b1e5eedull + (uint64_t)qk};
    for (size_t i = 0; i < nq; i++) {
        P->qc[i] = make_code(qk, &r);
        P->qb[i] = lig_float_to_bfloat16((float)code_value(qk, P->qc[i]));
    }
    for (size_t i = 0; i < nk; i++) {
        P->kc[i] = make_code(qk, &r);
        P->kb[i] = lig_float_to_bfloat16((float)code_value(qk, P->kc[i]));
    }
    for (size_t i = 0; i < nw; i++) {
        P->w[i] = (float)(unit(&r) - 0.3);
        P->wb[i] = lig_float_to_bfloat16(P->w[i]);
    }
    for (int64_t s = 0; s < S; s++) P->sk[s] = (float)((qk == LIG_INT8 ? 1.0 / 127.0 : 1.0 / 448.0) * (0.5 + unit(&r)));
    double keys = 0;
    for (int64_t i = 0; i < rows; i++) keys += (double)visible(P, i);
    P->ops = 2.0 * N1 * D * keys;
    return 1;
}

static void free_problem(problem *P) {
    free(P->qc), free(P->kc), free(P->w), free(P->sk), free(P->qb), free(P->kb), free(P->wb), free(P->idx), free(P->val);
}

/* Phase 1 of one run: the quantized forward (bf16 = 0) or the bf16 forward on the same codes. */
static lig_status plan(problem *P, int bf16, lig_tensor **t, uint64_t *ws, lig_executor **e) {
    const int64_t qs[4] = {1, P->rows, N1, D}, ks[4] = {1, P->S, 1, D}, wsh[3] = {1, P->rows, N1};
    const int64_t sks[3] = {1, P->S, 1}, os[4] = {1, P->rows, 1, K};
    t[0] = lig_create_tensor(bf16 ? (void *)P->qb : P->qc, bf16 ? LIG_BFLOAT16 : P->qk, 4, qs, NULL);
    t[1] = lig_create_tensor(bf16 ? (void *)P->kb : P->kc, bf16 ? LIG_BFLOAT16 : P->qk, 4, ks, NULL);
    t[2] = lig_create_tensor(bf16 ? (void *)P->wb : P->w, bf16 ? LIG_BFLOAT16 : LIG_FLOAT32, 3, wsh, NULL);
    t[3] = lig_create_tensor(P->sk, LIG_FLOAT32, 3, sks, NULL);
    t[4] = lig_create_tensor(P->idx, LIG_INT32, 4, os, NULL);
    t[5] = lig_create_tensor(P->val, LIG_FLOAT32, 4, os, NULL);
    if (bf16)
        return lig_indexer_get_workspace_size(t[0], t[1], t[2], NULL, NULL, "BSND", K, 3, INT64_MAX, INT64_MAX, t[4],
                                              t[5], ws, e);
    return lig_quant_indexer_get_workspace_size(t[0], t[1], t[2], NULL, t[3], NULL, NULL, NULL, 0, 0, "BSND", "BSND",
                                                K, 3, INT64_MAX, INT64_MAX, t[4], t[5], ws, e);
}

/* The reference score of key s for part row i, and the magnitude its error is measured against. */
static double ref_score(const problem *P, int bf16, int64_t i, int64_t s, double *mag) {
    double sum = 0.0, m = 0.0;
    for (int h = 0; h < N1; h++) {
        const uint8_t *q = P->qc + (i * N1 + h) * D, *k = P->kc + s * D;
        double dot = 0.0, adot = 0.0;
        for (int d = 0; d < D; d++) {
            const double p = code_value(P->qk, q[d]) * code_value(P->qk, k[d]);
            dot += p;
            adot += fabs(p);
        }
        const double sc = bf16 ? 1.0 : (double)P->sk[s];
        const double w = bf16 ? (double)lig_bfloat16_to_float(P->wb[i * N1 + h]) : (double)P->w[i * N1 + h];
        const double x = sc * dot;
        sum += x > 0 ? w * x : 0.0;
        m += fabs(w) * sc * adot;
    }
    *mag = m;
    return sum;
}

/* Sampled rows of the last run against the reference; 1 when they pass (else a message). */
static int check(const problem *P, int bf16, char *msg, size_t cap) {
    const int64_t sample[2] = {0, P->rows - 1};
    for (int j = 0; j < 2; j++) {
        const int64_t i = sample[j], vis = visible(P, i), kept = vis < K ? vis : K;
        double *ref = malloc(sizeof(double) * (size_t)vis), *mag = malloc(sizeof(double) * (size_t)vis);
        char *sel = calloc((size_t)vis, 1);
        double tol = 0.0, lowest = INFINITY;
        for (int64_t s = 0; s < vis; s++) {
            ref[s] = ref_score(P, bf16, i, s, &mag[s]);
            tol = fmax(tol, 3e-5 * mag[s]);
        }
        int ok = 1;
        for (int64_t slot = 0; slot < K && ok; slot++) {
            const int32_t x = P->idx[i * K + slot];
            if (slot >= kept) {
                ok = x == -1;
                if (!ok) snprintf(msg, cap, "row %lld slot %lld: index %d, expected -1", (long long)i, (long long)slot, x);
                continue;
            }
            if (x < 0 || x >= vis || sel[x]) {
                snprintf(msg, cap, "row %lld slot %lld: index %d not a new visible key (< %lld)", (long long)i,
                         (long long)slot, x, (long long)vis);
                ok = 0;
                break;
            }
            sel[x] = 1;
            if (fabs((double)P->val[i * K + slot] - ref[x]) > tol) {
                snprintf(msg, cap, "row %lld key %d: value %.9g, reference %.9g (tolerance %.3g)", (long long)i, x,
                         (double)P->val[i * K + slot], ref[x], tol);
                ok = 0;
            }
            lowest = fmin(lowest, ref[x]);
        }
        for (int64_t s = 0; s < vis && ok; s++)
            if (!sel[s] && ref[s] > lowest + 2 * tol) {
                snprintf(msg, cap, "row %lld: key %lld (reference %.9g) left out above the lowest kept %.9g",
                         (long long)i, (long long)s, ref[s], lowest);
                ok = 0;
            }
        free(ref), free(mag), free(sel);
        if (!ok) return 0;
    }
    return 1;
}

typedef struct measured {
    double gops;
    char kernels[32];
    int ok;
    char msg[200];
} measured;

static measured time_forward(problem *P, int bf16, int runs) {
    measured m = {0};
    double rates[32];
    if (runs > 32) runs = 32;
    void *ws = NULL;
    uint64_t have = 0;
    for (int r = -1; r < runs; r++) {
        lig_tensor *t[6];
        uint64_t need = 0;
        lig_executor *e = NULL;
        lig_status st = plan(P, bf16, t, &need, &e);
        if (st == LIG_SUCCESS) {
            snprintf(m.kernels, sizeof m.kernels, "%s", lig_executor_kernel_set(e));
            if (need > have) {
                free(ws);
                ws = malloc(need);
                have = need;
                memset(ws, 0, need);
            }
            const double t0 = seconds();
            st = bf16 ? lig_indexer(ws, need, e, NULL) : lig_quant_indexer(ws, need, e, NULL);
            const double dt = seconds() - t0;
            if (r >= 0) rates[r] = P->ops / dt * 1e-9;
        }
        for (int i = 0; i < 6; i++) lig_destroy_tensor(t[i]);
        if (st != LIG_SUCCESS) {
            snprintf(m.msg, sizeof m.msg, "status %d: %s", (int)st, lig_get_last_error());
            free(ws);
            return m;
        }
    }
    free(ws);
    m.gops = bench_median(rates, runs);
    m.ok = check(P, bf16, m.msg, sizeof m.msg);
    return m;
}

/* whether `name` is one of the comma-separated names in `list` */
static int listed(const char *list, const char *name) {
    const size_t n = strlen(name);
    for (const char *p = list; *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
        if (strcspn(p, ",") == n && !strncmp(p, name, n)) return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    int64_t S = 4096, rows = 0, scalar_rows = 128;
    int runs = 5, threads = 1;
    const char *only = NULL, *codes = "int8,fp8";
    int peer = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--s")) S = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--rows")) rows = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--scalar-rows")) scalar_rows = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--runs")) runs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--sets")) only = argv[i + 1];
        else if (!strcmp(argv[i], "--codes")) codes = argv[i + 1];
        else if (!strcmp(argv[i], "--peer")) peer = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--clock")) use_cpu_time = strcmp(argv[i + 1], "wall") != 0;
        else {
            fprintf(stderr, "usage: %s [--s S] [--rows R] [--runs n] [--threads t] [--sets a,b] [--scalar-rows R] [--clock cpu|wall]\n"
                    "       [--codes int8,fp8] [--peer 1|0 (the bf16 forward)]\n",
                    argv[0]);
            return 2;
        }
    }
    if (rows <= 0 || rows > S) rows = S;
    if (S < 1 || runs < 1 || threads < 1 || scalar_rows < 1) {
        fprintf(stderr, "--s, --runs, --threads and --scalar-rows must be positive\n");
        return 2;
    }
    lig_set_num_threads(threads);
    bench_unit_use_cpu_time(use_cpu_time);
    char cpu[128];
    bench_cpu_model(cpu, sizeof cpu);
    printf("CPU: %s | %d thread(s) | prefill S = %lld (last %lld rows), N1 = %d, N2 = 1, D = %d, K = %d, causal | "
           "median of %d runs | %s time\n",
           cpu, threads, (long long)S, (long long)rows, N1, D, K, runs, use_cpu_time ? "process CPU" : "wall-clock");
    printf("measured unit peaks, GOP/s (2 ops per multiply-add; best of 3, %d thread(s)):\n", threads);
    double peak[BENCH_UNIT_COUNT] = {0};
    for (int u = 0; u < BENCH_UNIT_COUNT; u++) {
        if (u == BENCH_UNIT_AMX_BF16 || !bench_unit_available(u)) continue;
        peak[u] = bench_unit_peak_gflops(u, threads, 3);
        printf("  %-20s %8.1f   (%s)\n", bench_unit_label(u), peak[u], bench_unit_instruction(u));
    }
    printf("\n%-11s %-5s %6s %-12s %9s %-20s %7s   %-12s %9s %7s  %s\n", "set", "codes", "rows", "kernels", "GOP/s",
           "unit", "% peak", "bf16 fwd", "GOP/s", "quant/bf16", "check");
    const char *names = lig_kernel_sets();
    char list[256];
    snprintf(list, sizeof list, "%s", names);
    for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
        if (only && !listed(only, name)) continue;
        if (lig_set_kernel_set(name) != LIG_SUCCESS) continue;
        const int64_t r = !strcmp(name, "scalar") && scalar_rows < rows ? scalar_rows : rows;
        for (int c = 0; c < 2; c++) {
            const lig_dtype qk = c ? LIG_FLOAT8_E4M3FN : LIG_INT8;
            if (!listed(codes, c ? "fp8" : "int8")) continue;
            problem P;
            if (!make_problem(&P, S, r, qk)) {
                fprintf(stderr, "out of memory\n");
                return 1;
            }
            const measured q = time_forward(&P, 0, runs), b = peer ? time_forward(&P, 1, runs) : (measured){.ok = 1};
            const int u = qk == LIG_INT8 ? bench_unit_for_i8_kernels(q.kernels) : bench_unit_for_kernel_set(q.kernels);
            printf("%-11s %-5s %6lld %-12s %9.1f %-20s", name, c ? "FP8" : "INT8", (long long)r, q.kernels, q.gops,
                   bench_unit_label(u));
            if (u >= 0 && peak[u] > 0) printf(" %6.1f%%", 100.0 * q.gops / peak[u]);
            else printf(" %7s", "-");
            printf("   %-12s %9.1f %9.2fx  %s%s%s\n", b.kernels, b.gops, b.gops > 0 ? q.gops / b.gops : 0.0,
                   q.ok && b.ok ? "ok" : "FAILED: ", q.ok ? "" : q.msg, b.ok ? "" : b.msg);
            fflush(stdout);
            free_problem(&P);
        }
    }
    lig_set_kernel_set(NULL);
    return 0;
}

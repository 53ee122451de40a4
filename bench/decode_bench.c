/* lig-decode-bench: the forward at decode (issue 18, "Decode"): one step of B sequences x next_n
 * rows against a context of C keys, against the prefill rate of the same forward.
 *
 *   lig-decode-bench [--ctx 65536] [--batch 1] [--next-n 1] [--prefill 4096] [--heads 64] [--dim 128]
 *                    [--topk 2048] [--threads 1,2] [--forms bf16,fp8,int8] [--reps 7] [--no-unsplit]
 *
 * Forms: bf16 = lig_indexer on bf16 q, k, w; fp8 / int8 = lig_quant_indexer on FLOAT8_E4M3FN /
 * INT8 q and k with fp32 per-(token, head) scales (DeepSeek's act_quant: amax / 448, resp. / 127)
 * and fp32 weights. N2 = 1, BSND, sparse_mode 3 (row i of a step sees keys <= C - next_n + i).
 * Data: q, k ~ N(0, 1), w ~ N(0, 1) / sqrt(N1 D), fixed seeds.
 *
 * Timed: phase 2 only (phase 1 outside; one workspace, touched before, for every run), one warm-up, then --reps rounds; the
 * median and the minimum of the wall time, and the median of the process's CPU time (all threads;
 * idle pool threads sleep), which a shared machine's other load hardly changes: cpuxT1 = T x the
 * 1-thread CPU time / the T-thread CPU time is the speedup T threads would give on T free cores.
 * Per form and thread count: the decode step split along the keys (the default plan) and the same
 * step forced unsplit (the planner's hook at 0: one unit per row group, as before the split), run in
 * alternation so that they share the machine's state, then the prefill S x S causal forward (no
 * split: many rows). Rates: decode keys/s = B next_n C /
 * time; prefill key-rows/s = S (S + 1) / 2 / time; the ratio decode / prefill of those rates.
 *
 * Checked (each run's output of the last timed run): every decode row and 3 prefill rows against
 * float64 scores of the inputs as the library read them: indices distinct and visible, values
 * descending, each value within its bound of the reference score, and no unselected key's reference
 * score above the lowest selected one's by more than both bounds. Bound per key: 2 (D + N1 + 4)
 * 2^-24 sum |w sq sk q_d k_d| (contract 2.4; the bf16 sets' products are exact too). A failure is
 * printed and makes the exit status non-zero. Links the static library for the split hook. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <lig.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/operators/fwd_split.h"

#define MAX_REPS 64

typedef enum form { FORM_BF16, FORM_FP8, FORM_INT8, FORMS } form;
static const char *const form_names[FORMS] = {"bf16", "fp8", "int8"};

typedef struct options {
    int64_t ctx, B, next_n, prefill, N1, D, K;
    int threads[8], n_threads;
    int forms[FORMS], n_forms;
    int reps, unsplit;
} options;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static double gaussian(void) {
    double u[2];
    for (int i = 0; i < 2; i++) {
        uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        u[i] = ((double)((z ^ (z >> 31)) >> 11) + 0.5) * 0x1p-53;
    }
    return sqrt(-2.0 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

/* One problem's tensors: rows x N1 queries against S keys, and what the library read, in double. */
typedef struct problem {
    form f;
    int64_t B, S1, S2, N1, D, K;
    void *q, *k, *w, *sq, *sk, *idx, *val;
    double *qd, *kd, *wd, *sqd, *skd; /* decoded; sq / sk all 1 for bf16 */
    lig_tensor *tq, *tk, *tw, *tsq, *tsk, *tidx, *tval;
} problem;

/* x quantized per row of n values: codes and the scale, DeepSeek's act_quant (fp8) or amax / 127. */
static double quantize_row(form f, const double *x, int64_t n, uint8_t *codes, double *decoded) {
    double amax = 1e-4;
    for (int64_t i = 0; i < n; i++) amax = fabs(x[i]) > amax ? fabs(x[i]) : amax;
    const float scale = (float)(amax / (f == FORM_FP8 ? 448.0 : 127.0));
    for (int64_t i = 0; i < n; i++) {
        const float v = (float)x[i] / scale;
        if (f == FORM_FP8) {
            codes[i] = lig_float_to_float8_e4m3fn(v);
            decoded[i] = lig_float8_e4m3fn_to_float(codes[i]);
        } else {
            const long c = lrintf(v);
            const int8_t s = (int8_t)(c > 127 ? 127 : c < -127 ? -127 : c);
            memcpy(&codes[i], &s, 1);
            decoded[i] = s;
        }
    }
    return scale;
}

/* rows = B x S1 query rows (N1 heads), B x S2 key rows, bf16 or quantized. */
static void problem_make(problem *p, form f, int64_t B, int64_t S1, int64_t S2, const options *o) {
    memset(p, 0, sizeof *p);
    *p = (problem){.f = f, .B = B, .S1 = S1, .S2 = S2, .N1 = o->N1, .D = o->D, .K = o->K};
    const int64_t N1 = o->N1, D = o->D, nq = B * S1 * N1, nk = B * S2, esz = f == FORM_BF16 ? 2 : 1;
    p->q = malloc((size_t)(nq * D * esz));
    p->k = malloc((size_t)(nk * D * esz));
    p->w = malloc((size_t)nq * (f == FORM_BF16 ? 2 : 4));
    p->qd = malloc(sizeof(double) * (size_t)(nq * D));
    p->kd = malloc(sizeof(double) * (size_t)(nk * D));
    p->wd = malloc(sizeof(double) * (size_t)nq);
    p->sqd = malloc(sizeof(double) * (size_t)nq);
    p->skd = malloc(sizeof(double) * (size_t)nk);
    double *row = malloc(sizeof(double) * (size_t)D);
    for (int which = 0; which < 2; which++) {
        const int64_t n = which ? nk : nq;
        double *dec = which ? p->kd : p->qd, *sc = which ? p->skd : p->sqd;
        for (int64_t r = 0; r < n; r++) {
            for (int64_t d = 0; d < D; d++) row[d] = gaussian();
            if (f == FORM_BF16) {
                uint16_t *dst = (uint16_t *)(which ? p->k : p->q) + r * D;
                for (int64_t d = 0; d < D; d++) {
                    dst[d] = lig_float_to_bfloat16((float)row[d]);
                    dec[r * D + d] = lig_bfloat16_to_float(dst[d]);
                }
                sc[r] = 1.0;
            } else {
                sc[r] = quantize_row(f, row, D, (uint8_t *)(which ? p->k : p->q) + r * D, dec + r * D);
            }
        }
    }
    free(row);
    const double wscale = 1.0 / sqrt((double)(N1 * D));
    for (int64_t i = 0; i < nq; i++) {
        const float wv = (float)(gaussian() * wscale);
        if (f == FORM_BF16) {
            ((uint16_t *)p->w)[i] = lig_float_to_bfloat16(wv);
            p->wd[i] = lig_bfloat16_to_float(((uint16_t *)p->w)[i]);
        } else {
            ((float *)p->w)[i] = wv;
            p->wd[i] = wv;
        }
    }
    const lig_dtype qk = f == FORM_BF16 ? LIG_BFLOAT16 : f == FORM_FP8 ? LIG_FLOAT8_E4M3FN : LIG_INT8;
    const int64_t qs[4] = {B, S1, N1, D}, ks[4] = {B, S2, 1, D}, ws[3] = {B, S1, N1}, is[4] = {B, S1, 1, o->K};
    const int64_t sks[3] = {B, S2, 1};
    p->tq = lig_create_tensor(p->q, qk, 4, qs, NULL);
    p->tk = lig_create_tensor(p->k, qk, 4, ks, NULL);
    p->tw = lig_create_tensor(p->w, f == FORM_BF16 ? LIG_BFLOAT16 : LIG_FLOAT32, 3, ws, NULL);
    if (f != FORM_BF16) {
        p->sq = malloc(sizeof(float) * (size_t)nq);
        p->sk = malloc(sizeof(float) * (size_t)nk);
        for (int64_t i = 0; i < nq; i++) ((float *)p->sq)[i] = (float)p->sqd[i];
        for (int64_t i = 0; i < nk; i++) ((float *)p->sk)[i] = (float)p->skd[i];
        p->tsq = lig_create_tensor(p->sq, LIG_FLOAT32, 3, ws, NULL);
        p->tsk = lig_create_tensor(p->sk, LIG_FLOAT32, 3, sks, NULL);
    }
    p->idx = malloc(sizeof(int32_t) * (size_t)(B * S1 * o->K));
    p->val = malloc(sizeof(float) * (size_t)(B * S1 * o->K));
    p->tidx = lig_create_tensor(p->idx, LIG_INT32, 4, is, NULL);
    p->tval = lig_create_tensor(p->val, LIG_FLOAT32, 4, is, NULL);
}

static void problem_free(problem *p) {
    lig_tensor *t[] = {p->tq, p->tk, p->tw, p->tsq, p->tsk, p->tidx, p->tval};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) lig_destroy_tensor(t[i]);
    void *m[] = {p->q, p->k, p->w, p->sq, p->sk, p->idx, p->val, p->qd, p->kd, p->wd, p->sqd, p->skd};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) free(m[i]);
}

static lig_status phase1(problem *p, uint64_t *ws, lig_executor **e) {
    if (p->f == FORM_BF16)
        return lig_indexer_get_workspace_size(p->tq, p->tk, p->tw, NULL, NULL, "BSND", p->K, 3, INT64_MAX, INT64_MAX,
                                              p->tidx, p->tval, ws, e);
    return lig_quant_indexer_get_workspace_size(p->tq, p->tk, p->tw, p->tsq, p->tsk, NULL, NULL, NULL, 0, 0, "BSND",
                                                "BSND", p->K, 3, INT64_MAX, INT64_MAX, p->tidx, p->tval, ws, e);
}

static lig_status phase2(problem *p, void *ws, uint64_t size, lig_executor *e) {
    return p->f == FORM_BF16 ? lig_indexer(ws, size, e, NULL) : lig_quant_indexer(ws, size, e, NULL);
}

/* Timings of one configuration: wall seconds and process CPU seconds (every thread's; the pool's
 * threads sleep when idle, so this is the work done whatever else the machine runs). */
typedef struct timing {
    double wall[MAX_REPS], cpu[MAX_REPS];
    int n;
    const char *kernels;
} timing;

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One phase 1 + phase 2 with the split hook at `keys`, timed (phase 2 only) into *t unless warm-up. */
static int run_once(problem *p, int64_t keys, timing *t, int record) {
    lig_fwd_split_set_keys(keys);
    uint64_t size = 0;
    lig_executor *e = NULL;
    if (phase1(p, &size, &e) != LIG_SUCCESS) {
        fprintf(stderr, "phase 1: %s\n", lig_get_last_error());
        return 0;
    }
    t->kernels = lig_executor_kernel_set(e);
    /* one workspace for every run, touched before any timing (a fresh one would time page faults) */
    static void *ws;
    static uint64_t ws_size;
    if (size > ws_size) {
        free(ws);
        ws = malloc(size);
        memset(ws, 0, size);
        ws_size = size;
    }
    const double w0 = now(), c0 = cpu_now();
    const lig_status st = phase2(p, ws, size, e);
    const double w1 = now(), c1 = cpu_now();
    lig_fwd_split_set_keys(-1);
    if (st != LIG_SUCCESS) {
        fprintf(stderr, "phase 2: %s\n", lig_get_last_error());
        return 0;
    }
    if (record) {
        t->wall[t->n] = w1 - w0;
        t->cpu[t->n] = c1 - c0;
        t->n++;
    }
    return 1;
}

/* reps rounds (after a warm-up) of each of the n hook settings in turn, so that the settings share
 * the machine's state; returns 0 on a failure. */
static int time_rounds(problem *p, int threads, int reps, const int64_t *keys, int n, timing *t) {
    lig_set_num_threads(threads);
    for (int i = 0; i < n; i++) t[i].n = 0;
    for (int r = -1; r < reps; r++)
        for (int i = 0; i < n; i++)
            if (!run_once(p, keys[i], &t[i], r >= 0)) return 0;
    return 1;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *x, int n) {
    double y[MAX_REPS];
    memcpy(y, x, sizeof(double) * (size_t)n);
    qsort(y, (size_t)n, sizeof y[0], cmp_double);
    return n % 2 ? y[n / 2] : 0.5 * (y[n / 2 - 1] + y[n / 2]);
}

static double minimum(const double *x, int n) {
    double m = x[0];
    for (int i = 1; i < n; i++) m = x[i] < m ? x[i] : m;
    return m;
}

/* Row t of batch b against float64 (see the header); returns 0 and prints on a failure. */
static int check_row(const problem *p, int64_t b, int64_t t) {
    const int64_t S2 = p->S2, N1 = p->N1, D = p->D, K = p->K, hi = S2 - p->S1 + t, vis = hi + 1;
    const int64_t qrow = (b * p->S1 + t) * N1;
    double *ref = malloc(sizeof(double) * (size_t)vis), *bound = malloc(sizeof(double) * (size_t)vis);
    char *taken = calloc((size_t)vis, 1);
    for (int64_t s = 0; s < vis; s++) {
        const double *k = p->kd + (b * S2 + s) * D;
        double sum = 0, mag = 0;
        for (int64_t h = 0; h < N1; h++) {
            const double *q = p->qd + (qrow + h) * D;
            double dot = 0, dmag = 0;
            for (int64_t d = 0; d < D; d++) {
                dot += q[d] * k[d];
                dmag += fabs(q[d] * k[d]);
            }
            const double x = p->sqd[qrow + h] * p->skd[b * S2 + s];
            if (dot * x > 0) sum += p->wd[qrow + h] * x * dot;
            mag += fabs(p->wd[qrow + h] * x) * dmag;
        }
        ref[s] = sum;
        bound[s] = 2.0 * (double)(D + N1 + 4) * 0x1p-24 * mag + 1e-30;
    }
    const int32_t *idx = (const int32_t *)p->idx + (b * p->S1 + t) * K;
    const float *val = (const float *)p->val + (b * p->S1 + t) * K;
    const int64_t want = K < vis ? K : vis;
    int ok = 1;
    double low = INFINITY, low_bound = 0;
    for (int64_t j = 0; j < K && ok; j++) {
        if (j >= want) {
            ok = idx[j] == -1 && isinf(val[j]) && val[j] < 0;
            continue;
        }
        const int64_t s = idx[j];
        ok = s >= 0 && s < vis && !taken[s] && fabs((double)val[j] - ref[s]) <= bound[s] && (j == 0 || val[j] <= val[j - 1]);
        if (!ok) break;
        taken[s] = 1;
        if (ref[s] - bound[s] < low) {
            low = ref[s] - bound[s];
            low_bound = bound[s];
        }
    }
    for (int64_t s = 0; s < vis && ok; s++) ok = taken[s] || ref[s] - bound[s] <= low + low_bound;
    if (!ok) fprintf(stderr, "check failed: batch %lld row %lld (of %lld keys)\n", (long long)b, (long long)t, (long long)vis);
    free(ref);
    free(bound);
    free(taken);
    return ok;
}

static int parse_list(const char *s, int *out, int max) {
    int n = 0;
    for (const char *c = s; *c && n < max;) {
        out[n++] = atoi(c);
        while (*c && *c != ',') c++;
        if (*c == ',') c++;
    }
    return n;
}

int main(int argc, char **argv) {
    options o = {.ctx = 65536, .B = 1, .next_n = 1, .prefill = 4096, .N1 = 64, .D = 128, .K = 2048, .threads = {1, 2},
                 .n_threads = 2, .forms = {FORM_BF16, FORM_FP8}, .n_forms = 2, .reps = 7, .unsplit = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--ctx")) o.ctx = atoll(v), i++;
        else if (!strcmp(a, "--batch")) o.B = atoll(v), i++;
        else if (!strcmp(a, "--next-n")) o.next_n = atoll(v), i++;
        else if (!strcmp(a, "--prefill")) o.prefill = atoll(v), i++;
        else if (!strcmp(a, "--heads")) o.N1 = atoll(v), i++;
        else if (!strcmp(a, "--dim")) o.D = atoll(v), i++;
        else if (!strcmp(a, "--topk")) o.K = atoll(v), i++;
        else if (!strcmp(a, "--threads")) o.n_threads = parse_list(v, o.threads, 8), i++;
        else if (!strcmp(a, "--reps")) o.reps = atoi(v), i++;
        else if (!strcmp(a, "--no-unsplit")) o.unsplit = 0;
        else if (!strcmp(a, "--forms")) {
            o.n_forms = 0;
            for (int f = 0; f < FORMS; f++)
                if (strstr(v, form_names[f])) o.forms[o.n_forms++] = f;
            i++;
        } else {
            fprintf(stderr, "unknown argument %s (see the header of bench/decode_bench.c)\n", a);
            return 2;
        }
    }
    if (o.reps < 1 || o.reps > MAX_REPS) o.reps = 7;
    printf("decode: B=%lld next_n=%lld context=%lld keys; prefill S=%lld causal; N1=%lld N2=1 D=%lld K=%lld; median of %d\n",
           (long long)o.B, (long long)o.next_n, (long long)o.ctx, (long long)o.prefill, (long long)o.N1, (long long)o.D,
           (long long)o.K, o.reps);
    printf("ms of phase 2: wall median (min) / CPU median (all threads); rates per second of wall time, and [on free\n"
           "cores] per second of CPU time / T; dec/pre: decode keys/s over prefill key-rows/s, CPU-based\n");
    printf("%-5s %-11s %3s | %-24s | %-24s | %-24s | %-17s | %-17s | %7s %6s %6s | %s\n", "form", "kernels", "thr",
           "decode split", "decode unsplit", "prefill", "Mkeys/s [free]", "Mkeyrows/s [free]", "dec/pre", "xT1",
           "cpuxT1", "check");
    int failed = 0;
    for (int fi = 0; fi < o.n_forms; fi++) {
        const form f = (form)o.forms[fi];
        problem dec, pre;
        problem_make(&dec, f, o.B, o.next_n, o.ctx, &o);
        if (o.prefill > 0) problem_make(&pre, f, 1, o.prefill, o.prefill, &o);
        double first_wall = 0, first_cpu = 0;
        for (int ti = 0; ti < o.n_threads; ti++) {
            const int th = o.threads[ti];
            const int64_t keys[2] = {-1, 0};
            timing td[2], tp = {.n = 0};
            int ok = time_rounds(&dec, th, o.reps, keys, o.unsplit ? 2 : 1, td);
            for (int64_t b = 0; b < o.B && ok; b++)
                for (int64_t t = 0; t < o.next_n && ok; t++) ok = check_row(&dec, b, t);
            if (ok && o.prefill > 0) {
                ok = time_rounds(&pre, th, o.reps < 3 ? o.reps : 3, keys, 1, &tp);
                ok = ok && check_row(&pre, 0, 0) && check_row(&pre, 0, o.prefill / 2) && check_row(&pre, 0, o.prefill - 1);
            }
            failed |= !ok;
            if (!ok) {
                printf("%-5s %3d: FAILED\n", form_names[f], th);
                continue;
            }
            const double dw = median(td[0].wall, td[0].n), dc = median(td[0].cpu, td[0].n);
            const double uw = o.unsplit ? median(td[1].wall, td[1].n) : 0, um = o.unsplit ? minimum(td[1].wall, td[1].n) : 0;
            const double uc = o.unsplit ? median(td[1].cpu, td[1].n) : 0;
            const double pw = tp.n ? median(tp.wall, tp.n) : 0, pm = tp.n ? minimum(tp.wall, tp.n) : 0;
            const double pc = tp.n ? median(tp.cpu, tp.n) : 0;
            const double nkeys = (double)(o.B * o.next_n) * (double)o.ctx;
            const double rows = (double)o.prefill * (double)(o.prefill + 1) / 2.0;
            if (ti == 0) {
                first_wall = dw;
                first_cpu = dc;
            }
            printf("%-5s %-11s %3d | %7.2f (%6.2f) / %7.2f | %7.2f (%6.2f) / %7.2f | %7.1f (%6.1f) / %7.1f | %7.2f [%7.2f] | "
                   "%7.2f [%7.2f] | %6.0f%% %5.2fx %5.2fx | %s\n",
                   form_names[f], td[0].kernels, th, 1e3 * dw, 1e3 * minimum(td[0].wall, td[0].n), 1e3 * dc, 1e3 * uw,
                   1e3 * um, 1e3 * uc, 1e3 * pw, 1e3 * pm, 1e3 * pc, nkeys / dw / 1e6, nkeys * th / dc / 1e6,
                   pw > 0 ? rows / pw / 1e6 : 0.0, pc > 0 ? rows * th / pc / 1e6 : 0.0,
                   pc > 0 ? 100.0 * (nkeys / dc) / (rows / pc) : 0.0, first_wall / dw, first_cpu * th / dc, "ok");
            fflush(stdout);
        }
        problem_free(&dec);
        if (o.prefill > 0) problem_free(&pre);
    }
    return failed;
}

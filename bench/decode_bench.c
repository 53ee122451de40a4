/* lig-decode-bench: the forward at decode: one step of B sequences x next_n
 * rows against a context of C keys each, every kernel set, beside a plain read of the same cache
 * bytes, with the recall of the quantized selections against the bf16 one.
 *
 *   lig-decode-bench [--ctx 65536[,...]] [--batch 1[,...]] [--next-n 1[,...]] [--prefill 4096]
 *                    [--heads 64] [--dim 128] [--topk 2048] [--threads 1,2] [--forms bf16,fp8,int8]
 *                    [--sets avx2,...] [--reps 7] [--no-unsplit] [--json FILE] [--dump DIR]
 *
 * Every combination of the --ctx, --batch and --next-n lists runs. Forms: bf16 = lig_indexer on bf16
 * q, k, w; fp8 / int8 = lig_quant_indexer on FLOAT8_E4M3FN / INT8 q and k quantized from that bf16
 * data as DeepSeek does (act_quant per token and head, indexer_data.c), the query scales folded into
 * the fp32 weights, fp32 key scales. N2 = 1, BSND, sparse_mode 3 (row i of a step sees keys
 * <= C - next_n + i). Data (indexer_data.c): keys with a shared direction, queries correlated with a
 * few of the keys they see; one data set per (B, C) (keys) and next_n (queries), shared by the forms.
 * --sets: the kernel sets to force (default every set this CPU runs).
 *
 * Timed: phase 2 only (phase 1 outside; one workspace, touched before, for every run), one warm-up,
 * then --reps rounds; the median and the minimum of the wall time, and the median of the process's
 * CPU time (all threads; idle pool threads sleep), which a shared machine's other load hardly
 * changes: cpuxT1 = T x the 1-thread CPU time / the T-thread CPU time is the speedup T threads would
 * give on T free cores. Each round runs the decode step split along the keys (the default plan), the
 * same step forced unsplit (a slice length of 0, set through the test-only src/testing/lig_testing.h:
 * one job per stripe, as before the split;
 * unless --no-unsplit) and the stream: a plain read of the bytes the step's keys occupy (codes and
 * scales, or the bf16 keys; stream_read.c) on the same threads, so that all share the machine's
 * state. --prefill S adds the S x S causal forward (no split: many rows) of the same form. Rates:
 * GOP/s = 2 N1 D (visible keys summed over the rows) / time; stream GB/s = bytes / read time; the
 * step's "% of stream" = the read's time / the step's time.
 *
 * Checked (of the last timed run, each form, set and thread count): the first row of the first
 * sequence and the last row of the last one (3 rows of a prefill) against float64 scores of the
 * inputs as the library read them (bench_check_row: indices distinct and visible, values descending,
 * each within its fp32 bound 2 (D + N1 + 4) 2^-24 sum |w sk q_d k_d| of the reference, and no key
 * left out above the lowest kept one by more than both bounds). A failure is printed and makes the
 * exit status non-zero. Recall (fp8, int8): the mean and the minimum over every row of the step of
 * |selection & bf16 selection| / K, against the bf16 form of the same set (run first when listed).
 *
 * --json FILE appends one JSON object per (shape, set, form, threads). --dump DIR writes the step's
 * inputs for bench/quant_peer.py, of the first set run: DIR/decode-B<B>-C<C>-<form>-{k.u8,sk.f32} (the
 * cache), DIR/decode-B<B>-C<C>-n<n>-<form>-{q.u8,w.f32,idx.i32} (the queries, the folded weights and
 * lig's selection) and DIR/decode-B<B>-C<C>-n<n>-bf16-idx.i32, for fp8 and int8. Links the static
 * library for the test-only tuning override (src/testing/lig_testing.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <lig.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "indexer_data.h"
#include "stream_read.h"
#include "testing/lig_testing.h"
#include "unit_peaks.h"

enum { MAX_REPS = 64, MAX_LIST = 8, MAX_SAMPLES = 3 };

typedef enum form { FORM_BF16, FORM_FP8, FORM_INT8, FORMS } form;
static const char *const form_names[FORMS] = {"bf16", "fp8", "int8"};
static const lig_dtype form_dtype[FORMS] = {LIG_BFLOAT16, LIG_FLOAT8_E4M3FN, LIG_INT8};

typedef struct options {
    int64_t ctx[MAX_LIST], B[MAX_LIST], next_n[MAX_LIST];
    int n_ctx, n_B, n_next_n;
    int64_t prefill, N1, D, K;
    int threads[MAX_LIST], n_threads;
    int forms[FORMS], n_forms;
    const char *sets, *json, *dump;
    int reps, unsplit;
} options;

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One problem: B sequences of S1 query rows (N1 heads) against S2 keys each, in bf16 and in both
 * quantized forms, with each form's output, tensors and the sampled rows' references. */
typedef struct problem {
    int64_t B, S1, S2, N1, D, K;
    uint16_t *kb, *qb, *wb; /* [B][S2][D], [B][S1][N1][D], [B][S1][N1] */
    float *w;               /* the weights before rounding, [B][S1][N1] */
    uint8_t *kc[FORMS], *qc[FORMS];
    float *sk[FORMS], *wq[FORMS]; /* key scales; weights with the query scales folded in */
    int32_t *idx[FORMS];
    float *val[FORMS];
    lig_tensor *tq[FORMS], *tk[FORMS], *tw[FORMS], *tsk[FORMS], *tidx[FORMS], *tval[FORMS];
    int n_samples;
    int64_t sample_b[MAX_SAMPLES], sample_t[MAX_SAMPLES];
    double *ref[FORMS][MAX_SAMPLES], *bound[FORMS][MAX_SAMPLES];
} problem;

/* row t of a sequence sees keys [0, visible) */
static int64_t visible(const problem *p, int64_t t) { return p->S2 - p->S1 + t + 1; }

static void *must(void *p) {
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

/* The keys of B sequences of S2 keys, bf16 and quantized (the forms in use). */
static void problem_keys(problem *p, int64_t B, int64_t S2, const options *o, const double *dir) {
    memset(p, 0, sizeof *p);
    p->B = B, p->S2 = S2, p->N1 = o->N1, p->D = o->D, p->K = o->K;
    const int64_t D = o->D, n = B * S2;
    p->kb = must(malloc(sizeof(uint16_t) * (size_t)(n * D)));
    bench_rng r = {0x5eed0000u + (uint64_t)B * 131 + (uint64_t)S2};
    bench_make_keys(p->kb, n, D, dir, &r);
    for (int f = FORM_FP8; f < FORMS; f++) {
        p->kc[f] = must(malloc((size_t)(n * D)));
        p->sk[f] = must(malloc(sizeof(float) * (size_t)n));
        for (int64_t s = 0; s < n; s++) p->sk[f][s] = bench_act_quant(form_dtype[f], p->kb + s * D, D, p->kc[f] + s * D);
    }
}

static void free_queries(problem *p) {
    for (int f = 0; f < FORMS; f++) {
        lig_tensor *t[] = {p->tq[f], p->tk[f], p->tw[f], p->tsk[f], p->tidx[f], p->tval[f]};
        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) lig_destroy_tensor(t[i]);
        p->tq[f] = p->tk[f] = p->tw[f] = p->tsk[f] = p->tidx[f] = p->tval[f] = NULL;
        free(p->qc[f]), free(p->wq[f]), free(p->idx[f]), free(p->val[f]);
        p->qc[f] = NULL, p->wq[f] = NULL, p->idx[f] = NULL, p->val[f] = NULL;
        for (int j = 0; j < MAX_SAMPLES; j++) free(p->ref[f][j]), free(p->bound[f][j]), p->ref[f][j] = p->bound[f][j] = NULL;
    }
    free(p->qb), free(p->wb), free(p->w);
    p->qb = p->wb = NULL, p->w = NULL;
}

static void problem_free(problem *p) {
    free_queries(p);
    free(p->kb);
    for (int f = 0; f < FORMS; f++) free(p->kc[f]), free(p->sk[f]);
}

/* The S1 query rows of every sequence (replacing any before), their quantized forms, tensors and
 * the sampled rows' references; `samples` rows: the first of the first sequence, the last of the
 * last (and with 3 the middle of the first). */
static void problem_queries(problem *p, int64_t S1, int samples, const double *dir) {
    free_queries(p);
    p->S1 = S1;
    const int64_t B = p->B, N1 = p->N1, D = p->D, K = p->K, nq = B * S1 * N1;
    p->qb = must(malloc(sizeof(uint16_t) * (size_t)(nq * D)));
    p->wb = must(malloc(sizeof(uint16_t) * (size_t)nq));
    p->w = must(malloc(sizeof(float) * (size_t)nq));
    bench_rng r = {0x9ee7u + (uint64_t)S1 * 7919 + (uint64_t)B};
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < S1; t++) {
            const int64_t row = b * S1 + t;
            bench_make_query_row(p->qb + row * N1 * D, N1, D, p->kb + b * p->S2 * D, visible(p, t), dir, &r);
            bench_make_weights(p->w + row * N1, N1, D, &r);
            for (int64_t h = 0; h < N1; h++) p->wb[row * N1 + h] = lig_float_to_bfloat16(p->w[row * N1 + h]);
        }
    const int64_t qs[4] = {B, S1, N1, D}, ks[4] = {B, p->S2, 1, D}, ws[3] = {B, S1, N1}, is[4] = {B, S1, 1, K};
    const int64_t sks[3] = {B, p->S2, 1};
    for (int f = 0; f < FORMS; f++) {
        p->idx[f] = must(malloc(sizeof(int32_t) * (size_t)(B * S1 * K)));
        p->val[f] = must(malloc(sizeof(float) * (size_t)(B * S1 * K)));
        p->tidx[f] = lig_create_tensor(p->idx[f], LIG_INT32, 4, is, NULL);
        p->tval[f] = lig_create_tensor(p->val[f], LIG_FLOAT32, 4, is, NULL);
        if (f == FORM_BF16) {
            p->tq[f] = lig_create_tensor(p->qb, LIG_BFLOAT16, 4, qs, NULL);
            p->tk[f] = lig_create_tensor(p->kb, LIG_BFLOAT16, 4, ks, NULL);
            p->tw[f] = lig_create_tensor(p->wb, LIG_BFLOAT16, 3, ws, NULL);
            continue;
        }
        p->qc[f] = must(malloc((size_t)(nq * D)));
        p->wq[f] = must(malloc(sizeof(float) * (size_t)nq));
        for (int64_t i = 0; i < nq; i++) p->wq[f][i] = p->w[i] * bench_act_quant(form_dtype[f], p->qb + i * D, D, p->qc[f] + i * D);
        p->tq[f] = lig_create_tensor(p->qc[f], form_dtype[f], 4, qs, NULL);
        p->tk[f] = lig_create_tensor(p->kc[f], form_dtype[f], 4, ks, NULL);
        p->tw[f] = lig_create_tensor(p->wq[f], LIG_FLOAT32, 3, ws, NULL);
        p->tsk[f] = lig_create_tensor(p->sk[f], LIG_FLOAT32, 3, sks, NULL);
    }
    p->n_samples = 0;
    const int64_t cand_b[3] = {0, B - 1, 0}, cand_t[3] = {0, S1 - 1, S1 / 2};
    for (int j = 0; j < samples && j < MAX_SAMPLES; j++) {
        int dup = 0;
        for (int i = 0; i < p->n_samples; i++) dup |= p->sample_b[i] == cand_b[j] && p->sample_t[i] == cand_t[j];
        if (dup) continue;
        p->sample_b[p->n_samples] = cand_b[j], p->sample_t[p->n_samples] = cand_t[j], p->n_samples++;
    }
}

/* The references of the sampled rows for form f (computed once per problem: every set and thread
 * count checks against them). */
static void references(problem *p, form f) {
    const int64_t N1 = p->N1, D = p->D;
    for (int j = 0; j < p->n_samples; j++) {
        if (p->ref[f][j]) continue;
        const int64_t b = p->sample_b[j], t = p->sample_t[j], vis = visible(p, t), row = b * p->S1 + t;
        p->ref[f][j] = must(malloc(sizeof(double) * (size_t)vis));
        p->bound[f][j] = must(malloc(sizeof(double) * (size_t)vis));
        if (f == FORM_BF16) {
            float *wf = must(malloc(sizeof(float) * (size_t)N1));
            for (int64_t h = 0; h < N1; h++) wf[h] = lig_bfloat16_to_float(p->wb[row * N1 + h]);
            bench_ref_scores(LIG_BFLOAT16, p->qb + row * N1 * D, wf, p->kb + b * p->S2 * D, NULL, vis, N1, D, p->ref[f][j],
                             p->bound[f][j]);
            free(wf);
        } else {
            bench_ref_scores(form_dtype[f], p->qc[f] + row * N1 * D, p->wq[f] + row * N1, p->kc[f] + b * p->S2 * D,
                             p->sk[f] + b * p->S2, vis, N1, D, p->ref[f][j], p->bound[f][j]);
        }
    }
}

static int check(problem *p, form f, char *msg, size_t cap) {
    references(p, f);
    for (int j = 0; j < p->n_samples; j++) {
        const int64_t row = p->sample_b[j] * p->S1 + p->sample_t[j];
        char why[160] = "";
        if (!bench_check_row(p->idx[f] + row * p->K, p->val[f] + row * p->K, p->K, p->ref[f][j], p->bound[f][j],
                             visible(p, p->sample_t[j]), why, sizeof why)) {
            snprintf(msg, cap, "batch %lld row %lld: %s", (long long)p->sample_b[j], (long long)p->sample_t[j], why);
            return 0;
        }
    }
    return 1;
}

/* the dot products of one step: 2 N1 D per visible key and row */
static double step_ops(const problem *p) {
    double keys = 0;
    for (int64_t t = 0; t < p->S1; t++) keys += (double)visible(p, t);
    return 2.0 * (double)(p->N1 * p->D) * keys * (double)p->B;
}

/* the bytes a step's keys occupy: the codes and the scales, or the bf16 keys */
static double key_bytes(const problem *p, form f) {
    return (double)(p->B * p->S2) * (f == FORM_BF16 ? 2.0 * (double)p->D : (double)p->D + 4.0);
}

static lig_status phase1(problem *p, form f, uint64_t *ws, lig_executor **e) {
    if (f == FORM_BF16)
        return lig_indexer_get_workspace_size(p->tq[f], p->tk[f], p->tw[f], NULL, NULL, "BSND", p->K, 3, INT64_MAX,
                                              INT64_MAX, p->tidx[f], p->tval[f], ws, e);
    return lig_quant_indexer_get_workspace_size(p->tq[f], p->tk[f], p->tw[f], NULL, p->tsk[f], NULL, NULL, NULL, 0, 0,
                                                "BSND", "BSND", p->K, 3, INT64_MAX, INT64_MAX, p->tidx[f], p->tval[f], ws, e);
}

/* Timings of one configuration: wall seconds and process CPU seconds (every thread's; the pool's
 * threads sleep when idle, so this is the work done whatever else the machine runs). */
typedef struct timing {
    double wall[MAX_REPS], cpu[MAX_REPS];
    int n;
    char kernels[32];
} timing;

/* The forward's slice length for the plans made from now on: keys >= 0 fixes it (0: unsplit), < 0 is
 * the library's own choice (LIG_FWD_SPLIT_KEYS when set, else the default). */
static void split_keys(int64_t keys) {
    if (keys < 0)
        lig_testing_set_tuning(NULL);
    else
        lig_testing_set_fwd_split_keys(keys);
}

/* One phase 1 + phase 2 with the slice length at `keys`, timed (phase 2 only) into *t unless warm-up. */
static int run_once(problem *p, form f, int64_t keys, timing *t, int record) {
    split_keys(keys);
    uint64_t size = 0;
    lig_executor *e = NULL;
    if (phase1(p, f, &size, &e) != LIG_SUCCESS) {
        fprintf(stderr, "phase 1: %s\n", lig_get_last_error());
        split_keys(-1);
        return 0;
    }
    snprintf(t->kernels, sizeof t->kernels, "%s", lig_executor_kernel_set(e));
    /* one workspace for every run, touched before any timing (a fresh one would time page faults) */
    static void *ws;
    static uint64_t ws_size;
    if (size > ws_size) {
        free(ws);
        ws = must(malloc(size));
        memset(ws, 0, size);
        ws_size = size;
    }
    const double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    const lig_status st = f == FORM_BF16 ? lig_indexer(ws, size, e, NULL) : lig_quant_indexer(ws, size, e, NULL);
    const double w1 = clock_s(CLOCK_MONOTONIC), c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    split_keys(-1);
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

/* reps rounds (after a warm-up) of each of the n slice length settings in turn, then (stream != NULL) the
 * read of the step's key bytes, so that all share the machine's state; returns 0 on a failure. */
static int time_rounds(problem *p, form f, int threads, int reps, const int64_t *keys, int n, timing *t, timing *stream) {
    lig_set_num_threads(threads);
    for (int i = 0; i < n; i++) t[i].n = 0;
    if (stream) stream->n = 0;
    const void *parts[2] = {f == FORM_BF16 ? (const void *)p->kb : p->kc[f], p->sk[f]};
    const size_t bytes[2] = {(size_t)(p->B * p->S2 * p->D) * (f == FORM_BF16 ? 2 : 1),
                             f == FORM_BF16 ? 0 : sizeof(float) * (size_t)(p->B * p->S2)};
    for (int r = -1; r < reps; r++) {
        for (int i = 0; i < n; i++)
            if (!run_once(p, f, keys[i], &t[i], r >= 0)) return 0;
        if (stream) {
            const bench_stream_time s = bench_stream_read(parts, bytes, f == FORM_BF16 ? 1 : 2, threads, 64.0 * (1 << 20));
            if (r >= 0) stream->wall[stream->n] = s.wall, stream->cpu[stream->n] = s.cpu * threads, stream->n++;
        }
    }
    return 1;
}

static double median(const double *x, int n) {
    double y[MAX_REPS];
    memcpy(y, x, sizeof(double) * (size_t)n);
    return n ? bench_median(y, n) : 0.0;
}

static double minimum(const double *x, int n) {
    double m = n ? x[0] : 0.0;
    for (int i = 1; i < n; i++) m = x[i] < m ? x[i] : m;
    return m;
}

static int parse_list(const char *s, int64_t *out, int max) {
    int n = 0;
    for (const char *c = s; *c && n < max;) {
        out[n++] = atoll(c);
        while (*c && *c != ',') c++;
        if (*c == ',') c++;
    }
    return n;
}

/* whether `name` is one of the comma-separated names in `list` */
static int listed(const char *list, const char *name) {
    const size_t n = strlen(name);
    for (const char *p = list; *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
        if (strcspn(p, ",") == n && !strncmp(p, name, n)) return 1;
    }
    return 0;
}

static int write_file(const char *dir, const char *name, const void *p, size_t bytes) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "wb");
    const int ok = fp && fwrite(p, 1, bytes, fp) == bytes;
    if (fp) fclose(fp);
    if (!ok) fprintf(stderr, "cannot write %s\n", path);
    return ok;
}

/* The step's inputs and selections for quant_peer.py (see the header); keys only with `keys`. */
static int dump(const char *dir, const problem *p, int keys) {
    char name[256];
    const size_t nk = (size_t)(p->B * p->S2), nq = (size_t)(p->B * p->S1 * p->N1), ni = (size_t)(p->B * p->S1 * p->K);
    int ok = 1;
    for (int f = FORM_FP8; f < FORMS; f++) {
        const char *fn = form_names[f];
        const long long B = p->B, C = p->S2, n = p->S1;
        if (keys) {
            snprintf(name, sizeof name, "decode-B%lld-C%lld-%s-k.u8", B, C, fn), ok &= write_file(dir, name, p->kc[f], nk * (size_t)p->D);
            snprintf(name, sizeof name, "decode-B%lld-C%lld-%s-sk.f32", B, C, fn), ok &= write_file(dir, name, p->sk[f], 4 * nk);
        }
        snprintf(name, sizeof name, "decode-B%lld-C%lld-n%lld-%s-q.u8", B, C, n, fn), ok &= write_file(dir, name, p->qc[f], nq * (size_t)p->D);
        snprintf(name, sizeof name, "decode-B%lld-C%lld-n%lld-%s-w.f32", B, C, n, fn), ok &= write_file(dir, name, p->wq[f], 4 * nq);
        snprintf(name, sizeof name, "decode-B%lld-C%lld-n%lld-%s-idx.i32", B, C, n, fn), ok &= write_file(dir, name, p->idx[f], 4 * ni);
    }
    snprintf(name, sizeof name, "decode-B%lld-C%lld-n%lld-bf16-idx.i32", (long long)p->B, (long long)p->S2, (long long)p->S1);
    return ok & write_file(dir, name, p->idx[FORM_BF16], 4 * ni);
}

static void json_ms(FILE *js, const char *name, const double *x, int n) {
    fprintf(js, ", \"%s\": [", name);
    for (int i = 0; i < n; i++) fprintf(js, "%s%.4f", i ? ", " : "", 1e3 * x[i]);
    fprintf(js, "]");
}

/* the unit a form's kernels multiply on (lig_executor_kernel_set's name) */
static int unit_of(form f, const char *kernels) {
    return f == FORM_INT8 ? bench_unit_for_i8_kernels(kernels) : bench_unit_for_kernel_set(kernels);
}

/* Times, checks and prints one (problem, set, form) at every thread count; returns 0 on a failure. */
static int run_config(problem *p, const char *set, form f, const options *o, int decode, FILE *js, int with_recall) {
    int ok_all = 1;
    double first_wall = 0, first_cpu = 0;
    for (int ti = 0; ti < o->n_threads; ti++) {
        const int th = o->threads[ti];
        const int64_t keys[2] = {-1, 0};
        timing td[2] = {{.n = 0}}, ts = {.n = 0};
        const int unsplit = decode && o->unsplit;
        char msg[200] = "";
        int ok = time_rounds(p, f, th, decode ? o->reps : (o->reps < 3 ? o->reps : 3), keys, unsplit ? 2 : 1, td,
                             decode ? &ts : NULL);
        if (!ok) snprintf(msg, sizeof msg, "%s", lig_get_last_error());
        ok = ok && check(p, f, msg, sizeof msg);
        /* recall over the rows that see more than K keys (the others keep every key) */
        double rmean = 1, rmin = 1, sum = 0;
        int64_t counted = 0;
        const int recall = with_recall && f != FORM_BF16;
        for (int64_t b = 0; ok && recall && b < p->B; b++)
            for (int64_t t = 0; t < p->S1; t++) {
                if (visible(p, t) <= p->K) continue;
                const int64_t i = b * p->S1 + t;
                const double x = bench_recall(p->idx[f] + i * p->K, p->idx[FORM_BF16] + i * p->K, p->K);
                sum += x, rmin = x < rmin ? x : rmin, counted++;
            }
        if (counted) rmean = sum / (double)counted;
        char rtext[32] = "-";
        if (recall) snprintf(rtext, sizeof rtext, "%.4f/%.4f", rmean, rmin);
        ok_all &= ok;
        const double ops = step_ops(p), bytes = key_bytes(p, f);
        const double dw = median(td[0].wall, td[0].n), dc = median(td[0].cpu, td[0].n);
        const double uw = unsplit ? median(td[1].wall, td[1].n) : 0, uc = unsplit ? median(td[1].cpu, td[1].n) : 0;
        const double sw = median(ts.wall, ts.n), sc = median(ts.cpu, ts.n);
        if (ti == 0) first_wall = dw, first_cpu = dc;
        const char *what = decode ? "decode" : "prefill";
        printf("%-7s %-10s %-5s %-11s %3d %3lld %2lld %7lld | %8.2f (%7.2f) / %8.2f | %8.2f / %8.2f | %7.1f [%7.1f] |", what,
               set, form_names[f], td[0].kernels, th, (long long)p->B, (long long)p->S1, (long long)p->S2, 1e3 * dw,
               1e3 * minimum(td[0].wall, td[0].n), 1e3 * dc, 1e3 * uw, 1e3 * uc, dw > 0 ? ops / dw * 1e-9 : 0.0,
               dc > 0 ? ops * th / dc * 1e-9 : 0.0);
        if (decode)
            printf(" %7.3f / %7.3f %6.1f %5.1f%% |", 1e3 * sw, 1e3 * sc, sw > 0 ? bytes / sw * 1e-9 : 0.0,
                   dw > 0 ? 100.0 * sw / dw : 0.0);
        printf(" %5.2fx %5.2fx | %-13s | %s%s\n", dw > 0 ? first_wall / dw : 0.0, dc > 0 ? first_cpu * th / dc : 0.0,
               rtext, ok ? "ok" : "FAILED: ", ok ? "" : msg);
        fflush(stdout);
        if (js) {
            fprintf(js, "{\"bench\": \"%s\", \"set\": \"%s\", \"form\": \"%s\", \"kernels\": \"%s\", \"unit\": \"%s\", "
                    "\"threads\": %d, \"B\": %lld, \"next_n\": %lld, \"ctx\": %lld, \"ops\": %.0f, \"bytes\": %.0f",
                    what, set, form_names[f], td[0].kernels, bench_unit_key(unit_of(f, td[0].kernels)), th, (long long)p->B,
                    (long long)p->S1, (long long)p->S2, ops, bytes);
            json_ms(js, "wall_ms", td[0].wall, td[0].n);
            json_ms(js, "cpu_ms", td[0].cpu, td[0].n);
            if (unsplit) json_ms(js, "unsplit_wall_ms", td[1].wall, td[1].n), json_ms(js, "unsplit_cpu_ms", td[1].cpu, td[1].n);
            if (decode) json_ms(js, "stream_wall_ms", ts.wall, ts.n), json_ms(js, "stream_cpu_ms", ts.cpu, ts.n);
            if (recall) fprintf(js, ", \"recall_mean\": %.6f, \"recall_min\": %.6f, \"recall_rows\": %lld", rmean, rmin, (long long)counted);
            fprintf(js, ", \"check\": \"%s%s\"}\n", ok ? "ok" : "FAILED: ", ok ? "" : msg);
            fflush(js);
        }
    }
    return ok_all;
}

int main(int argc, char **argv) {
    options o = {.ctx = {65536}, .n_ctx = 1, .B = {1}, .n_B = 1, .next_n = {1}, .n_next_n = 1, .prefill = 4096,
                 .N1 = 64, .D = 128, .K = 2048, .threads = {1, 2}, .n_threads = 2, .forms = {FORM_BF16, FORM_FP8},
                 .n_forms = 2, .reps = 7, .unsplit = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        int64_t th[MAX_LIST];
        if (!strcmp(a, "--ctx")) o.n_ctx = parse_list(v, o.ctx, MAX_LIST), i++;
        else if (!strcmp(a, "--batch")) o.n_B = parse_list(v, o.B, MAX_LIST), i++;
        else if (!strcmp(a, "--next-n")) o.n_next_n = parse_list(v, o.next_n, MAX_LIST), i++;
        else if (!strcmp(a, "--prefill")) o.prefill = atoll(v), i++;
        else if (!strcmp(a, "--heads")) o.N1 = atoll(v), i++;
        else if (!strcmp(a, "--dim")) o.D = atoll(v), i++;
        else if (!strcmp(a, "--topk")) o.K = atoll(v), i++;
        else if (!strcmp(a, "--threads")) {
            o.n_threads = parse_list(v, th, MAX_LIST), i++;
            for (int t = 0; t < o.n_threads; t++) o.threads[t] = (int)th[t];
        } else if (!strcmp(a, "--reps")) o.reps = atoi(v), i++;
        else if (!strcmp(a, "--sets")) o.sets = v, i++;
        else if (!strcmp(a, "--json")) o.json = v, i++;
        else if (!strcmp(a, "--dump")) o.dump = v, i++;
        else if (!strcmp(a, "--no-unsplit")) o.unsplit = 0;
        else if (!strcmp(a, "--forms")) {
            o.n_forms = 0;
            for (int f = 0; f < FORMS; f++)
                if (listed(v, form_names[f])) o.forms[o.n_forms++] = f;
            i++;
        } else {
            fprintf(stderr, "unknown argument %s (see the header of bench/decode_bench.c)\n", a);
            return 2;
        }
    }
    int bad = o.reps < 1 || o.reps > MAX_REPS || o.N1 < 1 || o.D < 1 || o.D > 512 || o.K < 1 || o.n_threads < 1 ||
              o.n_forms < 1 || o.prefill < 0;
    for (int i = 0; i < o.n_ctx; i++) bad |= o.ctx[i] < 1;
    for (int i = 0; i < o.n_B; i++) bad |= o.B[i] < 1;
    for (int i = 0; i < o.n_next_n; i++)
        for (int j = 0; j < o.n_ctx; j++) bad |= o.next_n[i] < 1 || o.next_n[i] > o.ctx[j];
    for (int t = 0; t < o.n_threads; t++) bad |= o.threads[t] < 1;
    if (bad) {
        fprintf(stderr, "--reps in [1, %d]; --heads, --topk, --threads, --batch, --ctx >= 1; --dim in [1, 512]; "
                "1 <= --next-n <= --ctx; a known form\n", MAX_REPS);
        return 2;
    }
    FILE *js = o.json ? fopen(o.json, "a") : NULL;
    if (o.json && !js) {
        fprintf(stderr, "cannot open %s\n", o.json);
        return 2;
    }
    const int has_bf16 = o.forms[0] == FORM_BF16;
    char cpu[128];
    bench_cpu_model(cpu, sizeof cpu);
    printf("CPU: %s | decode: B x next_n rows against a context of C keys each; N1=%lld N2=1 D=%lld K=%lld; median of %d\n",
           cpu, (long long)o.N1, (long long)o.D, (long long)o.K, o.reps);
    printf("ms of phase 2: wall median (min) / CPU median (all threads), the unsplit step likewise; GOP/s per second of\n"
           "wall time [per second of CPU time / T: on free cores]; stream: the plain read of the step's key bytes, ms wall /\n"
           "CPU, GB/s (wall), and the step's %% of it; xT1 wall, cpuxT1; recall mean/min against the bf16 selection\n");
    printf("%-7s %-10s %-5s %-11s %3s %3s %2s %7s | %-28s | %-19s | %-17s | %-31s | %-13s | %-13s | %s\n", "what", "set",
           "form", "kernels", "thr", "B", "n", "ctx", "split", "unsplit", "GOP/s [free]", "stream", "xT1 cpuxT1",
           "recall", "check");
    const char *names = lig_kernel_sets();
    char all[256];
    snprintf(all, sizeof all, "%s", names);
    char *sets[16];
    int n_sets = 0;
    for (char *s = strtok(all, ","); s && n_sets < 16; s = strtok(NULL, ","))
        if (!o.sets || listed(o.sets, s)) sets[n_sets++] = s;
    double dir[512];
    bench_key_direction(dir, o.D);
    int failed = 0;
    for (int bi = 0; bi < o.n_B; bi++)
        for (int ci = 0; ci < o.n_ctx; ci++) {
            problem p;
            problem_keys(&p, o.B[bi], o.ctx[ci], &o, dir);
            for (int ni = 0; ni < o.n_next_n; ni++) {
                problem_queries(&p, o.next_n[ni], 2, dir);
                for (int si = 0; si < n_sets; si++) {
                    if (lig_set_kernel_set(sets[si]) != LIG_SUCCESS) continue;
                    for (int fi = 0; fi < o.n_forms; fi++)
                        failed |= !run_config(&p, sets[si], (form)o.forms[fi], &o, 1, js, has_bf16);
                    if (o.dump && si == 0 && has_bf16 && o.n_forms == FORMS) failed |= !dump(o.dump, &p, ni == 0);
                }
            }
            problem_free(&p);
        }
    if (o.prefill > 0) {
        problem p;
        problem_keys(&p, 1, o.prefill, &o, dir);
        problem_queries(&p, o.prefill, 3, dir);
        for (int si = 0; si < n_sets; si++) {
            if (lig_set_kernel_set(sets[si]) != LIG_SUCCESS) continue;
            for (int fi = 0; fi < o.n_forms; fi++)
                failed |= !run_config(&p, sets[si], (form)o.forms[fi], &o, 0, js, has_bf16);
        }
        problem_free(&p);
    }
    lig_set_kernel_set(NULL);
    if (js) fclose(js);
    return failed;
}

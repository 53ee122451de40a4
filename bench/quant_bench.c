/* lig-quant-bench: the quantized forward's prefill (lig_quant_indexer), per kernel set this CPU
 * supports, INT8 and FP8 e4m3, against the measured peak of the unit each engine multiplies on
 * (unit_peaks.c, same run), against lig's own bf16 forward (lig_indexer) on the data the codes were
 * made from, and the recall of each quantized selection against that bf16 selection.
 *
 * Problem (DeepSeek's prefill): B = 1, S1 = S2 = S, N1 = 64 query heads on N2 = 1 key head, D = 128,
 * K = 2048, causal (sparse_mode 3), BSND. Data (indexer_data.c): realistic bf16 q, k, w (keys with a
 * shared direction, queries correlated with a few keys), quantized as DeepSeek does (act_quant per
 * token and head: FP8 scale amax / 448, INT8 amax / 127); the query scales folded into the fp32
 * weights (no sq), fp32 key scales. The bf16 forward runs on the bf16 data itself. --rows R runs only
 * the last R query rows against all S keys (sparse_mode 3 aligns them bottom-right, so each sees as
 * many keys as in the full problem). ops = 2 * N1 * D * (visible keys summed over the rows run): the
 * dot products, counted as the unit peaks count them (2 per multiply-add).
 *
 * Each figure is the median of --runs timed runs after --warmup runs (1), planning excluded (phase 2
 * only), on --threads threads (1 by default), timed in the process's CPU time (--clock cpu, the
 * default: on a machine shared with other work a one-thread figure counts only the time this process
 * ran; the unit peaks are timed the same way) or wall-clock time (--clock wall). Every timed
 * configuration checks two sampled rows (the first and the last run) of its last run against a float64
 * recomputation (bench_check_row: values within the fp32 bound, indices visible and distinct, none
 * left out above the lowest kept). Recall: over the rows that see more than K keys (the others keep
 * every key), the mean and the minimum of |quantized selection & bf16 selection| / K, each against
 * the bf16 forward of the same kernel set.
 *
 * MXFP4 (--codes mxfp4): q and k quantized by lig_mxfp4_quantize (the engines' recipe: e8m0 block
 * scales of 32 values, UINT8 scale bytes passed as sq and sk), the weights unfolded; checked against
 * the float64 scores of the codes' exact values. Its "unit" is the int8 unit the set's MXFP4 block
 * dots run on (the plan's kernels: avx512vnni's vpdpbusd; avx2's vpmaddubsw, compared with the
 * vpmaddwd peak, which counts half as many products per instruction). --topk K (2048) sets K;
 * --rows 1 is one decode row against S keys (the split walk).
 *
 * --dump DIR writes the inputs and selections of the first set run for bench/quant_peer.py:
 * DIR/prefill-S<S>-R<rows>-<int8|fp8>-{q,k}.u8, -{sk,w}.f32, -idx.i32 (the quantized selection) and
 * DIR/prefill-S<S>-R<rows>-bf16-idx.i32. --json FILE appends one JSON object per line: the peaks,
 * then one per (set, codes).
 *
 *   lig-quant-bench [--s 4096] [--rows S] [--runs 5] [--warmup 1] [--threads 1] [--sets scalar,avx2,...]
 *                   [--scalar-rows 128] [--clock cpu|wall] [--codes int8,fp8,mxfp4] [--topk 2048] [--peer 1] [--dump DIR] [--json FILE]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "indexer_data.h"
#include "lig.h"
#include "bench_options.h"
#include "unit_peaks.h"

enum { N1 = 64, D = 128, MAX_RUNS = 32, SCALE_BYTES = 4 /* MXFP4: D / 32 e8m0 bytes a head */ };

static int64_t K = 2048; /* --topk */

static int use_cpu_time = 1; /* --clock cpu (default) or wall */

static double seconds(void) {
    struct timespec ts;
    clock_gettime(use_cpu_time ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The bf16 data: the last `rows` query rows of an S x S causal problem, and the bf16 forward's output. */
typedef struct data {
    int64_t S, rows;
    uint16_t *q, *k, *wb; /* [rows][N1][D], [S][D], [rows][N1] */
    float *w;             /* the weights before bf16 rounding, [rows][N1] */
    int32_t *idx;
    float *val;
} data;

/* One quantization of the data: codes, key scales, the weights with the query scales folded in.
 * MXFP4: two codes a byte, the block scales' e8m0 bytes (sqb, skb), the weights as they are, and
 * the codes' exact values in bf16 (qd, kd: every MXFP4 value of this data is one) for the check. */
typedef struct codes {
    lig_dtype qk;
    uint8_t *q, *k, *sqb, *skb;
    uint16_t *qd, *kd;
    float *sk, *w;
    int32_t *idx;
    float *val;
} codes;

/* Query row i of the part run is row S - rows + i of the causal problem: it sees that many + 1 keys. */
static int64_t visible(int64_t S, int64_t rows, int64_t i) { return S - rows + i + 1; }

static int make_data(data *P, int64_t S, int64_t rows) {
    memset(P, 0, sizeof *P);
    P->S = S, P->rows = rows;
    const size_t nq = (size_t)(rows * N1 * D), nw = (size_t)(rows * N1);
    P->q = malloc(2 * nq), P->k = malloc(2 * (size_t)(S * D)), P->wb = malloc(2 * nw), P->w = malloc(4 * nw);
    P->idx = malloc(4 * (size_t)(rows * K)), P->val = malloc(4 * (size_t)(rows * K));
    if (!P->q || !P->k || !P->wb || !P->w || !P->idx || !P->val) return 0;
    double dir[D];
    bench_key_direction(dir, D);
    bench_rng r = {0x9b1e5eedull};
    bench_make_keys(P->k, S, D, dir, &r);
    for (int64_t i = 0; i < rows; i++) {
        bench_make_query_row(P->q + i * N1 * D, N1, D, P->k, visible(S, rows, i), dir, &r);
        bench_make_weights(P->w + i * N1, N1, D, &r);
        for (int h = 0; h < N1; h++) P->wb[i * N1 + h] = lig_float_to_bfloat16(P->w[i * N1 + h]);
    }
    return 1;
}

static void free_data(data *P) { free(P->q), free(P->k), free(P->wb), free(P->w), free(P->idx), free(P->val); }

static int make_codes(codes *C, const data *P, lig_dtype qk) {
    memset(C, 0, sizeof *C);
    C->qk = qk;
    const size_t nq = (size_t)(P->rows * N1), nk = (size_t)P->S;
    C->q = malloc(nq * D), C->k = malloc(nk * D), C->sk = malloc(4 * nk), C->w = malloc(4 * nq);
    C->idx = malloc(4 * (size_t)(P->rows * K)), C->val = malloc(4 * (size_t)(P->rows * K));
    if (!C->q || !C->k || !C->sk || !C->w || !C->idx || !C->val) return 0;
    for (size_t s = 0; s < nk; s++) C->sk[s] = bench_act_quant(qk, P->k + s * D, D, C->k + s * D);
    for (size_t i = 0; i < nq; i++) C->w[i] = P->w[i] * bench_act_quant(qk, P->q + i * D, D, C->q + i * D);
    return 1;
}

/* lig_mxfp4_quantize's rows (the engines' recipe) of n x D bf16 values: codes, scale bytes, and the
 * decoded values in bf16. */
static int mxfp4_rows(uint16_t *x, int64_t n, uint8_t *packed, uint8_t *scales, uint16_t *decoded) {
    const int64_t xs[2] = {n, D}, cs[2] = {n, D / 2}, ss[2] = {n, SCALE_BYTES};
    lig_tensor *xt = lig_create_tensor(x, LIG_BFLOAT16, 2, xs, NULL);
    lig_tensor *ct = lig_create_tensor(packed, LIG_UINT8, 2, cs, NULL);
    lig_tensor *st = lig_create_tensor(scales, LIG_UINT8, 2, ss, NULL);
    const lig_status status = lig_mxfp4_quantize(xt, LIG_MXFP4_RECIPE_ENGINE, ct, st);
    lig_destroy_tensor(xt), lig_destroy_tensor(ct), lig_destroy_tensor(st);
    if (status != LIG_SUCCESS) {
        fprintf(stderr, "lig_mxfp4_quantize: %s\n", lig_get_last_error());
        return 0;
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t d = 0; d < D; d++) {
            const uint8_t code = (uint8_t)(packed[i * D / 2 + d / 2] >> (4 * (d % 2))) & 15u;
            const float v = lig_float4_e2m1_to_float(code) * lig_float8_e8m0fnu_to_float(scales[i * SCALE_BYTES + d / 32]);
            decoded[i * D + d] = lig_float_to_bfloat16(v);
        }
    return 1;
}

static int make_mxfp4_codes(codes *C, data *P) {
    memset(C, 0, sizeof *C);
    C->qk = LIG_FLOAT4_E2M1X2;
    const size_t nq = (size_t)(P->rows * N1), nk = (size_t)P->S;
    C->q = malloc(nq * D / 2), C->k = malloc(nk * D / 2), C->sqb = malloc(nq * SCALE_BYTES);
    C->skb = malloc(nk * SCALE_BYTES), C->qd = malloc(2 * nq * D), C->kd = malloc(2 * nk * D), C->w = malloc(4 * nq);
    C->idx = malloc(4 * (size_t)(P->rows * K)), C->val = malloc(4 * (size_t)(P->rows * K));
    if (!C->q || !C->k || !C->sqb || !C->skb || !C->qd || !C->kd || !C->w || !C->idx || !C->val) return 0;
    memcpy(C->w, P->w, 4 * nq);
    return mxfp4_rows(P->k, (int64_t)nk, C->k, C->skb, C->kd) && mxfp4_rows(P->q, (int64_t)nq, C->q, C->sqb, C->qd);
}

static void free_codes(codes *C) {
    free(C->q), free(C->k), free(C->sk), free(C->w), free(C->idx), free(C->val);
    free(C->sqb), free(C->skb), free(C->qd), free(C->kd);
}

/* The last r rows of the problem, quantized (C) or in bf16 (C NULL): the pointers one run uses. */
typedef struct view {
    const data *P;
    const codes *C;
    int64_t r, off; /* rows run, and the first of them in the data */
    double ops;
} view;

static view make_view(const data *P, const codes *C, int64_t r) {
    view v = {P, C, r, P->rows - r, 0};
    double keys = 0;
    for (int64_t i = 0; i < r; i++) keys += (double)visible(P->S, r, i);
    v.ops = 2.0 * N1 * D * keys;
    return v;
}

static int32_t *view_idx(const view *v) { return (v->C ? v->C->idx : v->P->idx) + v->off * K; }
static float *view_val(const view *v) { return (v->C ? v->C->val : v->P->val) + v->off * K; }

/* Phase 1 of one run of the view. */
static lig_status plan(const view *v, lig_tensor **t, uint64_t *ws, lig_executor **e) {
    const int64_t qs[4] = {1, v->r, N1, D}, ks[4] = {1, v->P->S, 1, D}, wsh[3] = {1, v->r, N1};
    const int64_t sks[3] = {1, v->P->S, 1}, os[4] = {1, v->r, 1, K};
    const data *P = v->P;
    const codes *C = v->C;
    const int64_t qo = v->off * N1 * D, wo = v->off * N1;
    if (C && C->qk == LIG_FLOAT4_E2M1X2) { /* MXFP4: codes [.., D/2] and e8m0 bytes [.., D/32] */
        const int64_t q4[4] = {1, v->r, N1, D / 2}, k4[4] = {1, v->P->S, 1, D / 2};
        const int64_t sq4[4] = {1, v->r, N1, SCALE_BYTES}, sk4[4] = {1, v->P->S, 1, SCALE_BYTES};
        t[0] = lig_create_tensor(C->q + qo / 2, C->qk, 4, q4, NULL);
        t[1] = lig_create_tensor(C->k, C->qk, 4, k4, NULL);
        t[2] = lig_create_tensor(C->w + wo, LIG_FLOAT32, 3, wsh, NULL);
        t[3] = lig_create_tensor(C->skb, LIG_UINT8, 4, sk4, NULL);
        t[4] = lig_create_tensor(view_idx(v), LIG_INT32, 4, os, NULL);
        t[5] = lig_create_tensor(view_val(v), LIG_FLOAT32, 4, os, NULL);
        t[6] = lig_create_tensor(C->sqb + wo * SCALE_BYTES, LIG_UINT8, 4, sq4, NULL);
        return lig_quant_indexer_get_workspace_size(t[0], t[1], t[2], t[6], t[3], NULL, NULL, NULL, 0, 0, "BSND", "BSND",
                                                    K, 3, INT64_MAX, INT64_MAX, t[4], t[5], ws, e);
    }
    t[6] = NULL;
    t[0] = C ? lig_create_tensor(C->q + qo, C->qk, 4, qs, NULL) : lig_create_tensor(P->q + qo, LIG_BFLOAT16, 4, qs, NULL);
    t[1] = C ? lig_create_tensor(C->k, C->qk, 4, ks, NULL) : lig_create_tensor(P->k, LIG_BFLOAT16, 4, ks, NULL);
    t[2] = C ? lig_create_tensor(C->w + wo, LIG_FLOAT32, 3, wsh, NULL) : lig_create_tensor(P->wb + wo, LIG_BFLOAT16, 3, wsh, NULL);
    t[3] = C ? lig_create_tensor(C->sk, LIG_FLOAT32, 3, sks, NULL) : NULL;
    t[4] = lig_create_tensor(view_idx(v), LIG_INT32, 4, os, NULL);
    t[5] = lig_create_tensor(view_val(v), LIG_FLOAT32, 4, os, NULL);
    if (!C)
        return lig_indexer_get_workspace_size(t[0], t[1], t[2], NULL, NULL, "BSND", K, 3, INT64_MAX, INT64_MAX, t[4],
                                              t[5], ws, e);
    return lig_quant_indexer_get_workspace_size(t[0], t[1], t[2], NULL, t[3], NULL, NULL, NULL, 0, 0, "BSND", "BSND", K,
                                                3, INT64_MAX, INT64_MAX, t[4], t[5], ws, e);
}

/* The first and the last row run of the last run against the float64 reference; 1 when they pass. */
static int check(const view *v, char *msg, size_t cap) {
    const int64_t sample[2] = {0, v->r - 1};
    const int64_t S = v->P->S;
    double *ref = malloc(sizeof(double) * (size_t)S), *bound = malloc(sizeof(double) * (size_t)S);
    int ok = 1;
    for (int j = 0; j < 2 && ok; j++) {
        const int64_t i = sample[j], vis = visible(S, v->r, i), row = v->off + i;
        if (v->C && v->C->qk == LIG_FLOAT4_E2M1X2) /* the codes' exact values, in bf16 */
            bench_ref_scores(LIG_BFLOAT16, v->C->qd + row * N1 * D, v->C->w + row * N1, v->C->kd, NULL, vis, N1, D, ref, bound);
        else if (v->C)
            bench_ref_scores(v->C->qk, v->C->q + row * N1 * D, v->C->w + row * N1, v->C->k, v->C->sk, vis, N1, D, ref, bound);
        else {
            float wf[N1];
            for (int h = 0; h < N1; h++) wf[h] = lig_bfloat16_to_float(v->P->wb[row * N1 + h]);
            bench_ref_scores(LIG_BFLOAT16, v->P->q + row * N1 * D, wf, v->P->k, NULL, vis, N1, D, ref, bound);
        }
        char why[160] = "";
        ok = bench_check_row(view_idx(v) + i * K, view_val(v) + i * K, K, ref, bound, vis, why, sizeof why);
        if (!ok) snprintf(msg, cap, "row %lld: %s", (long long)i, why);
    }
    free(ref), free(bound);
    return ok;
}

typedef struct measured {
    double gops, rates[MAX_RUNS];
    int runs;
    char kernels[32];
    int ok;
    char msg[200];
} measured;

static measured time_forward(const view *v, int warmup, int runs) {
    measured m = {0};
    m.runs = runs;
    void *ws = NULL;
    uint64_t have = 0;
    for (int r = -warmup; r < runs; r++) {
        lig_tensor *t[7];
        uint64_t need = 0;
        lig_executor *e = NULL;
        lig_status st = plan(v, t, &need, &e);
        if (st == LIG_SUCCESS) {
            snprintf(m.kernels, sizeof m.kernels, "%s", lig_executor_kernel_set(e));
            if (need > have) {
                free(ws);
                ws = malloc(need);
                have = need;
                memset(ws, 0, need);
            }
            const double t0 = seconds();
            st = v->C ? lig_quant_indexer(ws, need, e, NULL) : lig_indexer(ws, need, e, NULL);
            const double dt = seconds() - t0;
            if (r >= 0) m.rates[r] = v->ops / dt * 1e-9;
        }
        for (int i = 0; i < 7; i++) lig_destroy_tensor(t[i]);
        if (st != LIG_SUCCESS) {
            snprintf(m.msg, sizeof m.msg, "status %d: %s", (int)st, lig_get_last_error());
            free(ws);
            return m;
        }
    }
    free(ws);
    double sorted[MAX_RUNS];
    memcpy(sorted, m.rates, sizeof(double) * (size_t)runs);
    m.gops = bench_median(sorted, runs);
    m.ok = check(v, m.msg, sizeof m.msg);
    return m;
}

/* Recall of the quantized selection of q against the bf16 selection b (same rows), over the rows
 * that see more than K keys. */
static void recall(const view *q, const view *b, double *mean, double *min, int64_t *rows) {
    double sum = 0, lo = 1;
    int64_t n = 0;
    for (int64_t i = 0; i < q->r; i++) {
        if (visible(q->P->S, q->r, i) <= K) continue;
        const double x = bench_recall(view_idx(q) + i * K, view_idx(b) + i * K, K);
        sum += x, lo = x < lo ? x : lo, n++;
    }
    *mean = n ? sum / (double)n : 1.0, *min = lo, *rows = n;
}

/* whether `name` is one of the comma-separated names in `list` */
static int listed(const char *list, const char *name) {
    const size_t n = strlen(name);
    for (const char *p = list; *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
        if (strcspn(p, ",") == n && !strncmp(p, name, n)) return 1;
    }
    return 0;
}

static int write_file(const char *dir, const char *tag, const char *what, const void *p, size_t bytes) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s-%s", dir, tag, what);
    FILE *f = fopen(path, "wb");
    const int ok = f && fwrite(p, 1, bytes, f) == bytes;
    if (f) fclose(f);
    if (!ok) fprintf(stderr, "cannot write %s\n", path);
    return ok;
}

/* The inputs of one quantization and both selections, for quant_peer.py (the full `rows` rows). */
static int dump(const char *dir, const data *P, const codes *C) {
    char tag[128];
    const char *code = C->qk == LIG_INT8 ? "int8" : "fp8";
    const size_t nq = (size_t)(P->rows * N1), rk = (size_t)(P->rows * K);
    snprintf(tag, sizeof tag, "prefill-S%lld-R%lld-%s", (long long)P->S, (long long)P->rows, code);
    int ok = write_file(dir, tag, "q.u8", C->q, nq * D) && write_file(dir, tag, "k.u8", C->k, (size_t)P->S * D) &&
             write_file(dir, tag, "sk.f32", C->sk, 4 * (size_t)P->S) && write_file(dir, tag, "w.f32", C->w, 4 * nq) &&
             write_file(dir, tag, "idx.i32", C->idx, 4 * rk);
    snprintf(tag, sizeof tag, "prefill-S%lld-R%lld-bf16", (long long)P->S, (long long)P->rows);
    return ok && write_file(dir, tag, "idx.i32", P->idx, 4 * rk);
}

static void json_rates(FILE *f, const char *name, const measured *m) {
    fprintf(f, ", \"%s\": [", name);
    for (int i = 0; i < m->runs; i++) fprintf(f, "%s%.3f", i ? ", " : "", m->rates[i]);
    fprintf(f, "]");
}

int main(int argc, char **argv) {
    int64_t S = 4096, rows = 0, scalar_rows = 128;
    int runs = 5, warmup = 1, threads = 1;
    const char *only = NULL, *code_list = "int8,fp8", *dump_dir = NULL, *json_path = NULL;
    int peer = 1;
    const char *clock_name = use_cpu_time ? "cpu" : "wall";
    const bench_option opts[] = {
        {"--s", &S, NULL, NULL},
        {"--rows", &rows, NULL, NULL},
        {"--scalar-rows", &scalar_rows, NULL, NULL},
        {"--runs", NULL, &runs, NULL},
        {"--warmup", NULL, &warmup, NULL},
        {"--threads", NULL, &threads, NULL},
        {"--peer", NULL, &peer, NULL},
        {"--sets", NULL, NULL, &only},
        {"--codes", NULL, NULL, &code_list},
        {"--topk", &K, NULL, NULL},
        {"--dump", NULL, NULL, &dump_dir},
        {"--json", NULL, NULL, &json_path},
        {"--clock", NULL, NULL, &clock_name},
    };
    if (!bench_parse_options(argc, argv, opts, sizeof opts / sizeof opts[0])) {
        fprintf(stderr, "usage: %s [--s S] [--rows R] [--runs n] [--warmup n] [--threads t] [--sets a,b] [--scalar-rows R]\n"
                "       [--clock cpu|wall] [--codes int8,fp8,mxfp4] [--topk 2048] [--peer 1|0 (the bf16 forward)] [--dump DIR] [--json FILE]\n",
                argv[0]);
        return 2;
    }
    use_cpu_time = strcmp(clock_name, "wall") != 0;
    if (rows <= 0 || rows > S) rows = S;
    if (K < 1 || S < 1 || runs < 1 || runs > MAX_RUNS || warmup < 0 || threads < 1 || scalar_rows < 1) {
        fprintf(stderr, "--s, --threads and --scalar-rows must be positive, --runs in [1, %d], --warmup >= 0\n", MAX_RUNS);
        return 2;
    }
    if (!peer && dump_dir) {
        fprintf(stderr, "--dump needs the bf16 forward (--peer 1): its selection is dumped too\n");
        return 2;
    }
    FILE *js = json_path ? fopen(json_path, "a") : NULL;
    if (json_path && !js) {
        fprintf(stderr, "cannot open %s\n", json_path);
        return 2;
    }
    lig_set_num_threads(threads);
    bench_unit_use_cpu_time(use_cpu_time);
    char cpu[128];
    bench_cpu_model(cpu, sizeof cpu);
    printf("CPU: %s | %d thread(s) | prefill S = %lld (last %lld rows), N1 = %d, N2 = 1, D = %d, K = %lld, causal | "
           "median of %d runs | %s time\n",
           cpu, threads, (long long)S, (long long)rows, N1, D, (long long)K, runs, use_cpu_time ? "process CPU" : "wall-clock");
    printf("measured unit peaks, GOP/s (2 ops per multiply-add; best of 3, %d thread(s)):\n", threads);
    double peak[BENCH_UNIT_COUNT] = {0};
    if (js) fprintf(js, "{\"peaks\": {");
    for (int u = 0, first = 1; u < BENCH_UNIT_COUNT; u++) {
        if (u == BENCH_UNIT_AMX_BF16 || !bench_unit_available(u)) continue;
        peak[u] = bench_unit_peak_gflops(u, threads, 3);
        printf("  %-20s %8.1f   (%s)\n", bench_unit_label(u), peak[u], bench_unit_instruction(u));
        if (js) fprintf(js, "%s\"%s\": %.2f", first ? "" : ", ", bench_unit_key(u), peak[u]);
        first = 0;
    }
    if (js) fprintf(js, "}, \"threads\": %d, \"cpu\": \"%s\", \"clock\": \"%s\"}\n", threads, cpu, use_cpu_time ? "cpu" : "wall");
    data P;
    if (!make_data(&P, S, rows)) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    printf("\n%-11s %-5s %6s %-12s %9s %-20s %7s   %-12s %9s %7s  %-15s %s\n", "set", "codes", "rows", "kernels",
           "GOP/s", "unit", "% peak", "bf16 fwd", "GOP/s", "quant/bf16", "recall mean/min", "check");
    const char *names = lig_kernel_sets();
    char list[256];
    snprintf(list, sizeof list, "%s", names);
    int failed = 0, dumped = 0;
    for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
        if (only && !listed(only, name)) continue;
        if (lig_set_kernel_set(name) != LIG_SUCCESS) continue;
        const int64_t r = !strcmp(name, "scalar") && scalar_rows < rows ? scalar_rows : rows;
        const view bv = make_view(&P, NULL, r);
        const measured b = peer ? time_forward(&bv, warmup, runs) : (measured){.ok = 1};
        static const char *const code_names[3] = {"int8", "fp8", "mxfp4"}, *const code_labels[3] = {"INT8", "FP8", "MXFP4"};
        for (int c = 0; c < 3; c++) {
            const lig_dtype qk = c == 2 ? LIG_FLOAT4_E2M1X2 : c ? LIG_FLOAT8_E4M3FN : LIG_INT8;
            if (!listed(code_list, code_names[c])) continue;
            codes C;
            if (!(c == 2 ? make_mxfp4_codes(&C, &P) : make_codes(&C, &P, qk))) {
                fprintf(stderr, "out of memory\n");
                return 1;
            }
            const view qv = make_view(&P, &C, r);
            const measured q = time_forward(&qv, warmup, runs);
            double rmean = 0, rmin = 0;
            int64_t rrows = 0;
            if (peer) recall(&qv, &bv, &rmean, &rmin, &rrows);
            const int u = qk != LIG_FLOAT8_E4M3FN ? bench_unit_for_i8_kernels(q.kernels) : bench_unit_for_kernel_set(q.kernels);
            printf("%-11s %-5s %6lld %-12s %9.1f %-20s", name, code_labels[c], (long long)r, q.kernels, q.gops,
                   bench_unit_label(u));
            if (u >= 0 && peak[u] > 0) printf(" %6.1f%%", 100.0 * q.gops / peak[u]);
            else printf(" %7s", "-");
            printf("   %-12s %9.1f %9.2fx  %.4f/%.4f   %s%s%s\n", b.kernels, b.gops, b.gops > 0 ? q.gops / b.gops : 0.0,
                   rmean, rmin, q.ok && b.ok ? "ok" : "FAILED: ", q.ok ? "" : q.msg, b.ok ? "" : b.msg);
            fflush(stdout);
            failed |= !q.ok || !b.ok;
            if (js) {
                fprintf(js, "{\"set\": \"%s\", \"codes\": \"%s\", \"threads\": %d, \"S\": %lld, \"rows\": %lld, "
                        "\"kernels\": \"%s\", \"gops\": %.3f",
                        name, code_names[c], threads, (long long)S, (long long)r, q.kernels, q.gops);
                json_rates(js, "gops_runs", &q);
                fprintf(js, ", \"unit\": \"%s\", \"peak\": %.2f, \"bf16_kernels\": \"%s\", \"bf16_gops\": %.3f",
                        bench_unit_key(u), u >= 0 ? peak[u] : 0.0, b.kernels, b.gops);
                if (peer) json_rates(js, "bf16_gops_runs", &b);
                fprintf(js, ", \"recall_mean\": %.6f, \"recall_min\": %.6f, \"recall_rows\": %lld, \"check\": \"%s%s%s\"}\n",
                        rmean, rmin, (long long)rrows, q.ok && b.ok ? "ok" : "FAILED: ", q.ok ? "" : q.msg, b.ok ? "" : b.msg);
                fflush(js);
            }
            if (dump_dir && c < 2 && r == rows && !(dumped & (1 << c))) {
                if (!dump(dump_dir, &P, &C)) failed = 1;
                dumped |= 1 << c;
            }
            free_codes(&C);
        }
    }
    lig_set_kernel_set(NULL);
    free_data(&P);
    if (js) fclose(js);
    return failed;
}

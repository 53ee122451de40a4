/* lig-bench: times lig's three CPU operations on DeepSeek-V3.2-shaped problems, for every kernel
 * set this machine has, checks a sample of every result against float64, and reports GFLOP/s as
 * a fraction of the measured peak of the unit each set computes with.
 *
 *   lig-bench [--op grad|fwd|step|all[,...]] [--sets all|scalar,avx2,...|all,-scalar] [--seq 4096[,...]]
 *             [--heads 64] [--kv-heads 1] [--dim 128] [--topk 2048] [--dtype bf16|fp16|fp32]
 *             [--threads 1,2] [--det 1|0|both] [--reps 5] [--json]
 *
 * Method.
 *
 * Problem. B = 1, S1 = S2 = S, BSND, sparse_mode 3 (causal), no band: row t sees keys 0..t.
 * Operations:
 *   fwd   lig_indexer: scores of every visible key and the top-K (indices INT32, values FLOAT32);
 *         2*G*D flops per visible (query row, key, key head).
 *   grad  lig_indexer_grad (dQ, dK, dW in the input dtype); 6*G*D flops per counted slot.
 *   step  one training step: lig_indexer, lig_kl_loss_and_dy, lig_indexer_grad, timed together;
 *         flops = forward + backward (the KL step's are not counted).
 *
 * Data (realistic, and the same for every set, thread count and op: fixed seeds). q and k are
 * N(0,1) (DeepSeek's indexer q and k leave LayerNorm / the Hadamard rotation with unit
 * scale); w = N(0,1) * N1^-0.5 * D^-0.5 (DeepSeek folds n_heads^-0.5 and the softmax scale into
 * the weights). Each value is converted to the dtype with round-to-nearest-even. The indices
 * and dy are what training produces: the forward selects the top-K visible keys of every row
 * (min(K, t+1) of them, then -1); the target p over the selected slots is a teacher that partly
 * agrees with the indexer, p ~ exp(I + N(0,1)) normalised over the row's counted slots; the KL
 * step turns (I, p) into dy = softmax(I) * sum(p) - p, written in the dtype. For `grad` this
 * forward + KL runs once before the timings (on the automatic set and all threads: it only
 * prepares inputs); for `step` the warm-up's forward supplies the selection p is made for, and
 * the timed runs recompute everything from q, k, w.
 *
 * Timing. Each (set, op, S, threads, det) runs in a forked child, so its peak RSS (taken when
 * the timings end, before the checks) is its own. In the child the set is forced with
 * lig_set_kernel_set and the kernels the plan actually runs are read with
 * lig_executor_kernel_set right after phase 1. Phase 1 and the workspace (one buffer, the
 * largest any executor asks for, touched before timing) are outside the timing; phase 2 is
 * timed: one warm-up, then --reps runs; the median is reported (for the step, also the median
 * of each of its three parts).
 *
 * Checks (every measurement; a failure is printed and makes the exit status non-zero). The
 * reference is float64, written here from the contract's formulas (docs/contract.md), evaluated on the very inputs the
 * library consumed (decoded from their dtype):
 *   fwd   for sample rows: indices are distinct visible keys, min(K, visible) of them then -1
 *         (values -inf), in descending reference score; no unselected key outscores a
 *         selected one; values match the reference score. Scores within rounding of each other
 *         may trade places, so every comparison allows both keys' error bound.
 *   kl    the loss over all rows, and dy on every slot, against float64 from the same I and p.
 *   grad  dQ and dW of sample rows, and dK of sample keys (every slot of every row that selected
 *         the key, found by a scan of the indices).
 * Per element the tolerance is the sum of:
 *   - the output dtype's rounding: u * |ref|, plus its smallest subnormal;
 *   - the fp32 accumulation bound (n + 2) * 2^-24 * sum|terms|, n the length of the element's
 *     chain of sums (dQ, dW: its counted slots; dK: the slots that selected the key plus G, each
 *     slot's G-head contribution summed first, the slots then in any order);
 *   - for sets that multiply bf16-rounded operands (names containing "bf16"), 2^-7 * sum|terms|;
 *   - for each slot whose score is within its own error bound of 0 (the ReLU gate may go either
 *     way), that slot's whole term.
 * The report gives the worst error as a fraction of its tolerance. For bf16/fp16 outputs the
 * rounding term is the least any tolerance can be, so values near 100% (half an ulp) are
 * expected there; with fp32 outputs the accumulation bound dominates.
 *
 * Peaks (unit_peaks.c), measured in this process before the children start, per thread count,
 * best of 3: AVX2 FMA (vfmadd231ps ymm, 16 flops), AVX-512 FMA (vfmadd231ps zmm, 32 flops),
 * AVX512-BF16 (vdpbf16ps zmm, 64 flops), AMX-BF16 (tdpbf16ps 16x16x32, 16384 flops), each only
 * when the CPU and OS have it. A kernel set is compared with the unit it uses: scalar -> none
 * (no ratio), avx2 -> AVX2 FMA, avx512 -> AVX-512 FMA, avx512bf16 -> AVX512-BF16,
 * amx-bf16 -> AMX-BF16. When the forward and the backward of a step run on different units,
 * the step's peak is the flop-weighted harmonic combination of the two (the step's time if
 * each part ran at its unit's peak).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <lig.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "unit_peaks.h"

#define MAX_LIST 32
#define MAX_SETS 16
#define MAX_REPS 255
#define CHECK_ROWS 8
#define CHECK_KEYS 4
#define U32 0x1p-24

typedef enum op_kind { OP_GRAD, OP_FWD, OP_STEP, OP_COUNT } op_kind;
static const char *const op_names[OP_COUNT] = {"grad", "fwd", "step"};

typedef struct options {
    int64_t seq[MAX_LIST];
    int n_seq;
    int threads[MAX_LIST];
    int n_threads;
    int det[2];
    int n_det;
    int ops[OP_COUNT];
    int n_ops;
    char sets[MAX_SETS][32];
    int n_sets;
    int64_t N1, N2, D, K;
    lig_dtype dtype;
    int reps;
    int json;
} options;

/* What a child sends back through its pipe (plain data). */
typedef struct result {
    int ok;                  /* the runs succeeded (the check is reported separately) */
    int check_ok;
    char error[320];
    char check[400];         /* "ok (...)" or the first failure */
    char ks_fwd[32], ks_kl[32], ks_grad[32]; /* lig_executor_kernel_set of each part run */
    int unit_fwd, unit_grad; /* bench_unit of the forward / backward kernels, or -1 */
    int reps;
    double times[MAX_REPS];
    double median_s, min_s;
    double part_s[3];        /* medians of the forward, KL step and backward parts */
    double flops_fwd, flops_grad;
    int64_t counted_slots, visible_pairs;
    uint64_t workspace;
    long peak_rss_kib;
    double loss;             /* the step's KL loss (0 for other ops) */
} result;

/* ---- small utilities -------------------------------------------------------------------- */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct rng {
    uint64_t s;
} rng;
static uint64_t next_u64(rng *r) { /* splitmix64 */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double uniform01(rng *r) { return ((double)(next_u64(r) >> 11) + 0.5) * 0x1p-53; } /* (0, 1) */
static double gaussian(rng *r) { /* Box-Muller; one value per call keeps the stream simple */
    const double u = uniform01(r), v = uniform01(r);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static const char *dtype_name(lig_dtype t) { return t == LIG_BFLOAT16 ? "bf16" : t == LIG_FLOAT16 ? "fp16" : "fp32"; }
static size_t dtype_size(lig_dtype t) { return t == LIG_FLOAT32 ? 4 : 2; }

/* Unit roundoff and smallest subnormal of an output dtype. */
static double dtype_u(lig_dtype t) { return t == LIG_BFLOAT16 ? 0x1p-8 : t == LIG_FLOAT16 ? 0x1p-11 : U32; }
static double dtype_tiny(lig_dtype t) { return t == LIG_BFLOAT16 ? 0x1p-133 : t == LIG_FLOAT16 ? 0x1p-24 : 0x1p-149; }

/* float -> bf16 / fp16, round to nearest even (finite inputs; overflow goes to infinity). */
static uint16_t f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* NaN stays NaN */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}
static uint16_t f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return sign | 0x7e00u;
    if (ax >= 0x477ff000u) return sign | 0x7c00u; /* >= 65520 rounds to infinity */
    if (ax < 0x38800000u) {                       /* below 2^-14: a subnormal, units of 2^-24 */
        float a;
        memcpy(&a, &ax, 4);
        return sign | (uint16_t)nearbyint((double)a * 0x1p24); /* default mode: to nearest even */
    }
    const uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u);
    return sign | (uint16_t)((r - 0x38000000u) >> 13);
}
static double f16_to_double(uint16_t h) {
    const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    const double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return h & 0x8000 ? -v : v;
}
static double bf16_to_double(uint16_t h) {
    const uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}
static void store(void *p, lig_dtype t, size_t i, double v) {
    if (t == LIG_FLOAT32) ((float *)p)[i] = (float)v;
    else if (t == LIG_BFLOAT16) ((uint16_t *)p)[i] = f32_to_bf16((float)v);
    else ((uint16_t *)p)[i] = f32_to_f16((float)v);
}
static double load(const void *p, lig_dtype t, size_t i) {
    if (t == LIG_FLOAT32) return ((const float *)p)[i];
    if (t == LIG_BFLOAT16) return bf16_to_double(((const uint16_t *)p)[i]);
    return f16_to_double(((const uint16_t *)p)[i]);
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* JSON string body: quotes, backslashes and control characters escaped. */
static void json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

/* ---- the problem -------------------------------------------------------------------------- */

typedef struct problem {
    int64_t S, N1, N2, G, D, K;
    lig_dtype dt;
    void *q, *k, *w, *dy, *dq, *dk, *dw;
    int32_t *idx;
    float *vals, *p, loss;
    lig_tensor *tq, *tk, *tw, *tdy, *tdq, *tdk, *tdw, *tidx, *tvals, *tp, *tloss;
} problem;

static void free_problem(problem *P) {
    lig_tensor *t[] = {P->tq, P->tk, P->tw, P->tdy, P->tdq, P->tdk, P->tdw, P->tidx, P->tvals, P->tp, P->tloss};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) lig_destroy_tensor(t[i]);
    void *b[] = {P->q, P->k, P->w, P->dy, P->dq, P->dk, P->dw, P->idx, P->vals, P->p};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) free(b[i]);
}

/* Allocates the buffers `op` uses and fills q, k, w (module comment: "Data"); the rest is written
 * by lig. Buffers an op does not use stay unallocated, so they do not count in its RSS. */
static int make_problem(problem *P, const options *o, int64_t S, op_kind op) {
    memset(P, 0, sizeof *P);
    P->S = S;
    P->N1 = o->N1;
    P->N2 = o->N2;
    P->G = o->N1 / o->N2;
    P->D = o->D;
    P->K = o->K;
    P->dt = o->dtype;
    const size_t es = dtype_size(P->dt);
    const size_t nq = (size_t)(S * P->N1 * P->D), nk = (size_t)(S * P->N2 * P->D), nw = (size_t)(S * P->N1),
                 ns = (size_t)(S * P->N2 * P->K);
    const int grad = op != OP_FWD;
    P->q = malloc(es * nq);
    P->k = malloc(es * nk);
    P->w = malloc(es * nw);
    P->idx = malloc(4 * ns);
    P->vals = malloc(4 * ns);
    if (grad) {
        P->dq = malloc(es * nq);
        P->dk = malloc(es * nk);
        P->dw = malloc(es * nw);
        P->dy = malloc(es * ns);
        P->p = malloc(4 * ns);
    }
    if (!P->q || !P->k || !P->w || !P->idx || !P->vals || (grad && (!P->dq || !P->dk || !P->dw || !P->dy || !P->p)))
        return 0;
    rng r = {0x5eed0001ull};
    for (size_t i = 0; i < nq; i++) store(P->q, P->dt, i, gaussian(&r));
    r.s = 0x5eed0002ull;
    for (size_t i = 0; i < nk; i++) store(P->k, P->dt, i, gaussian(&r));
    r.s = 0x5eed0003ull;
    const double wscale = 1.0 / sqrt((double)P->N1 * (double)P->D);
    for (size_t i = 0; i < nw; i++) store(P->w, P->dt, i, gaussian(&r) * wscale);
    /* the forward writes every slot; the backward's inputs start as zeros until the KL step
     * writes dy, so a check never reads uninitialised memory */
    if (grad) {
        memset(P->dy, 0, es * ns);
        memset(P->p, 0, 4 * ns);
    }
    const int64_t qs[] = {1, S, P->N1, P->D}, ks[] = {1, S, P->N2, P->D}, ws[] = {1, S, P->N1},
                  is[] = {1, S, P->N2, P->K}, one[] = {1};
    P->tq = lig_create_tensor(P->q, P->dt, 4, qs, NULL);
    P->tk = lig_create_tensor(P->k, P->dt, 4, ks, NULL);
    P->tw = lig_create_tensor(P->w, P->dt, 3, ws, NULL);
    P->tidx = lig_create_tensor(P->idx, LIG_INT32, 4, is, NULL);
    P->tvals = lig_create_tensor(P->vals, LIG_FLOAT32, 4, is, NULL);
    if (!grad) return P->tq && P->tk && P->tw && P->tidx && P->tvals;
    P->tdq = lig_create_tensor(P->dq, P->dt, 4, qs, NULL);
    P->tdk = lig_create_tensor(P->dk, P->dt, 4, ks, NULL);
    P->tdw = lig_create_tensor(P->dw, P->dt, 3, ws, NULL);
    P->tdy = lig_create_tensor(P->dy, P->dt, 4, is, NULL);
    P->tp = lig_create_tensor(P->p, LIG_FLOAT32, 4, is, NULL);
    P->tloss = lig_create_tensor(&P->loss, LIG_FLOAT32, 1, one, NULL);
    return P->tq && P->tk && P->tw && P->tdq && P->tdk && P->tdw && P->tdy && P->tidx && P->tvals && P->tp && P->tloss;
}

/* Row t of a causal S1 = S2 problem sees keys 0..t. */
static int64_t visible_keys(const problem *P, int64_t t) { return t + 1 < P->S ? t + 1 : P->S; }

/* The teacher's target over the selected slots of each row (module comment: "Data"). */
static void make_target(problem *P) {
    const int64_t K = P->K;
    for (int64_t row = 0; row < P->S * P->N2; row++) {
        const int32_t *ix = P->idx + row * K;
        const float *v = P->vals + row * K;
        float *p = P->p + row * K;
        rng r = {0x7a67e7ull ^ ((uint64_t)row * 0x9e3779b97f4a7c15ull)};
        double m = -INFINITY, z = 0.0;
        for (int64_t j = 0; j < K; j++)
            if (ix[j] >= 0 && v[j] > m) m = v[j];
        for (int64_t j = 0; j < K; j++) {
            const double e = ix[j] >= 0 ? exp((double)v[j] - m + gaussian(&r)) : 0.0;
            p[j] = (float)e;
            z += e;
        }
        for (int64_t j = 0; j < K; j++) p[j] = z > 0 ? (float)(p[j] / z) : 0.0f;
    }
}

static lig_status plan_fwd(problem *P, uint64_t *ws, lig_executor **e) {
    return lig_indexer_get_workspace_size(P->tq, P->tk, P->tw, NULL, NULL, "BSND", P->K, 3, INT64_MAX, INT64_MAX,
                                          P->tidx, P->tvals, ws, e);
}
static lig_status plan_kl(problem *P, uint64_t *ws, lig_executor **e) {
    return lig_kl_loss_and_dy_get_workspace_size(P->tvals, P->tidx, P->tp, P->tloss, P->tdy, ws, e);
}
static lig_status plan_grad(problem *P, int det, uint64_t *ws, lig_executor **e) {
    return lig_indexer_grad_get_workspace_size(P->tq, P->tk, P->tdy, P->tidx, P->tw, NULL, NULL, P->N1, "BSND", 3,
                                               INT64_MAX, INT64_MAX, det != 0, P->tdq, P->tdk, P->tdw, ws, e);
}

typedef struct workspace {
    void *data;
    uint64_t size;
} workspace;

/* Grows the workspace to `need` bytes, touching every page so that no fault lands in a timing. */
static int ws_reserve(workspace *w, uint64_t need) {
    if (need <= w->size) return 1;
    free(w->data);
    w->data = malloc(need);
    w->size = w->data ? need : 0;
    if (w->data) memset(w->data, 0, need);
    return w->data != NULL;
}

/* ---- float64 references and the checks ---------------------------------------------------- */

/* Products from bf16-rounded operands: the error each product may carry (module comment). */
static double kernel_u(const char *ks) { return strstr(ks, "bf16") ? 0x1p-7 : 0.0; }

typedef struct checker {
    int ok;
    double worst;       /* max |lib - ref| / tolerance over everything checked */
    char first[320];    /* the first failure */
} checker;

static void check_value(checker *c, const char *what, int64_t a, int64_t b, int64_t d, double lib, double ref,
                        double tol) {
    const double err = fabs(lib - ref);
    const double frac = tol > 0 ? err / tol : (err > 0 ? INFINITY : 0.0);
    if (!(frac <= 1.0)) { /* NaN fails too */
        if (c->ok)
            snprintf(c->first, sizeof c->first, "%s[%lld,%lld,%lld]: lib %.9g, float64 %.9g, tolerance %.3g", what,
                     (long long)a, (long long)b, (long long)d, lib, ref, tol);
        c->ok = 0;
    }
    if (frac > c->worst || isnan(frac)) c->worst = frac;
}

__attribute__((format(printf, 2, 3))) static void check_fail(checker *c, const char *fmt, ...) {
    if (c->ok) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->first, sizeof c->first, fmt, ap);
        va_end(ap);
    }
    c->ok = 0;
}

/* Sample query rows: the first, rows around K (the last with padding, the first without),
 * the middle, the last, and a few seeded random ones. */
static int pick_rows(int64_t S, int64_t K, int64_t *rows) {
    int64_t cand[CHECK_ROWS] = {0, K - 1, K, S / 2, S - 1, 0, 0, 0};
    rng r = {0xc0ffeeull};
    for (int i = 5; i < CHECK_ROWS; i++) cand[i] = (int64_t)(next_u64(&r) % (uint64_t)S);
    int n = 0;
    for (int i = 0; i < CHECK_ROWS; i++) {
        if (cand[i] < 0 || cand[i] >= S) continue;
        int dup = 0;
        for (int j = 0; j < n; j++) dup |= rows[j] == cand[i];
        if (!dup) rows[n++] = cand[i];
    }
    return n;
}

/* Decodes key row s of head g and the G query rows / weights of (t, g) into doubles. */
/* The float64 score q.k of one head and the sum of |q_d k_d| (the scale of its rounding error). */
static double dot_abs(const double *q, const double *k, int64_t D, double *abs_sum) {
    double sc = 0.0, ab = 0.0;
    for (int64_t d = 0; d < D; d++) {
        sc += q[d] * k[d];
        ab += fabs(q[d] * k[d]);
    }
    *abs_sum = ab;
    return sc;
}

static void decode_key(const problem *P, int64_t s, int64_t g, double *kd) {
    for (int64_t d = 0; d < P->D; d++) kd[d] = load(P->k, P->dt, (size_t)((s * P->N2 + g) * P->D + d));
}
static void decode_query(const problem *P, int64_t t, int64_t g, double *qd, double *wd) {
    for (int64_t h = 0; h < P->G; h++) {
        const int64_t hh = g * P->G + h;
        wd[h] = load(P->w, P->dt, (size_t)(t * P->N1 + hh));
        for (int64_t d = 0; d < P->D; d++) qd[h * P->D + d] = load(P->q, P->dt, (size_t)((t * P->N1 + hh) * P->D + d));
    }
}

/* Forward of sample rows: selection and values (module comment: "Checks"). */
static int check_forward(const problem *P, const char *ks, checker *c, int *rows_checked) {
    const int64_t S = P->S, G = P->G, D = P->D, K = P->K;
    const double uk = kernel_u(ks);
    int64_t rows[CHECK_ROWS];
    const int nr = pick_rows(S, K, rows);
    double *qd = malloc(sizeof(double) * (size_t)(G * D)), *wd = malloc(sizeof(double) * (size_t)G);
    double *kd = malloc(sizeof(double) * (size_t)D), *score = malloc(sizeof(double) * (size_t)S);
    double *err = malloc(sizeof(double) * (size_t)S);
    unsigned char *sel = calloc((size_t)S, 1);
    if (!qd || !wd || !kd || !score || !err || !sel) {
        check_fail(c, "out of memory for the forward check");
        return 0;
    }
    for (int i = 0; i < nr; i++)
        for (int64_t g = 0; g < P->N2; g++) {
            const int64_t t = rows[i], vis = visible_keys(P, t), n = vis < K ? vis : K;
            decode_query(P, t, g, qd, wd);
            for (int64_t s = 0; s < vis; s++) {
                decode_key(P, s, g, kd);
                double I = 0.0, scale = 0.0;
                for (int64_t h = 0; h < G; h++) {
                    double dot = 0.0, ab = 0.0;
                    for (int64_t d = 0; d < D; d++) {
                        const double x = qd[h * D + d] * kd[d];
                        dot += x;
                        ab += fabs(x);
                    }
                    I += wd[h] * (dot > 0 ? dot : 0.0);
                    scale += fabs(wd[h]) * ab;
                }
                score[s] = I;
                err[s] = (uk + (double)(D + G + 2) * U32) * scale;
            }
            const int32_t *ix = P->idx + (t * P->N2 + g) * K;
            const float *v = P->vals + (t * P->N2 + g) * K;
            double sel_low = INFINITY; /* lowest selected score, plus its error */
            for (int64_t j = 0; j < K; j++) {
                const int64_t s = ix[j];
                if (j >= n) {
                    if (s != -1 || v[j] != -INFINITY)
                        check_fail(c, "fwd row %lld head %lld slot %lld: expected -1 / -inf padding, got index %lld",
                                   (long long)t, (long long)g, (long long)j, (long long)s);
                    continue;
                }
                if (s < 0 || s >= vis || sel[s]) {
                    check_fail(c, "fwd row %lld head %lld slot %lld: index %lld is not a new visible key", (long long)t,
                               (long long)g, (long long)j, (long long)s);
                    continue;
                }
                sel[s] = 1;
                if (score[s] + err[s] < sel_low) sel_low = score[s] + err[s];
                if (j > 0 && ix[j - 1] >= 0 && score[s] - err[s] > score[ix[j - 1]] + err[ix[j - 1]])
                    check_fail(c, "fwd row %lld head %lld slot %lld: key %lld outscores the slot before it",
                               (long long)t, (long long)g, (long long)j, (long long)s);
                check_value(c, "fwd value [row,head,slot]", t, g, j, v[j], score[s],
                            err[s] + 1.01 * U32 * fabs(score[s]));
            }
            for (int64_t s = 0; s < vis; s++) { /* no unselected key clearly beats a selected one */
                if (!sel[s] && score[s] - err[s] > sel_low)
                    check_fail(c, "fwd row %lld head %lld: key %lld (not selected) outscores a selected key",
                               (long long)t, (long long)g, (long long)s);
            }
            for (int64_t j = 0; j < n; j++)
                if (ix[j] >= 0 && ix[j] < vis) sel[ix[j]] = 0;
        }
    free(qd), free(wd), free(kd), free(score), free(err), free(sel);
    *rows_checked = nr;
    return c->ok;
}

/* KL step: the loss over all rows and dy on every slot, from the I and p the library read. */
static int check_kl(const problem *P, checker *c) {
    const int64_t K = P->K, rows = P->S * P->N2;
    const double u_dy = dtype_u(P->dt), tiny = dtype_tiny(P->dt);
    double loss = 0.0, loss_err = 0.0;
    for (int64_t r = 0; r < rows; r++) {
        const int32_t *ix = P->idx + r * K;
        const float *v = P->vals + r * K, *p = P->p + r * K;
        double m = -INFINITY, mass = 0.0, z = 0.0;
        int64_t n = 0;
        for (int64_t j = 0; j < K; j++)
            if (ix[j] >= 0) {
                m = v[j] > m ? v[j] : m;
                mass += p[j];
                n++;
            }
        if (!n) continue;
        for (int64_t j = 0; j < K; j++)
            if (ix[j] >= 0) z += exp((double)v[j] - m);
        const double lz = log(z);
        double row_abs = 0.0;
        for (int64_t j = 0; j < K; j++) {
            const int64_t i = r * K + j;
            if (ix[j] < 0) {
                check_value(c, "kl dy [row,slot,-]", r, j, 0, load(P->dy, P->dt, (size_t)i), 0.0, 0.0);
                continue;
            }
            const double lq = (double)v[j] - m - lz, qj = exp(lq);
            /* fp32 evaluation: the exponent's argument carries a few roundings of |v - m| and
             * log z, the normaliser up to n of them, and the result is rounded into the dtype */
            const double arg_err = U32 * (8.0 * (fabs((double)v[j] - m) + fabs(lz) + 1.0) + 2.0 * (double)n);
            const double ref = qj * mass - p[j];
            const double tol = 1.01 * u_dy * fabs(ref) + tiny + qj * mass * arg_err + 4.0 * U32 * p[j];
            check_value(c, "kl dy [row,slot,-]", r, j, 0, load(P->dy, P->dt, (size_t)i), ref, tol);
            if (p[j] > 0) {
                const double term = p[j] * (log((double)p[j]) - lq);
                loss += term;
                row_abs += fabs(term);
                loss_err += p[j] * (arg_err + 8.0 * U32 * fabs(log((double)p[j])));
            }
        }
        loss_err += (double)(n + rows) * U32 * row_abs; /* the row's and the total's fp32 sums */
    }
    check_value(c, "kl loss [-,-,-]", 0, 0, 0, P->loss, loss, loss_err + 2.0 * U32 * fabs(loss));
    return c->ok;
}

/* One output element's float64 reference with the pieces of its tolerance. */
typedef struct acc {
    double ref, abs, amb, n;
} acc;
static double acc_tol(const acc *a, double uk, lig_dtype out) {
    return 1.01 * dtype_u(out) * fabs(a->ref) + dtype_tiny(out) + (uk + (a->n + 2.0) * U32) * a->abs + a->amb;
}

/* Backward: dQ, dW of sample rows and dK of sample keys (module comment: "Checks"). */
static int check_grad(const problem *P, const char *ks, checker *c, int *rows_checked, int *keys_checked) {
    const int64_t S = P->S, G = P->G, D = P->D, K = P->K, N2 = P->N2;
    const double uk = kernel_u(ks), eS_unit = uk + (double)D * U32;
    int64_t rows[CHECK_ROWS];
    const int nr = pick_rows(S, K, rows);
    const int64_t keys[CHECK_KEYS] = {0, S / 3, (2 * S) / 3, S - 1};
    double *qd = malloc(sizeof(double) * (size_t)(G * D)), *wd = malloc(sizeof(double) * (size_t)G);
    double *kd = malloc(sizeof(double) * (size_t)D);
    acc *dq = malloc(sizeof(acc) * (size_t)(G * D)), *dw = malloc(sizeof(acc) * (size_t)G);
    acc *dk = calloc((size_t)(CHECK_KEYS * N2 * D), sizeof(acc));
    if (!qd || !wd || !kd || !dq || !dw || !dk) {
        check_fail(c, "out of memory for the backward check");
        return 0;
    }
    /* dQ and dW of the sample rows */
    for (int i = 0; i < nr; i++)
        for (int64_t g = 0; g < N2; g++) {
            const int64_t t = rows[i];
            decode_query(P, t, g, qd, wd);
            memset(dq, 0, sizeof(acc) * (size_t)(G * D));
            memset(dw, 0, sizeof(acc) * (size_t)G);
            for (int64_t j = 0; j < K; j++) {
                const int64_t s = P->idx[(t * N2 + g) * K + j];
                if (s < 0 || s > t) continue; /* padding; a visible-range violation would be masked */
                const double dyv = load(P->dy, P->dt, (size_t)((t * N2 + g) * K + j));
                decode_key(P, s, g, kd);
                for (int64_t h = 0; h < G; h++) {
                    double ab;
                    const double sc = dot_abs(qd + h * D, kd, D, &ab);
                    const double eS = eS_unit * ab, A = sc > 0 ? wd[h] * dyv : 0.0;
                    const int ambiguous = fabs(sc) <= eS;
                    dw[h].ref += sc > 0 ? sc * dyv : 0.0;
                    dw[h].abs += fabs(sc > 0 ? sc * dyv : 0.0);
                    dw[h].amb += fabs(dyv) * eS;
                    dw[h].n += 1;
                    for (int64_t d = 0; d < D; d++) {
                        acc *a = &dq[h * D + d];
                        a->ref += A * kd[d];
                        a->abs += fabs(A * kd[d]);
                        if (ambiguous) a->amb += fabs(wd[h] * dyv * kd[d]);
                        a->n += 1;
                    }
                }
            }
            for (int64_t h = 0; h < G; h++) {
                const int64_t hh = g * G + h;
                check_value(c, "dW [row,head,-]", t, hh, 0, load(P->dw, P->dt, (size_t)(t * P->N1 + hh)), dw[h].ref,
                            acc_tol(&dw[h], uk, P->dt));
                for (int64_t d = 0; d < D; d++)
                    check_value(c, "dQ [row,head,dim]", t, hh, d,
                                load(P->dq, P->dt, (size_t)((t * P->N1 + hh) * D + d)), dq[h * D + d].ref,
                                acc_tol(&dq[h * D + d], uk, P->dt));
            }
        }
    /* dK of the sample keys: every counted slot of every row that selected one of them */
    for (int64_t t = 0; t < S; t++)
        for (int64_t g = 0; g < N2; g++) {
            int decoded = 0;
            for (int64_t j = 0; j < K; j++) {
                const int64_t s = P->idx[(t * N2 + g) * K + j];
                if (s < 0 || s > t) continue;
                for (int key = 0; key < CHECK_KEYS; key++) {
                    if (keys[key] != s || (key > 0 && keys[key - 1] == s)) continue;
                    if (!decoded) decode_query(P, t, g, qd, wd);
                    decoded = 1;
                    const double dyv = load(P->dy, P->dt, (size_t)((t * N2 + g) * K + j));
                    decode_key(P, s, g, kd);
                    for (int64_t h = 0; h < G; h++) {
                        double ab;
                        const double sc = dot_abs(qd + h * D, kd, D, &ab);
                        const double A = sc > 0 ? wd[h] * dyv : 0.0;
                        const int ambiguous = fabs(sc) <= eS_unit * ab;
                        for (int64_t d = 0; d < D; d++) {
                            acc *a = &dk[(key * N2 + g) * D + d];
                            a->ref += A * qd[h * D + d];
                            a->abs += fabs(A * qd[h * D + d]);
                            if (ambiguous) a->amb += fabs(wd[h] * dyv * qd[h * D + d]);
                            /* the chain: one G-term contribution per slot, the slots summed in any order */
                            if (h == 0) a->n += 1;
                        }
                    }
                }
            }
        }
    int nk = 0;
    for (int key = 0; key < CHECK_KEYS; key++) {
        if (keys[key] < 0 || keys[key] >= S || (key > 0 && keys[key - 1] == keys[key])) continue;
        nk++;
        for (int64_t g = 0; g < N2; g++)
            for (int64_t d = 0; d < D; d++) {
                acc *a = &dk[(key * N2 + g) * D + d];
                if (a->n > 0) a->n += (double)G;
                const double lib = load(P->dk, P->dt, (size_t)((keys[key] * N2 + g) * D + d));
                if (a->n == 0 && lib != 0.0) /* nobody selected the key: exactly 0 */
                    check_value(c, "dK (never selected) [key,head,dim]", keys[key], g, d, lib, 0.0, 0.0);
                else
                    check_value(c, "dK [key,head,dim]", keys[key], g, d, lib, a->ref, acc_tol(a, uk, P->dt));
            }
    }
    free(qd), free(wd), free(kd), free(dq), free(dw), free(dk);
    *rows_checked = nr;
    *keys_checked = nk;
    return c->ok;
}

/* ---- one measurement, in a child process ---------------------------------------------------- */

static void fail(result *r, const char *what, lig_status st) {
    snprintf(r->error, sizeof r->error, "%s: %s: %s", what, lig_status_string(st), lig_get_last_error());
}

/* Runs phase 2 of a planned executor; on failure records it. */
static int run2(lig_status (*fn)(void *, uint64_t, lig_executor *, void *), const workspace *w, lig_executor *e,
                result *r, const char *what) {
    const lig_status st = fn(w->data, w->size, e, NULL);
    if (st != LIG_SUCCESS) fail(r, what, st);
    return st == LIG_SUCCESS;
}

/* Runs the planned parts in order (any may be NULL); phase 2 consumes each executor, and after a
 * failure the ones not run are destroyed. With `make_p`, the target is made from the forward's
 * selection before the KL step. */
static int run_parts(problem *P, const workspace *w, lig_executor *ef, lig_executor *ek, lig_executor *eg, int make_p,
                     result *r, double part[3]) {
    int ok = 1;
    double t = now(), t1;
    if (ef) ok = run2(lig_indexer, w, ef, r, "forward");
    if (ok && make_p) make_target(P);
    t1 = now(), part[0] = t1 - t, t = t1;
    if (ek) {
        if (ok) ok = run2(lig_kl_loss_and_dy, w, ek, r, "KL step");
        else lig_destroy_executor(ek);
    }
    t1 = now(), part[1] = t1 - t, t = t1;
    if (eg) {
        if (ok) ok = run2(lig_indexer_grad, w, eg, r, "backward");
        else lig_destroy_executor(eg);
    }
    part[2] = now() - t;
    return ok;
}

/* The forward + KL step that give the backward its indices and dy (module comment: "Data"). */
static int prepare_grad_inputs(problem *P, workspace *w, result *r) {
    for (int kl = 0; kl < 2; kl++) { /* the forward (which also makes the target), then the KL step */
        uint64_t need = 0;
        lig_executor *e = NULL;
        const lig_status st = kl ? plan_kl(P, &need, &e) : plan_fwd(P, &need, &e);
        if (st != LIG_SUCCESS) {
            fail(r, kl ? "setup KL step, phase 1" : "setup forward, phase 1", st);
            return 0;
        }
        if (!ws_reserve(w, need)) {
            lig_destroy_executor(e);
            snprintf(r->error, sizeof r->error, "out of memory for the setup workspace");
            return 0;
        }
        double part[3];
        if (!run_parts(P, w, kl ? NULL : e, kl ? e : NULL, NULL, !kl, r, part)) return 0;
    }
    return 1;
}

static void run_config(const options *o, const char *set, op_kind op, int64_t S, int threads, int det, result *r) {
    memset(r, 0, sizeof *r);
    r->unit_fwd = r->unit_grad = BENCH_UNIT_NONE;
    problem P;
    workspace w = {0};
    if (!make_problem(&P, o, S, op)) {
        snprintf(r->error, sizeof r->error, "out of memory for the inputs (S = %lld)", (long long)S);
        return;
    }
    if (op == OP_GRAD) {
        lig_set_num_threads(0);
        lig_set_kernel_set(NULL);
        if (!prepare_grad_inputs(&P, &w, r)) return;
    }
    lig_status st = lig_set_kernel_set(set);
    if (st != LIG_SUCCESS) {
        fail(r, "lig_set_kernel_set", st);
        return;
    }
    lig_set_num_threads(threads);
    const int need_fwd = op != OP_GRAD, need_kl = op == OP_STEP, need_grad = op != OP_FWD;
    const int reps = o->reps < 1 ? 1 : o->reps > MAX_REPS ? MAX_REPS : o->reps;
    double part_times[MAX_REPS][3]; /* forward, KL step, backward of each timed run */
    for (int rep = -1; rep < reps; rep++) { /* rep -1 is the warm-up */
        lig_executor *ef = NULL, *ek = NULL, *eg = NULL;
        uint64_t nf = 0, nkl = 0, ng = 0;
        if (need_fwd && (st = plan_fwd(&P, &nf, &ef)) != LIG_SUCCESS) {
            fail(r, "forward, phase 1", st);
            return;
        }
        if (need_kl && (st = plan_kl(&P, &nkl, &ek)) != LIG_SUCCESS) {
            lig_destroy_executor(ef);
            fail(r, "KL step, phase 1", st);
            return;
        }
        if (need_grad && (st = plan_grad(&P, det, &ng, &eg)) != LIG_SUCCESS) {
            lig_destroy_executor(ef), lig_destroy_executor(ek);
            fail(r, "backward, phase 1", st);
            return;
        }
        /* phase 2 frees the executor: what it will run is read now */
        snprintf(r->ks_fwd, sizeof r->ks_fwd, "%s", ef ? lig_executor_kernel_set(ef) : "");
        snprintf(r->ks_kl, sizeof r->ks_kl, "%s", ek ? lig_executor_kernel_set(ek) : "");
        snprintf(r->ks_grad, sizeof r->ks_grad, "%s", eg ? lig_executor_kernel_set(eg) : "");
        uint64_t need = nf > nkl ? nf : nkl;
        need = ng > need ? ng : need;
        if (!ws_reserve(&w, need)) {
            lig_destroy_executor(ef), lig_destroy_executor(ek), lig_destroy_executor(eg);
            snprintf(r->error, sizeof r->error, "out of memory for a %llu-byte workspace", (unsigned long long)need);
            return;
        }
        r->workspace = need;
        if (rep < 0) { /* warm-up; for the step, the target is made for the forward's selection */
            double part[3];
            if (!run_parts(&P, &w, ef, ek, eg, op == OP_STEP, r, part)) return;
            continue;
        }
        const double t0 = now();
        const int ok = run_parts(&P, &w, ef, ek, eg, 0, r, part_times[rep]);
        const double dt = now() - t0;
        if (!ok) return;
        if (rep >= 0) r->times[rep] = dt;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    r->peak_rss_kib = ru.ru_maxrss; /* before the checks allocate anything */
    r->reps = reps;
    double sorted[MAX_REPS];
    memcpy(sorted, r->times, sizeof(double) * (size_t)reps);
    qsort(sorted, (size_t)reps, sizeof sorted[0], cmp_double);
    r->median_s = reps % 2 ? sorted[reps / 2] : 0.5 * (sorted[reps / 2 - 1] + sorted[reps / 2]);
    r->min_s = sorted[0];
    for (int k = 0; k < 3; k++) { /* the median of each part, for the step's breakdown */
        for (int i = 0; i < reps; i++) sorted[i] = part_times[i][k];
        qsort(sorted, (size_t)reps, sizeof sorted[0], cmp_double);
        r->part_s[k] = reps % 2 ? sorted[reps / 2] : 0.5 * (sorted[reps / 2 - 1] + sorted[reps / 2]);
    }
    for (int64_t t = 0; t < S; t++) r->visible_pairs += visible_keys(&P, t) * P.N2;
    for (int64_t i = 0; i < S * P.N2 * P.K; i++) r->counted_slots += P.idx[i] >= 0;
    r->flops_fwd = need_fwd ? 2.0 * (double)P.G * (double)P.D * (double)r->visible_pairs : 0.0;
    r->flops_grad = need_grad ? 6.0 * (double)P.G * (double)P.D * (double)r->counted_slots : 0.0;
    r->unit_fwd = need_fwd ? bench_unit_for_kernel_set(r->ks_fwd) : BENCH_UNIT_NONE;
    r->unit_grad = need_grad ? bench_unit_for_kernel_set(r->ks_grad) : BENCH_UNIT_NONE;
    r->loss = op == OP_STEP ? P.loss : 0.0;
    r->ok = 1;

    checker c = {.ok = 1};
    int fwd_rows = 0, grad_rows = 0, grad_keys = 0;
    char parts[200] = "";
    size_t len = 0;
    if (need_fwd && check_forward(&P, r->ks_fwd, &c, &fwd_rows))
        len += (size_t)snprintf(parts + len, sizeof parts - len, "fwd %d rows", fwd_rows);
    if (c.ok && need_kl && check_kl(&P, &c))
        len += (size_t)snprintf(parts + len, sizeof parts - len, ", loss + dy all %lld rows", (long long)(S * P.N2));
    if (c.ok && need_grad && check_grad(&P, r->ks_grad, &c, &grad_rows, &grad_keys))
        len += (size_t)snprintf(parts + len, sizeof parts - len, "%sdQ/dW %d rows, dK %d keys", len ? ", " : "",
                                grad_rows, grad_keys);
    r->check_ok = c.ok;
    if (c.ok) snprintf(r->check, sizeof r->check, "ok (%s; worst error %.2g%% of tolerance)", parts, 100.0 * c.worst);
    else snprintf(r->check, sizeof r->check, "FAILED: %s", c.first);
    free_problem(&P);
    free(w.data);
}

/* Runs one configuration in a child process. */
static void run_isolated(const options *o, const char *set, op_kind op, int64_t S, int threads, int det, result *r) {
    int fd[2];
    memset(r, 0, sizeof *r);
    if (pipe(fd) != 0) {
        snprintf(r->error, sizeof r->error, "pipe failed");
        return;
    }
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) {
        snprintf(r->error, sizeof r->error, "fork failed");
        close(fd[0]), close(fd[1]);
        return;
    }
    if (pid == 0) {
        close(fd[0]);
        result *child = calloc(1, sizeof *child);
        if (!child) _exit(1);
        run_config(o, set, op, S, threads, det, child);
        const char *p = (const char *)child;
        size_t left = sizeof *child;
        while (left) {
            const ssize_t n = write(fd[1], p, left);
            if (n <= 0) _exit(1);
            p += n, left -= (size_t)n;
        }
        _exit(0);
    }
    close(fd[1]);
    char *p = (char *)r;
    size_t got = 0;
    while (got < sizeof *r) {
        const ssize_t n = read(fd[0], p + got, sizeof *r - got);
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got != sizeof *r) {
        memset(r, 0, sizeof *r);
        if (WIFSIGNALED(status))
            snprintf(r->error, sizeof r->error, "child killed by signal %d (out of memory?)", WTERMSIG(status));
        else snprintf(r->error, sizeof r->error, "child exited with status %d", WEXITSTATUS(status));
    }
}

/* ---- the machine ---------------------------------------------------------------------------- */

static void cpu_name(char *out, size_t size) {
    snprintf(out, size, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512], model[256] = "", family[32] = "", number[32] = "";
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon) {
            if (model[0]) break; /* end of the first processor's block */
            continue;
        }
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t') v++;
        v[strcspn(v, "\n")] = 0;
        if (!strncmp(line, "model name", 10)) snprintf(model, sizeof model, "%s", v);
        else if (!strncmp(line, "cpu family", 10)) snprintf(family, sizeof family, "%s", v);
        else if (!strncmp(line, "model", 5) && (line[5] == ' ' || line[5] == '\t'))
            snprintf(number, sizeof number, "%s", v);
    }
    fclose(f);
    if (model[0]) snprintf(out, size, "%s (family %s, model %s)", model, family, number);
}

/* ---- the command line -------------------------------------------------------------------------- */

static int parse_list(const char *s, int64_t *out, int cap) {
    int n = 0;
    while (*s) {
        char *end;
        const long long v = strtoll(s, &end, 10);
        if (end == s || v < 1 || n >= cap) return -1;
        out[n++] = v;
        if (*end && *end != ',') return -1;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

static void usage(const char *why) {
    if (why) fprintf(stderr, "lig-bench: %s\n", why);
    fprintf(stderr,
            "usage: lig-bench [--op grad|fwd|step|all[,...]] [--sets all|<set>[,...]|all,-<set>] [--seq 4096[,...]]\n"
            "                 [--heads 64] [--kv-heads 1] [--dim 128] [--topk 2048] [--dtype bf16|fp16|fp32]\n"
            "                 [--threads 1,2] [--det 1|0|both] [--reps 5] [--json]\n"
            "kernel sets on this machine: %s\n",
            lig_kernel_sets());
    exit(2);
}

/* Splits a comma-separated list of names into `out`; returns the count or -1. */
static int split_names(const char *s, char out[][32], int cap) {
    int n = 0;
    while (*s) {
        const size_t len = strcspn(s, ",");
        if (len == 0 || len >= 32 || n >= cap) return -1;
        memcpy(out[n], s, len);
        out[n][len] = 0;
        n++;
        s += len;
        if (*s == ',') s++;
    }
    return n;
}

static void parse_args(int argc, char **argv, options *o) {
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    *o = (options){.seq = {4096}, .n_seq = 1, .threads = {1, (int)(cpus > 1 ? cpus : 1)}, .n_threads = cpus > 1 ? 2 : 1,
                   .det = {1, 0}, .n_det = 2, .ops = {OP_GRAD, OP_FWD, OP_STEP}, .n_ops = 3, .N1 = 64, .N2 = 1,
                   .D = 128, .K = 2048, .dtype = LIG_BFLOAT16, .reps = 5};
    const char *sets = "all";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) {
            o->json = 1;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) usage(NULL);
        if (i + 1 >= argc) usage("missing value");
        const char *v = argv[++i];
        int64_t list[MAX_LIST];
        if (!strcmp(a, "--seq")) {
            if ((o->n_seq = parse_list(v, o->seq, MAX_LIST)) < 1) usage("--seq: expected a list of lengths >= 1");
        } else if (!strcmp(a, "--threads")) {
            if ((o->n_threads = parse_list(v, list, MAX_LIST)) < 1) usage("--threads: expected a list of counts >= 1");
            for (int j = 0; j < o->n_threads; j++) o->threads[j] = (int)list[j];
        } else if (!strcmp(a, "--det")) {
            if (!strcmp(v, "both")) o->n_det = 2, o->det[0] = 1, o->det[1] = 0;
            else if (!strcmp(v, "1") || !strcmp(v, "0")) o->n_det = 1, o->det[0] = v[0] == '1';
            else usage("--det: expected 1, 0 or both");
        } else if (!strcmp(a, "--dtype")) {
            if (!strcmp(v, "fp32")) o->dtype = LIG_FLOAT32;
            else if (!strcmp(v, "fp16")) o->dtype = LIG_FLOAT16;
            else if (!strcmp(v, "bf16")) o->dtype = LIG_BFLOAT16;
            else usage("--dtype: expected bf16, fp16 or fp32");
        } else if (!strcmp(a, "--op")) {
            char names[OP_COUNT + 1][32];
            const int n = split_names(v, names, OP_COUNT + 1);
            if (n < 1) usage("--op: expected grad, fwd, step or all");
            o->n_ops = 0;
            for (int j = 0; j < n; j++) {
                if (!strcmp(names[j], "all")) {
                    o->n_ops = 0;
                    for (int k = 0; k < OP_COUNT; k++) o->ops[o->n_ops++] = k;
                    break;
                }
                int found = -1;
                for (int k = 0; k < OP_COUNT; k++)
                    if (!strcmp(names[j], op_names[k])) found = k;
                if (found < 0) usage("--op: expected grad, fwd, step or all");
                o->ops[o->n_ops++] = found;
            }
        } else if (!strcmp(a, "--sets")) {
            sets = v;
        } else {
            char *end;
            const long long x = strtoll(v, &end, 10);
            if (*end || x < 1) usage("expected a positive integer");
            if (!strcmp(a, "--heads")) o->N1 = x;
            else if (!strcmp(a, "--kv-heads")) o->N2 = x;
            else if (!strcmp(a, "--dim")) o->D = x;
            else if (!strcmp(a, "--topk")) o->K = x;
            else if (!strcmp(a, "--reps")) o->reps = (int)(x > MAX_REPS ? MAX_REPS : x);
            else usage("unknown option");
        }
    }
    if (o->N1 % o->N2) usage("--heads must be a multiple of --kv-heads");
    /* --sets: names, "all" (every set lig_kernel_sets() reports), "-name" to leave one out */
    char avail[MAX_SETS][32], items[MAX_SETS][32];
    const int n_avail = split_names(lig_kernel_sets(), avail, MAX_SETS);
    const int n_items = split_names(sets, items, MAX_SETS);
    if (n_items < 1) usage("--sets: expected all or a list of kernel sets (-name leaves one out)");
    o->n_sets = 0;
    for (int j = 0; j < n_items; j++) {
        const int drop = items[j][0] == '-';
        const char *name = items[j] + drop;
        int found = !strcmp(name, "all");
        for (int k = 0; k < n_avail; k++) found |= !strcmp(name, avail[k]);
        if (!found) {
            char why[160];
            snprintf(why, sizeof why, "--sets: \"%s\" is not a kernel set this build and CPU support", name);
            usage(why);
        }
        for (int k = 0; k < n_avail; k++) {
            if (strcmp(name, "all") && strcmp(name, avail[k])) continue;
            int at = -1;
            for (int m = 0; m < o->n_sets; m++)
                if (!strcmp(o->sets[m], avail[k])) at = m;
            if (drop && at >= 0) { /* remove, keeping the order */
                for (int m = at; m + 1 < o->n_sets; m++) memcpy(o->sets[m], o->sets[m + 1], 32);
                o->n_sets--;
            } else if (!drop && at < 0) {
                memcpy(o->sets[o->n_sets++], avail[k], 32);
            }
        }
    }
    if (o->n_sets < 1) usage("--sets: no kernel set left to run");
}

/* ---- reporting ---------------------------------------------------------------------------------- */

typedef struct peaks {
    double gflops[BENCH_UNIT_COUNT][MAX_LIST]; /* [unit][thread-count index] */
} peaks;

/* The peak a result is compared with, its label, and whether there is one. */
static double result_peak(const result *r, const peaks *pk, int ti, char *label, size_t size) {
    const int uf = r->unit_fwd, ug = r->unit_grad;
    const int has_f = r->flops_fwd > 0, has_g = r->flops_grad > 0;
    if ((has_f && uf < 0) || (has_g && ug < 0) || (!has_f && !has_g)) {
        snprintf(label, size, "none");
        return 0.0;
    }
    if (!has_g || !has_f || uf == ug) {
        const int u = has_f ? uf : ug;
        snprintf(label, size, "%s", bench_unit_label(u));
        return pk->gflops[u][ti];
    }
    const double pf = pk->gflops[uf][ti], pg = pk->gflops[ug][ti];
    snprintf(label, size, "%s + %s", bench_unit_label(uf), bench_unit_label(ug));
    if (pf <= 0 || pg <= 0) return 0.0;
    return (r->flops_fwd + r->flops_grad) / (r->flops_fwd / pf + r->flops_grad / pg);
}

static const char *kernels_of(const result *r, op_kind op, char *buf, size_t size) {
    if (op == OP_FWD) snprintf(buf, size, "%s", r->ks_fwd);
    else if (op == OP_GRAD) snprintf(buf, size, "%s", r->ks_grad);
    else if (!strcmp(r->ks_fwd, r->ks_grad) && !strcmp(r->ks_fwd, r->ks_kl)) snprintf(buf, size, "%s", r->ks_fwd);
    else if (!strcmp(r->ks_fwd, r->ks_grad)) snprintf(buf, size, "%s, kl %s", r->ks_fwd, r->ks_kl);
    else snprintf(buf, size, "fwd %s, kl %s, grad %s", r->ks_fwd, r->ks_kl, r->ks_grad);
    return buf;
}

int main(int argc, char **argv) {
    options o;
    parse_args(argc, argv, &o);
    char cpu[400];
    cpu_name(cpu, sizeof cpu);
    const long online = sysconf(_SC_NPROCESSORS_ONLN);

    /* the unit peaks, in this process, before any measurement */
    peaks pk;
    memset(&pk, 0, sizeof pk);
    for (int u = 0; u < BENCH_UNIT_COUNT; u++)
        for (int j = 0; j < o.n_threads; j++) pk.gflops[u][j] = bench_unit_peak_gflops(u, o.threads[j], 3);

    if (o.json) {
        printf("{\"lig_version\": \"%s\", \"cpu\": ", lig_version());
        json_str(cpu);
        printf(", \"online_cpus\": %ld, \"kernel_sets\": ", online);
        json_str(lig_kernel_sets());
        printf(",\n \"problem\": {\"B\": 1, \"N1\": %lld, \"N2\": %lld, \"D\": %lld, \"K\": %lld, \"dtype\": \"%s\", "
               "\"layout\": \"BSND\", \"sparse_mode\": 3, \"reps\": %d},\n \"unit_peaks\": [",
               (long long)o.N1, (long long)o.N2, (long long)o.D, (long long)o.K, dtype_name(o.dtype), o.reps);
        int first = 1;
        for (int u = 0; u < BENCH_UNIT_COUNT; u++)
            for (int j = 0; j < o.n_threads; j++) {
                printf("%s\n  {\"unit\": \"%s\", \"label\": \"%s\", \"instruction\": \"%s\", \"available\": %s, "
                       "\"threads\": %d, \"gflops\": %.3f}",
                       first ? "" : ",", bench_unit_key(u), bench_unit_label(u), bench_unit_instruction(u),
                       bench_unit_available(u) ? "true" : "false", o.threads[j], pk.gflops[u][j]);
                first = 0;
            }
        printf("],\n \"results\": [");
    } else {
        printf("lig %s | CPU: %s, %ld online | kernel sets: %s\n", lig_version(), cpu, online, lig_kernel_sets());
        printf("problem: B=1 S1=S2=S N1=%lld N2=%lld D=%lld K=%lld %s BSND sparse_mode=3 | median of %d after a "
               "warm-up\n",
               (long long)o.N1, (long long)o.N2, (long long)o.D, (long long)o.K, dtype_name(o.dtype), o.reps);
        printf("measured unit peaks, GFLOP/s (best of 3, all threads at once):\n");
        for (int u = 0; u < BENCH_UNIT_COUNT; u++) {
            printf("  %-16s", bench_unit_label(u));
            if (!bench_unit_available(u)) {
                printf(" not on this CPU\n");
                continue;
            }
            for (int j = 0; j < o.n_threads; j++) printf(" %d thr %8.1f ", o.threads[j], pk.gflops[u][j]);
            printf(" [%s]\n", bench_unit_instruction(u));
        }
    }

    int failures = 0, first = 1;
    for (int si = 0; si < o.n_sets; si++) {
        const char *set = o.sets[si];
        if (!o.json) {
            printf("\nkernel set %s\n", set);
            printf("%-4s %6s %3s %3s %9s %9s %-22s %-16s %9s %7s %8s %8s  %s\n", "op", "S", "thr", "det", "median s",
                   "GFLOP/s", "kernels", "unit", "unit peak", "% peak", "ws MiB", "RSS MiB", "check");
        }
        for (int oi = 0; oi < o.n_ops; oi++) {
            const op_kind op = (op_kind)o.ops[oi];
            for (int s = 0; s < o.n_seq; s++)
                for (int ti = 0; ti < o.n_threads; ti++) {
                    const int n_det = op == OP_FWD ? 1 : o.n_det; /* the forward has no determinism switch */
                    for (int di = 0; di < n_det; di++) {
                        const int det = o.det[di];
                        result r;
                        if (o.json)
                            fprintf(stderr, "lig-bench: set %s, %s, S=%lld, %d thread(s)%s ...\n", set, op_names[op],
                                    (long long)o.seq[s], o.threads[ti],
                                    op == OP_FWD ? "" : det ? ", deterministic" : ", non-deterministic");
                        run_isolated(&o, set, op, o.seq[s], o.threads[ti], det, &r);
                        char unit[64], kbuf[128];
                        const double peak = r.ok ? result_peak(&r, &pk, ti, unit, sizeof unit) : 0.0;
                        if (!r.ok) snprintf(unit, sizeof unit, "none");
                        const double flops = r.flops_fwd + r.flops_grad;
                        const double gf = r.ok ? flops / r.median_s * 1e-9 : 0.0;
                        const double pct = peak > 0 ? 100.0 * gf / peak : 0.0;
                        failures += !r.ok || !r.check_ok;
                        if (o.json) {
                            printf("%s\n  {\"set\": \"%s\", \"op\": \"%s\", \"S\": %lld, \"N1\": %lld, \"N2\": %lld, "
                                   "\"D\": %lld, \"K\": %lld, \"dtype\": \"%s\", \"threads\": %d, ",
                                   first ? "" : ",", set, op_names[op], (long long)o.seq[s], (long long)o.N1,
                                   (long long)o.N2, (long long)o.D, (long long)o.K, dtype_name(o.dtype), o.threads[ti]);
                            if (op == OP_FWD) printf("\"deterministic\": null, ");
                            else printf("\"deterministic\": %s, ", det ? "true" : "false");
                            printf("\"ok\": %s, \"kernel_set_fwd\": \"%s\", \"kernel_set_kl\": \"%s\", "
                                   "\"kernel_set_grad\": \"%s\", \"unit\": ",
                                   r.ok ? "true" : "false", r.ks_fwd, r.ks_kl, r.ks_grad);
                            json_str(unit);
                            printf(", \"unit_peak_gflops\": ");
                            if (peak > 0) printf("%.3f, \"percent_of_unit_peak\": %.2f", peak, pct);
                            else printf("null, \"percent_of_unit_peak\": null");
                            printf(", \"median_s\": %.6f, \"min_s\": %.6f, \"times_s\": [", r.median_s, r.min_s);
                            for (int i = 0; i < r.reps; i++) printf("%s%.6f", i ? ", " : "", r.times[i]);
                            printf("], \"flops\": %.6g, \"flops_fwd\": %.6g, \"flops_grad\": %.6g, \"gflops\": %.3f, "
                                   "\"counted_slots\": %lld, \"visible_pairs\": %lld, \"workspace_bytes\": %llu, "
                                   "\"peak_rss_kib\": %ld, ",
                                   flops, r.flops_fwd, r.flops_grad, gf, (long long)r.counted_slots,
                                   (long long)r.visible_pairs, (unsigned long long)r.workspace, r.peak_rss_kib);
                            if (op == OP_STEP && r.ok)
                                printf("\"loss\": %.9g, \"part_median_s\": {\"fwd\": %.6f, \"kl\": %.6f, \"grad\": "
                                       "%.6f}, ",
                                       r.loss, r.part_s[0], r.part_s[1], r.part_s[2]);
                            printf("\"check_ok\": %s, \"check\": ", r.ok && r.check_ok ? "true" : "false");
                            json_str(r.ok ? r.check : "not run");
                            printf(", \"error\": ");
                            json_str(r.error);
                            printf("}");
                            first = 0;
                        } else {
                            printf("%-4s %6lld %3d %3s ", op_names[op], (long long)o.seq[s], o.threads[ti],
                                   op == OP_FWD ? "-" : det ? "yes" : "no");
                            if (!r.ok) {
                                printf("failed: %s\n", r.error);
                            } else {
                                printf("%9.4f %9.1f %-22s %-16s ", r.median_s, gf,
                                       kernels_of(&r, op, kbuf, sizeof kbuf), unit);
                                if (peak > 0) printf("%9.1f %6.1f%% ", peak, pct);
                                else printf("%9s %7s ", "-", "-");
                                printf("%8.1f %8.1f  %s\n", (double)r.workspace / 1048576.0,
                                       (double)r.peak_rss_kib / 1024.0, r.check);
                                if (op == OP_STEP)
                                    printf("%22s(step parts, medians: forward %.4f s, KL step %.4f s, "
                                           "backward %.4f s)\n",
                                           "", r.part_s[0], r.part_s[1], r.part_s[2]);
                            }
                        }
                        fflush(stdout);
                    }
                }
        }
    }
    if (o.json) printf("\n]}\n");
    else if (failures) printf("\n%d measurement(s) failed or failed their check\n", failures);
    return failures ? 1 : 0;
}

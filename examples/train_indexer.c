/* Trains a lightning indexer from scratch with lig: forward (scores + top-k) -> fused KL
 * step -> backward, plus Adam written here.
 *
 * The task. Each step draws a fresh sequence of S tokens with random features x_s (F dims).
 * A hidden "teacher" (standing in for the main attention) scores key s for query t as
 *   T(t, s) = (A x_t) . (B x_s) / tau        (A, B: r x F, fixed, unknown to the indexer)
 * The last Lq tokens are queries, aligned to the end of the keys (sparse_mode 3), so each sees
 * a few thousand keys. The indexer has DeepSeek-V3.2's head shape (N1 heads, one key head,
 * D dims) and learns small projections of the features:
 *   q_th = Wq_h x_t,  k_s = Wk x_s,  w_th = u_h        (Wq: N1*D x F, Wk: D x F, u: N1)
 * It selects the top-k keys per query with lig_indexer; the target p over those slots is the
 * teacher's attention restricted to them and L1-normalised (DeepSeek-V3.2's sparse-stage
 * objective); lig_indexer_kl_grad gives the loss and dy; lig_indexer_grad gives dQ, dK, dW,
 * which the chain rule takes to Wq, Wk and u. Recall@k compares the indexer's selection with
 * the teacher's own top-k: chance is k / visible keys.
 *
 *   lig-train-indexer [--keys S] [--queries Lq] [--heads N1] [--dim D] [--topk K] [--feat F]
 *                     [--rank r] [--steps N] [--lr LR] [--threads T] [--seed X]
 */
#define _POSIX_C_SOURCE 200809L
#include <lig.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct config {
    int64_t S, Lq, N1, D, K, F, r, steps;
    double lr, tau;
    int threads;
    uint64_t seed;
} config;

/* ---- small utilities ------------------------------------------------------------------ */

static uint64_t rng = 42;
static uint64_t next_u64(void) { /* splitmix64 */
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double uniform01(void) { return ((double)(next_u64() >> 11) + 0.5) * 0x1p-53; }
static float gaussian(void) { return (float)(sqrt(-2.0 * log(uniform01())) * cos(6.283185307179586 * uniform01())); }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static void check(lig_status st, const char *what) {
    if (st == LIG_SUCCESS) return;
    fprintf(stderr, "%s failed: %s: %s\n", what, lig_status_string(st), lig_get_last_error());
    exit(1);
}

/* y[m][n] = sum_f x[m][f] * W[n][f]   (x: M x F, W: N x F, y: M x N) */
static void matmul_xwt(const float *x, const float *W, int64_t M, int64_t N, int64_t F, float *y) {
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            const float *xm = x + m * F, *wn = W + n * F;
            float s = 0.0f;
            for (int64_t f = 0; f < F; f++) s += xm[f] * wn[f];
            y[m * N + n] = s;
        }
}

/* dW[n][f] = sum_m g[m][n] * x[m][f]   (the gradient of matmul_xwt with respect to W) */
static void matmul_gtx(const float *g, const float *x, int64_t M, int64_t N, int64_t F, float *dW) {
    memset(dW, 0, sizeof(float) * (size_t)(N * F));
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            const float c = g[m * N + n];
            if (c == 0.0f) continue;
            float *dn = dW + n * F;
            const float *xm = x + m * F;
            for (int64_t f = 0; f < F; f++) dn[f] += c * xm[f];
        }
}

/* Adam (Kingma & Ba) on one parameter array. */
typedef struct adam {
    float *m, *v;
    int64_t n;
} adam;

static void adam_step(adam *a, float *param, const float *grad, double lr, int64_t step) {
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    const double c1 = 1.0 - pow(b1, (double)step), c2 = 1.0 - pow(b2, (double)step);
    for (int64_t i = 0; i < a->n; i++) {
        a->m[i] = (float)(b1 * a->m[i] + (1 - b1) * grad[i]);
        a->v[i] = (float)(b2 * a->v[i] + (1 - b2) * (double)grad[i] * grad[i]);
        param[i] -= (float)(lr * (a->m[i] / c1) / (sqrt(a->v[i] / c2) + eps));
    }
}

/* ---- the teacher's top-k, for recall -------------------------------------------------- */

static const float *sort_scores;
static int by_score_desc(const void *a, const void *b) {
    const int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
    if (sort_scores[i] != sort_scores[j]) return sort_scores[i] > sort_scores[j] ? -1 : 1;
    return (i > j) - (i < j);
}

/* ---- one training run ------------------------------------------------------------------ */

static void usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s [--keys S] [--queries Lq] [--heads N1] [--dim D] [--topk K] [--feat F] [--rank r]\n"
            "          [--steps N] [--lr LR] [--threads T] [--seed X]\n",
            argv0);
    exit(2);
}

static config parse(int argc, char **argv) {
    config c = {.S = 4096, .Lq = 128, .N1 = 64, .D = 128, .K = 256, .F = 32, .r = 4, .steps = 200,
                .lr = 3e-3, .tau = 0.5, .threads = 0, .seed = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) usage(argv[0]);
        const char *v = argv[++i];
        if (!strcmp(a, "--lr")) {
            c.lr = atof(v);
            continue;
        }
        long long x = atoll(v);
        if (x < 1) usage(argv[0]);
        if (!strcmp(a, "--keys")) c.S = x;
        else if (!strcmp(a, "--queries")) c.Lq = x;
        else if (!strcmp(a, "--heads")) c.N1 = x;
        else if (!strcmp(a, "--dim")) c.D = x;
        else if (!strcmp(a, "--topk")) c.K = x;
        else if (!strcmp(a, "--feat")) c.F = x;
        else if (!strcmp(a, "--rank")) c.r = x;
        else if (!strcmp(a, "--steps")) c.steps = x;
        else if (!strcmp(a, "--threads")) c.threads = (int)x;
        else if (!strcmp(a, "--seed")) c.seed = (uint64_t)x;
        else usage(argv[0]);
    }
    if (c.Lq > c.S) c.Lq = c.S;
    return c;
}

int main(int argc, char **argv) {
    const config c = parse(argc, argv);
    const int64_t S = c.S, Lq = c.Lq, N1 = c.N1, D = c.D, K = c.K, F = c.F, r = c.r;
    rng = c.seed * 0x2545f4914f6cdd1dull + 7;
    if (c.threads) lig_set_num_threads(c.threads);

    /* the teacher, fixed and hidden */
    float *A = xcalloc((size_t)(r * F), sizeof(float)), *Bm = xcalloc((size_t)(r * F), sizeof(float));
    for (int64_t i = 0; i < r * F; i++) {
        A[i] = gaussian() / sqrtf((float)F);
        Bm[i] = gaussian() / sqrtf((float)F);
    }
    /* the indexer's parameters, random */
    float *Wq = xcalloc((size_t)(N1 * D * F), sizeof(float)), *Wk = xcalloc((size_t)(D * F), sizeof(float));
    float *u = xcalloc((size_t)N1, sizeof(float));
    for (int64_t i = 0; i < N1 * D * F; i++) Wq[i] = gaussian() / sqrtf((float)F);
    for (int64_t i = 0; i < D * F; i++) Wk[i] = gaussian() / sqrtf((float)F);
    for (int64_t h = 0; h < N1; h++) u[h] = 1.0f / sqrtf((float)(N1 * D));
    adam opt_q = {xcalloc((size_t)(N1 * D * F), 4), xcalloc((size_t)(N1 * D * F), 4), N1 * D * F};
    adam opt_k = {xcalloc((size_t)(D * F), 4), xcalloc((size_t)(D * F), 4), D * F};
    adam opt_u = {xcalloc((size_t)N1, 4), xcalloc((size_t)N1, 4), N1};

    /* per-step buffers */
    float *x = xcalloc((size_t)(S * F), 4), *q = xcalloc((size_t)(Lq * N1 * D), 4), *k = xcalloc((size_t)(S * D), 4);
    float *ta = xcalloc((size_t)(Lq * r), 4), *tb = xcalloc((size_t)(S * r), 4), *tscore = xcalloc((size_t)S, 4);
    int32_t *idx = xcalloc((size_t)(Lq * K), 4);
    float *val = xcalloc((size_t)(Lq * K), 4), *p = xcalloc((size_t)(Lq * K), 4), *dy = xcalloc((size_t)(Lq * K), 4);
    float *dq = xcalloc((size_t)(Lq * N1 * D), 4), *dk = xcalloc((size_t)(S * D), 4), *dw = xcalloc((size_t)(Lq * N1), 4);
    float *gWq = xcalloc((size_t)(N1 * D * F), 4), *gWk = xcalloc((size_t)(D * F), 4), *gu = xcalloc((size_t)N1, 4);
    int64_t *order = xcalloc((size_t)S, sizeof(int64_t));
    unsigned char *teacher_top = xcalloc((size_t)S, 1);
    float loss = 0.0f;

    /* tensors: one query batch of Lq rows against S keys; w broadcast over rows (stride 0) */
    const int64_t qs[] = {1, Lq, N1, D}, ks[] = {1, S, 1, D}, ws_shape[] = {1, Lq, N1}, ws_strides[] = {0, 0, 1};
    const int64_t is[] = {1, Lq, K}, one[] = {1};
    lig_tensor *tq = lig_create_tensor(q, LIG_FLOAT32, 4, qs, NULL), *tk = lig_create_tensor(k, LIG_FLOAT32, 4, ks, NULL);
    lig_tensor *tw = lig_create_tensor(u, LIG_FLOAT32, 3, ws_shape, ws_strides);
    lig_tensor *tidx = lig_create_tensor(idx, LIG_INT32, 3, is, NULL), *tval = lig_create_tensor(val, LIG_FLOAT32, 3, is, NULL);
    lig_tensor *tp = lig_create_tensor(p, LIG_FLOAT32, 3, is, NULL), *tdy = lig_create_tensor(dy, LIG_FLOAT32, 3, is, NULL);
    lig_tensor *tloss = lig_create_tensor(&loss, LIG_FLOAT32, 1, one, NULL);
    lig_tensor *tdq = lig_create_tensor(dq, LIG_FLOAT32, 4, qs, NULL), *tdk = lig_create_tensor(dk, LIG_FLOAT32, 4, ks, NULL);
    lig_tensor *tdw = lig_create_tensor(dw, LIG_FLOAT32, 3, ws_shape, NULL);
    if (!tq || !tk || !tw || !tidx || !tval || !tp || !tdy || !tloss || !tdq || !tdk || !tdw) check(LIG_ERR_INNER, "tensors");

    printf("lig %s: training a lightning indexer | %lld keys, %lld queries (each sees %lld..%lld keys), top-k %lld\n"
           "indexer: %lld heads x D=%lld from %lld-dim token features | teacher: rank %lld | %d threads\n",
           lig_version(), (long long)S, (long long)Lq, (long long)(S - Lq + 1), (long long)S, (long long)K,
           (long long)N1, (long long)D, (long long)F, (long long)r, lig_get_num_threads());
    printf("%5s %10s %8s %10s %10s %10s  %s\n", "step", "loss", "recall", "tokens/s", "grad GF/s", "step time",
           "progress");

    void *workspace = NULL;
    uint64_t workspace_cap = 0;
    double first_recall = 0, last_recall = 0, first_loss = 0, total_time = 0, grad_time = 0, grad_flops = 0;
    const double chance = (double)K / ((double)S - (double)Lq / 2.0);
    int kernels_printed = 0;
    for (int64_t step = 1; step <= c.steps; step++) {
        const double t0 = now();
        for (int64_t i = 0; i < S * F; i++) x[i] = gaussian();
        const float *xq = x + (S - Lq) * F; /* the queries are the last Lq tokens */
        matmul_xwt(xq, Wq, Lq, N1 * D, F, q);
        matmul_xwt(x, Wk, S, D, F, k);

        /* 1. forward: the indexer's top-k */
        uint64_t need = 0;
        lig_executor *e = NULL;
        check(lig_indexer_get_workspace_size(tq, tk, tw, NULL, NULL, "BSND", K, 3, INT64_MAX, INT64_MAX, tidx, tval,
                                             &need, &e), "lig_indexer_get_workspace_size");
        const char *fwd_kernels = lig_executor_kernel_set(e);
        if (need > workspace_cap) {
            free(workspace);
            workspace = xcalloc(1, need);
            workspace_cap = need;
        }
        check(lig_indexer(workspace, workspace_cap, e, NULL), "lig_indexer");

        /* 2. the teacher: attention over the selected slots, and its own top-k for recall */
        matmul_xwt(xq, A, Lq, r, F, ta);
        matmul_xwt(x, Bm, S, r, F, tb);
        double hits = 0;
        for (int64_t t = 0; t < Lq; t++) {
            const int64_t visible = S - Lq + t + 1;
            for (int64_t s = 0; s < visible; s++) {
                float z = 0;
                for (int64_t i = 0; i < r; i++) z += ta[t * r + i] * tb[s * r + i];
                tscore[s] = z / (float)c.tau;
                order[s] = s;
                teacher_top[s] = 0;
            }
            sort_scores = tscore;
            qsort(order, (size_t)visible, sizeof *order, by_score_desc);
            const int64_t top = visible < K ? visible : K;
            for (int64_t j = 0; j < top; j++) teacher_top[order[j]] = 1;
            double m = -INFINITY, z = 0;
            for (int64_t j = 0; j < K; j++)
                if (idx[t * K + j] >= 0) m = fmax(m, tscore[idx[t * K + j]]);
            for (int64_t j = 0; j < K; j++) {
                const int32_t s = idx[t * K + j];
                p[t * K + j] = s >= 0 ? (float)exp(tscore[s] - m) : 0.0f;
                z += p[t * K + j];
                hits += s >= 0 && teacher_top[s];
            }
            for (int64_t j = 0; j < K; j++) p[t * K + j] = (float)(p[t * K + j] / z);
        }
        const double recall = hits / (double)(Lq * K);

        /* 3. the fused KL step: loss and dy */
        check(lig_indexer_kl_grad_get_workspace_size(tval, tidx, tp, tloss, tdy, &need, &e),
              "lig_indexer_kl_grad_get_workspace_size");
        if (need > workspace_cap) {
            free(workspace);
            workspace = xcalloc(1, need);
            workspace_cap = need;
        }
        check(lig_indexer_kl_grad(workspace, workspace_cap, e, NULL), "lig_indexer_kl_grad");

        /* 4. the backward: dQ, dK, dW */
        check(lig_indexer_grad_get_workspace_size(tq, tk, tdy, tidx, tw, NULL, NULL, N1, "BSND", 3, INT64_MAX,
                                                  INT64_MAX, true, tdq, tdk, tdw, &need, &e),
              "lig_indexer_grad_get_workspace_size");
        if (need > workspace_cap) {
            free(workspace);
            workspace = xcalloc(1, need);
            workspace_cap = need;
        }
        if (!kernels_printed) { /* once: which kernels this CPU runs */
            printf("kernels: forward %s, backward %s (kernel sets on this CPU: %s)\n", fwd_kernels,
                   lig_executor_kernel_set(e), lig_kernel_sets());
            kernels_printed = 1;
        }
        const double tg = now();
        check(lig_indexer_grad(workspace, workspace_cap, e, NULL), "lig_indexer_grad");
        const double grad_dt = now() - tg;
        int64_t counted = 0;
        for (int64_t i = 0; i < Lq * K; i++) counted += idx[i] >= 0;
        const double flops = 6.0 * (double)N1 * (double)D * (double)counted;

        /* 5. chain rule to the projections, then Adam */
        matmul_gtx(dq, xq, Lq, N1 * D, F, gWq);
        matmul_gtx(dk, x, S, D, F, gWk);
        for (int64_t h = 0; h < N1; h++) {
            double g = 0;
            for (int64_t t = 0; t < Lq; t++) g += dw[t * N1 + h];
            gu[h] = (float)g;
        }
        adam_step(&opt_q, Wq, gWq, c.lr, step);
        adam_step(&opt_k, Wk, gWk, c.lr, step);
        adam_step(&opt_u, u, gu, c.lr, step);

        const double dt = now() - t0;
        total_time += dt;
        grad_time += grad_dt;
        grad_flops += flops;
        const double mean_loss = loss / (double)Lq;
        if (step == 1) {
            first_recall = recall;
            first_loss = mean_loss;
        }
        last_recall = recall;
        char bar[21];
        const int filled = (int)(20 * step / c.steps);
        for (int i = 0; i < 20; i++) bar[i] = i < filled ? '#' : '.';
        bar[20] = '\0';
        printf("%5lld %10.4f %8.3f %10.0f %10.1f %8.2f s  [%s] %3d%% eta %.0f s\n", (long long)step, mean_loss, recall,
               (double)Lq / dt, flops / grad_dt * 1e-9, dt, bar, (int)(100 * step / c.steps),
               total_time / (double)step * (double)(c.steps - step));
        fflush(stdout);
    }
    printf("summary: %lld steps in %.1f s | loss/query %.4f -> %.4f | recall@%lld %.3f -> %.3f (chance %.3f) | "
           "backward %.1f GFLOP/s\n",
           (long long)c.steps, total_time, first_loss, (double)loss / (double)Lq, (long long)K, first_recall,
           last_recall, chance, grad_flops / grad_time * 1e-9);

    lig_tensor *all[] = {tq, tk, tw, tidx, tval, tp, tdy, tloss, tdq, tdk, tdw};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) lig_destroy_tensor(all[i]);
    free(workspace);
    free(A); free(Bm); free(Wq); free(Wk); free(u);
    free(opt_q.m); free(opt_q.v); free(opt_k.m); free(opt_k.v); free(opt_u.m); free(opt_u.v);
    free(x); free(q); free(k); free(ta); free(tb); free(tscore); free(idx); free(val); free(p); free(dy);
    free(dq); free(dk); free(dw); free(gWq); free(gWk); free(gu); free(order); free(teacher_top);
    return 0;
}

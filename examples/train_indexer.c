/* Trains a lightning indexer from scratch with lig to predict a main attention, the way
 * DeepSeek-V3.2 trains its indexer: forward (scores + top-k) -> the main attention's softmax
 * statistics over the selection -> lig_sparse_indexer_grad_kl_loss (the KL loss with the main
 * attention's target, and the indexer's gradients, in one call) -> Adam, written here.
 *
 * The task. Each step draws a fresh sequence of S tokens with random features x_s (F dims). The
 * main attention (mla_attention.h, fixed, it gets no gradient) is MLA-like: N1m heads, one shared
 * key latent of Dm dims plus Dr rope dims (N2 = 1), built so that each query puts most of its mass
 * on a few keys. The last Lq tokens are queries, aligned to the end of the keys (sparse_mode 3), so
 * each sees a few thousand keys. The indexer has DeepSeek-V3.2's head shape (N1 heads, one key
 * head, D dims) and learns small projections of the features:
 *   q_th = Wq_h x_t,  k_s = Wk x_s,  w_th = u_h        (Wq: N1*D x F, Wk: D x F, u: N1)
 * Two stages, as DeepSeek's:
 *   dense warm-up (--warmup steps): the selection is every visible key and the main attention's
 *     statistics come from its dense attention;
 *   sparse: lig_indexer selects the top-k keys per query, the main attention attends over those
 *     slots only and its statistics (softmax_max, softmax_sum per row and head) come from that
 *     sparse attention, so the target (head mean of its probabilities) sums to 1 over the selection.
 * lig_sparse_indexer_grad_kl_loss recomputes the main attention's probabilities at the selected slots
 * from its q, key latent, rope parts and statistics, and gives the loss and dQ, dK, dW of the
 * indexer, which the chain rule takes to Wq, Wk and u. Every --every steps the demo computes the
 * main attention densely and reports the recall of its true top-k keys (by dense probability, mean
 * over the heads) within the indexer's top-k (chance is k / visible keys), the same for its top
 * k/8 keys, and the share of the dense attention's mass the selection holds (the loss printed is
 * the mean over the queries of the KL over the stage's selection: every visible key in the
 * warm-up, the top-k after). It exits non-zero when the recall did not rise.
 *
 *   lig-train-indexer [--keys S] [--queries Lq] [--heads N1] [--dim D] [--topk K] [--feat F]
 *                     [--rank r] [--main-heads N1m] [--latent Dm] [--rope Dr] [--steps N]
 *                     [--warmup W] [--every E] [--lr LR] [--threads T] [--seed X]
 */
#define _POSIX_C_SOURCE 200809L
#include <lig.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo_common.h"
#include "mla_attention.h"

typedef struct config {
    int64_t S, Lq, N1, D, K, F, r, N1m, Dm, Dr, steps, warmup, every;
    int64_t threads, seed;
    double lr, tau, spread;
} config;

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


/* ---- the main attention's top-k, for recall ------------------------------------------ */

static const double *sort_probs;
static int by_prob_desc(const void *a, const void *b) {
    const int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
    if (sort_probs[i] != sort_probs[j]) return sort_probs[i] > sort_probs[j] ? -1 : 1;
    return (i > j) - (i < j);
}

/* ---- one training run ------------------------------------------------------------------ */

static const demo_option options[] = {
    {"--keys", offsetof(config, S), 'i'},
    {"--queries", offsetof(config, Lq), 'i'},
    {"--heads", offsetof(config, N1), 'i'},
    {"--dim", offsetof(config, D), 'i'},
    {"--topk", offsetof(config, K), 'i'},
    {"--feat", offsetof(config, F), 'i'},
    {"--rank", offsetof(config, r), 'i'},
    {"--main-heads", offsetof(config, N1m), 'i'},
    {"--latent", offsetof(config, Dm), 'i'},
    {"--rope", offsetof(config, Dr), 's'},
    {"--steps", offsetof(config, steps), 'i'},
    {"--warmup", offsetof(config, warmup), 's'},
    {"--every", offsetof(config, every), 'i'},
    {"--lr", offsetof(config, lr), 'd'},
    {"--threads", offsetof(config, threads), 'i'},
    {"--seed", offsetof(config, seed), 'i'},
};

static config parse(int argc, char **argv) {
    config c = {.S = 4096, .Lq = 128, .N1 = 64, .D = 128, .K = 256, .F = 32, .r = 4, .N1m = 8, .Dm = 48, .Dr = 16,
                .steps = 200, .warmup = 10, .every = 10, .lr = 3e-3, .tau = 0.5, .spread = 0.5, .threads = 0,
                .seed = 1};
    demo_parse_options(argc, argv, options, sizeof options / sizeof options[0], &c);
    if (c.Lq > c.S) c.Lq = c.S;
    if (c.warmup > c.steps) c.warmup = c.steps;
    return c;
}

int main(int argc, char **argv) {
    const config c = parse(argc, argv);
    const int64_t S = c.S, Lq = c.Lq, N1 = c.N1, D = c.D, K = c.K, F = c.F;
    const int64_t N1m = c.N1m, Dm = c.Dm, Dr = c.Dr, Dk = Dm + Dr;
    demo_seed((uint64_t)c.seed * 0x2545f4914f6cdd1dull + 7);
    if (c.threads) lig_set_num_threads((int)c.threads);

    /* the main attention, fixed */
    mla_attention main_attn;
    mla_init(&main_attn, F, N1m, Dm, Dr, c.r, c.tau, c.spread, gaussian);
    /* the indexer's parameters, random */
    float *Wq = xcalloc((size_t)(N1 * D * F), sizeof(float)), *Wk = xcalloc((size_t)(D * F), sizeof(float));
    float *u = xcalloc((size_t)N1, sizeof(float));
    for (int64_t i = 0; i < N1 * D * F; i++) Wq[i] = gaussian() / sqrtf((float)F);
    for (int64_t i = 0; i < D * F; i++) Wk[i] = gaussian() / sqrtf((float)F);
    for (int64_t h = 0; h < N1; h++) u[h] = 1.0f / sqrtf((float)(N1 * D));
    adam opt_q = {xcalloc((size_t)(N1 * D * F), 4), xcalloc((size_t)(N1 * D * F), 4), N1 * D * F};
    adam opt_k = {xcalloc((size_t)(D * F), 4), xcalloc((size_t)(D * F), 4), D * F};
    adam opt_u = {xcalloc((size_t)N1, 4), xcalloc((size_t)N1, 4), N1};

    /* per-step buffers: the indexer's */
    float *x = xcalloc((size_t)(S * F), 4), *q = xcalloc((size_t)(Lq * N1 * D), 4), *k = xcalloc((size_t)(S * D), 4);
    int32_t *idx = xcalloc((size_t)(Lq * K), 4);
    float *val = xcalloc((size_t)(Lq * K), 4);
    float *dq = xcalloc((size_t)(Lq * N1 * D), 4), *dk = xcalloc((size_t)(S * D), 4), *dw = xcalloc((size_t)(Lq * N1), 4);
    float *gWq = xcalloc((size_t)(N1 * D * F), 4), *gWk = xcalloc((size_t)(D * F), 4), *gu = xcalloc((size_t)N1, 4);
    /* the main attention's: its queries, key latent and rope parts, statistics (sparse and dense) */
    float *mq = xcalloc((size_t)(Lq * N1m * Dm), 4), *mqr = xcalloc((size_t)(Lq * N1m * (Dr ? Dr : 1)), 4);
    float *mkv = xcalloc((size_t)(S * Dm), 4), *mkr = xcalloc((size_t)(S * (Dr ? Dr : 1)), 4);
    float *keysT = xcalloc((size_t)(Dk * S), 4), *logits = xcalloc((size_t)S, 4);
    double *prob = xcalloc((size_t)S, sizeof(double));
    float *smax = xcalloc((size_t)(Lq * N1m), 4), *ssum = xcalloc((size_t)(Lq * N1m), 4);
    float *dmax = xcalloc((size_t)(Lq * N1m), 4), *dsum = xcalloc((size_t)(Lq * N1m), 4);
    /* the dense warm-up's selection: every visible key of each row, -1 after */
    int32_t *idx_all = xcalloc((size_t)(Lq * S), 4);
    for (int64_t t = 0; t < Lq; t++)
        for (int64_t s = 0; s < S; s++) idx_all[t * S + s] = s < S - Lq + t + 1 ? (int32_t)s : -1;
    int64_t *order = xcalloc((size_t)S, sizeof(int64_t));
    /* main_top[s]: 2 when key s is among the main attention's top K/8 of the row, 1 among its top K */
    unsigned char *main_top = xcalloc((size_t)S, 1);
    const int64_t focus = K / 8 > 0 ? K / 8 : 1;
    float loss = 0.0f;

    /* tensors: one query batch of Lq rows against S keys; w broadcast over rows (stride 0) */
    const int64_t qs[] = {1, Lq, N1, D}, ks[] = {1, S, 1, D}, ws_shape[] = {1, Lq, N1}, ws_strides[] = {0, 0, 1};
    const int64_t is[] = {1, Lq, K}, is_all[] = {1, Lq, S}, one[] = {1};
    const int64_t mqs[] = {1, Lq, N1m, Dm}, mqrs[] = {1, Lq, N1m, Dr}, mks[] = {1, S, 1, Dm}, mkrs[] = {1, S, 1, Dr};
    const int64_t stat_shape[] = {1, 1, Lq, N1m};
    lig_tensor *tq = lig_create_tensor(q, LIG_FLOAT32, 4, qs, NULL), *tk = lig_create_tensor(k, LIG_FLOAT32, 4, ks, NULL);
    lig_tensor *tw = lig_create_tensor(u, LIG_FLOAT32, 3, ws_shape, ws_strides);
    lig_tensor *tidx = lig_create_tensor(idx, LIG_INT32, 3, is, NULL), *tval = lig_create_tensor(val, LIG_FLOAT32, 3, is, NULL);
    lig_tensor *tidx_all = lig_create_tensor(idx_all, LIG_INT32, 3, is_all, NULL);
    lig_tensor *tloss = lig_create_tensor(&loss, LIG_FLOAT32, 1, one, NULL);
    lig_tensor *tdq = lig_create_tensor(dq, LIG_FLOAT32, 4, qs, NULL), *tdk = lig_create_tensor(dk, LIG_FLOAT32, 4, ks, NULL);
    lig_tensor *tdw = lig_create_tensor(dw, LIG_FLOAT32, 3, ws_shape, NULL);
    lig_tensor *tmq = lig_create_tensor(mq, LIG_FLOAT32, 4, mqs, NULL), *tmk = lig_create_tensor(mkv, LIG_FLOAT32, 4, mks, NULL);
    lig_tensor *tmqr = Dr ? lig_create_tensor(mqr, LIG_FLOAT32, 4, mqrs, NULL) : NULL;
    lig_tensor *tmkr = Dr ? lig_create_tensor(mkr, LIG_FLOAT32, 4, mkrs, NULL) : NULL;
    lig_tensor *tsmax = lig_create_tensor(smax, LIG_FLOAT32, 4, stat_shape, NULL);
    lig_tensor *tssum = lig_create_tensor(ssum, LIG_FLOAT32, 4, stat_shape, NULL);
    lig_tensor *tdmax = lig_create_tensor(dmax, LIG_FLOAT32, 4, stat_shape, NULL);
    lig_tensor *tdsum = lig_create_tensor(dsum, LIG_FLOAT32, 4, stat_shape, NULL);
    if (!tq || !tk || !tw || !tidx || !tval || !tidx_all || !tloss || !tdq || !tdk || !tdw || !tmq || !tmk ||
        (Dr && (!tmqr || !tmkr)) || !tsmax || !tssum || !tdmax || !tdsum)
        check(LIG_ERR_INNER, "tensors");

    printf("lig %s: training a lightning indexer on a main attention | %lld keys, %lld queries (each sees "
           "%lld..%lld keys), top-k %lld\n"
           "indexer: %lld heads x D=%lld from %lld-dim token features | main attention (MLA-like, fixed): "
           "%lld heads, key latent %lld + rope %lld dims | %d threads\n"
           "stages: %lld dense warm-up steps (every visible key, dense statistics), then sparse (the indexer's "
           "top-%lld, statistics from the main attention over them)\n",
           lig_version(), (long long)S, (long long)Lq, (long long)(S - Lq + 1), (long long)S, (long long)K,
           (long long)N1, (long long)D, (long long)F, (long long)N1m, (long long)Dm, (long long)Dr,
           lig_get_num_threads(), (long long)c.warmup, (long long)K);

    double first_recall = -1, last_recall = 0, first_mass = 0, last_mass = 0, total_time = 0;
    double loss_time = 0, loss_flops = 0, first_loss = 0, top_mass_sum = 0;
    const double chance = fmin(1.0, (double)K / ((double)S - (double)Lq / 2.0));
    int kernels_printed = 0;
    for (int64_t step = 1; step <= c.steps; step++) {
        const double t0 = now();
        const int dense = step <= c.warmup;
        const int report = dense || step == 1 || step % c.every == 0 || step == c.steps;
        for (int64_t i = 0; i < S * F; i++) x[i] = gaussian();
        const float *xq = x + (S - Lq) * F; /* the queries are the last Lq tokens */
        matmul_xwt(xq, Wq, Lq, N1 * D, F, q);
        matmul_xwt(x, Wk, S, D, F, k);
        matmul_xwt(xq, main_attn.Wq, Lq, N1m * Dm, F, mq);
        matmul_xwt(xq, main_attn.Wqr, Lq, N1m * Dr, F, mqr);
        matmul_xwt(x, main_attn.Wkv, S, Dm, F, mkv);
        matmul_xwt(x, main_attn.Wkr, S, Dr, F, mkr);

        /* 1. forward: the indexer's top-k (the sparse stage's selection; recall in both stages) */
        uint64_t need = 0;
        lig_executor *e = NULL;
        check(lig_indexer_get_workspace_size(tq, tk, tw, NULL, NULL, "BSND", K, 3, INT64_MAX, INT64_MAX, tidx, tval,
                                             &need, &e), "lig_indexer_get_workspace_size");
        const char *fwd_kernels = lig_executor_kernel_set(e);
        check(lig_indexer(demo_workspace(need), need, e, NULL), "lig_indexer");

        /* 2. the main attention: dense (warm-up statistics; recall when reporting), then its sparse
         *    attention over the indexer's selection (the sparse stage's statistics) */
        /* hits / top_count: recall of the main attention's top K; focus_*: of its top K/8 */
        double hits = 0, focus_hits = 0, top_count = 0, focus_count = 0, mass = 0, top_mass = 0;
        if (dense || report) {
            for (int64_t s = 0; s < S; s++)
                for (int64_t i = 0; i < Dk; i++)
                    keysT[i * S + s] = i < Dm ? mkv[s * Dm + i] : mkr[s * Dr + (i - Dm)];
            for (int64_t t = 0; t < Lq; t++) {
                const int64_t visible = S - Lq + t + 1;
                mla_dense_row(&main_attn, mq + t * N1m * Dm, mqr + t * N1m * Dr, keysT, S, visible, logits, prob,
                              dmax + t * N1m, dsum + t * N1m);
                for (int64_t s = 0; s < visible; s++) {
                    order[s] = s;
                    main_top[s] = 0;
                }
                sort_probs = prob;
                qsort(order, (size_t)visible, sizeof *order, by_prob_desc);
                const int64_t top = visible < K ? visible : K;
                top_count += (double)top;
                focus_count += (double)(top < focus ? top : focus);
                for (int64_t j = 0; j < top; j++) {
                    main_top[order[j]] = j < focus ? 2 : 1;
                    top_mass += prob[order[j]];
                }
                for (int64_t j = 0; j < K; j++) {
                    const int32_t s = idx[t * K + j];
                    if (s < 0 || s >= visible) continue;
                    hits += main_top[s] > 0;
                    focus_hits += main_top[s] == 2;
                    mass += prob[s];
                }
            }
        }
        if (!dense)
            for (int64_t t = 0; t < Lq; t++)
                mla_sparse_stats(&main_attn, mq + t * N1m * Dm, mqr + t * N1m * Dr, mkv, mkr, idx + t * K, K,
                                 S - Lq + t + 1, smax + t * N1m, ssum + t * N1m);

        /* 3. the loss with the main attention's target, and the indexer's gradients, in one call */
        check(lig_sparse_indexer_grad_kl_loss_get_workspace_size(
                  tmq, tmk, tq, tk, tw, dense ? tidx_all : tidx, dense ? tdmax : tsmax, dense ? tdsum : tssum, NULL,
                  tmqr, tmkr, NULL, NULL, (double)main_attn.scale, "BSND", 3, INT64_MAX, INT64_MAX,
                  LIG_KL_TARGET_HEAD_MEAN, true, tdq, tdk, tdw, tloss, &need, &e),
              "lig_sparse_indexer_grad_kl_loss_get_workspace_size");
        void *ws = demo_workspace(need); /* allocated before the clock starts */
        if (!kernels_printed) { /* once: which kernels this CPU runs */
            printf("kernels: forward %s, KL loss %s (kernel sets on this CPU: %s)\n", fwd_kernels,
                   lig_executor_kernel_set(e), lig_kernel_sets());
            printf("%5s %6s %10s %8s %8s %8s %10s %9s  %s\n", "step", "stage", "loss", "recall", "top-k/8", "mass",
                   "loss GF/s", "step time", "progress");
            kernels_printed = 1;
        }
        const double tl = now();
        check(lig_sparse_indexer_grad_kl_loss(ws, need, e, NULL), "lig_sparse_indexer_grad_kl_loss");
        const double loss_dt = now() - tl;
        const int32_t *sel = dense ? idx_all : idx;
        const int64_t Ksel = dense ? S : K;
        int64_t counted = 0;
        for (int64_t t = 0; t < Lq; t++)
            for (int64_t j = 0; j < Ksel; j++) counted += sel[t * Ksel + j] >= 0 && sel[t * Ksel + j] <= S - Lq + t;
        /* the contract's count: the teacher, I, and the backward per counted slot */
        const double flops = (2.0 * (double)N1m * (double)Dk + 8.0 * (double)N1 * (double)D) * (double)counted;

        /* 4. chain rule to the projections, then Adam */
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
        loss_time += loss_dt;
        loss_flops += flops;
        const double mean_loss = loss / (double)Lq;
        if (!isfinite(mean_loss)) {
            fprintf(stderr, "FAILED: the loss at step %lld is %g\n", (long long)step, mean_loss);
            return 1;
        }
        if (step == 1) first_loss = mean_loss;
        if (report) {
            const double recall = hits / top_count;
            if (first_recall < 0) {
                first_recall = recall;
                first_mass = mass / (double)Lq;
            }
            last_recall = recall;
            last_mass = mass / (double)Lq;
            top_mass_sum = top_mass / (double)Lq;
            char bar[21];
            const int filled = (int)(20 * step / c.steps);
            for (int i = 0; i < 20; i++) bar[i] = i < filled ? '#' : '.';
            bar[20] = '\0';
            printf("%5lld %6s %10.4f %8.3f %8.3f %8.3f %10.1f %7.2f s  [%s] %3d%% eta %.0f s\n", (long long)step,
                   dense ? "dense" : "sparse", mean_loss, recall, focus_hits / focus_count,
                   mass / (double)Lq, flops / loss_dt * 1e-9, dt, bar,
                   (int)(100 * step / c.steps), total_time / (double)step * (double)(c.steps - step));
            fflush(stdout);
        }
    }
    printf("summary: %lld steps (%lld dense warm-up) in %.1f s | loss/query %.4f -> %.4f | recall@%lld of the main "
           "attention's top-%lld %.3f -> %.3f (chance %.3f) | its dense mass in the selection %.3f -> %.3f (its own "
           "top-%lld hold %.3f) | KL loss %.1f GFLOP/s\n",
           (long long)c.steps, (long long)c.warmup, total_time, first_loss, (double)loss / (double)Lq, (long long)K,
           (long long)K, first_recall, last_recall, chance, first_mass, last_mass, (long long)K, top_mass_sum,
           loss_flops / loss_time * 1e-9);

    lig_tensor *all[] = {tq, tk, tw, tidx, tval, tidx_all, tloss, tdq, tdk, tdw, tmq, tmk, tmqr, tmkr,
                         tsmax, tssum, tdmax, tdsum};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) lig_destroy_tensor(all[i]);
    demo_workspace_free();
    mla_free(&main_attn);
    free(Wq); free(Wk); free(u);
    free(opt_q.m); free(opt_q.v); free(opt_k.m); free(opt_k.v); free(opt_u.m); free(opt_u.v);
    free(x); free(q); free(k); free(idx); free(val); free(dq); free(dk); free(dw); free(gWq); free(gWk); free(gu);
    free(mq); free(mqr); free(mkv); free(mkr); free(keysT); free(logits); free(prob);
    free(smax); free(ssum); free(dmax); free(dsum); free(idx_all); free(order); free(main_top);

    /* the demo's claim, checked: training made the indexer find the main attention's top keys */
    if (c.steps >= 2 * c.every && last_recall < first_recall + 0.5 * (1.0 - first_recall)) {
        fprintf(stderr, "FAILED: recall@%lld rose only from %.3f to %.3f\n", (long long)K, first_recall, last_recall);
        return 1;
    }
    return 0;
}

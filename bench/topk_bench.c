/* lig-topk-bench: the forward's top-k alone (backends/cpu/operators/topk.h), as the forward drives
 * it: causal prefill rows, row t offering the scores of its t + 1 visible keys block after block
 * (--block keys per offer, the engines' key block), then the finish. One thread.
 *
 * Scores: --dist forward (default): each key's score is sum_h w_h * ReLU(x_h) over 64 heads, w
 * uniform in [-0.3, 0.7) and x Gaussian, as the forward's scores on lig-quant-bench's data;
 * --dist uniform: uniform in [-1, 1); --dist ties: 16 distinct values, a quarter exact zeros of
 * either sign and a few NaN. Rows draw from a pool of 16 such score vectors of S keys.
 *
 * Each figure is the median of --runs timed runs after one warm-up, in the process's CPU time
 * (the machine may be shared), given per row and per offered candidate. Every run's sampled rows
 * (every 97th, and the last) are checked against a reference that sorts all of the row's
 * candidates by (rank, key) with qsort: indices and score bits must match.
 *
 *   lig-topk-bench [--s 4096] [--rows S] [--k 2048] [--block 64] [--runs 7] [--dist forward]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/operators/topk.h"

enum { POOL = 16, HEADS = 64 };

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng_state = 0x70b4e11ull;

static double unit(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1p-53;
}

static double gaussian(void) {
    const double u = unit() + 1e-300, v = unit();
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static float draw(const char *dist, const float *w) {
    if (!strcmp(dist, "uniform")) return (float)(2.0 * unit() - 1.0);
    if (!strcmp(dist, "ties")) {
        const double u = unit();
        if (u < 0.02) return NAN;
        if (u < 0.15) return 0.0f;
        if (u < 0.27) return -0.0f;
        return (float)((int)(unit() * 16.0) - 8) * 0.25f;
    }
    double s = 0.0;
    for (int h = 0; h < HEADS; h++) {
        const double x = gaussian();
        s += (double)w[h] * (x > 0.0 ? x : 0.0);
    }
    return (float)s;
}

/* The reference order: higher rank first (NaN as -inf, -0 as +0), then the lower key. */
typedef struct ref_item {
    double rank;
    int64_t key;
    float score;
} ref_item;

static int ref_cmp(const void *a, const void *b) {
    const ref_item *x = a, *y = b;
    if (x->rank != y->rank) return x->rank > y->rank ? -1 : 1;
    return (x->key > y->key) - (x->key < y->key);
}

/* Row `row`'s result against the reference sort of its `visible` candidates; 1 when it matches. */
static int check_row(const float *scores, int64_t visible, int64_t K, const lig_topk *t, ref_item *ref) {
    for (int64_t s = 0; s < visible; s++) {
        const double r = isnan(scores[s]) ? -INFINITY : (double)scores[s];
        ref[s] = (ref_item){.rank = r == 0.0 ? 0.0 : r, .key = s, .score = scores[s]};
    }
    qsort(ref, (size_t)visible, sizeof *ref, ref_cmp);
    const int64_t want = visible < K ? visible : K;
    if (t->n != want) return 0;
    for (int64_t j = 0; j < want; j++)
        if (t->best[j].key != ref[j].key || memcmp(&t->best[j].score, &ref[j].score, sizeof(float)) != 0) return 0;
    return 1;
}

int main(int argc, char **argv) {
    int64_t S = 4096, rows = -1, K = 2048, block = 64;
    int runs = 7;
    const char *dist = "forward";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--s")) S = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--rows")) rows = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--k")) K = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--block")) block = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--runs")) runs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--dist")) dist = argv[i + 1];
        else {
            fprintf(stderr, "usage: %s [--s S] [--rows R] [--k K] [--block B] [--runs n] [--dist forward|uniform|ties]\n",
                    argv[0]);
            return 2;
        }
    }
    if (rows < 0 || rows > S) rows = S;
    if (S < 1 || K < 0 || block < 1 || runs < 1) {
        fprintf(stderr, "--s, --block and --runs must be positive, --k not negative\n");
        return 2;
    }
    float *pool = malloc(sizeof(float) * (size_t)(POOL * S)), w[HEADS];
    for (int h = 0; h < HEADS; h++) w[h] = (float)(unit() - 0.3);
    for (int64_t i = 0; i < POOL * S; i++) pool[i] = draw(dist, w);
    const int64_t cap = K < S ? K : S;
    char *scratch = aligned_alloc(64, (size_t)((lig_topk_scratch_bytes(cap) + 63) / 64 * 64));
    ref_item *ref = malloc(sizeof(ref_item) * (size_t)S);
    double *times = malloc(sizeof(double) * (size_t)runs), offered = 0.0;
    int bad = 0;
    for (int run = -1; run < runs; run++) {
        const double t0 = cpu_seconds();
        double check_time = 0.0;
        offered = 0.0;
        for (int64_t i = 0; i < rows; i++) {
            const int64_t row = S - rows + i, visible = row + 1;
            const float *sc = pool + (row % POOL) * S;
            lig_topk t = lig_topk_start(scratch, cap, visible < K ? visible : K);
            for (int64_t s0 = 0; s0 < visible; s0 += block)
                lig_topk_offer_run(&t, sc + s0, visible - s0 < block ? visible - s0 : block, s0);
            lig_topk_finish(&t);
            offered += (double)visible;
            if (i % 97 == 0 || i == rows - 1) {
                const double c0 = cpu_seconds();
                if (!check_row(sc, visible, K, &t, ref)) bad++;
                check_time += cpu_seconds() - c0;
            }
        }
        if (run >= 0) times[run] = cpu_seconds() - t0 - check_time;
    }
    for (int i = 1; i < runs; i++) /* insertion sort for the median */
        for (int j = i; j > 0 && times[j - 1] > times[j]; j--) {
            const double x = times[j];
            times[j] = times[j - 1];
            times[j - 1] = x;
        }
    const double med = times[runs / 2];
    printf("topk: S = %lld, rows %lld, K = %lld, block %lld, dist %s | median of %d runs, process CPU time\n", (long long)S,
           (long long)rows, (long long)K, (long long)block, dist, runs);
    printf("  %.3f ms per pass (min %.3f, max %.3f), %.2f us per row, %.2f ns per offered candidate, check %s\n",
           1e3 * med, 1e3 * times[0], 1e3 * times[runs - 1], 1e6 * med / (double)rows, 1e9 * med / offered,
           bad ? "FAILED" : "ok");
    free(pool), free(scratch), free(ref), free(times);
    return bad ? 1 : 0;
}

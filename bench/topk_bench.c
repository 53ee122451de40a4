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
 * (every 97th, and the last) are checked: the slots in order (rank descending, ties by key), each
 * a distinct visible key with its score's bits, and no key left out ranking above the last slot
 * (or tying it at a lower key).
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

/* The process's CPU time, s (the machine may be shared: this counts only the time this ran). */
static double cpu_seconds(void) {
    struct timespec ts;
    return clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0 ? (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec : 0.0;
}

/* xorshift64*: uniform in [0, 1), and a Gaussian by Box-Muller */
static uint64_t rng_state = 0x70b4e11ull;
static double unit(void) {
    rng_state ^= rng_state >> 12, rng_state ^= rng_state << 25, rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) * 0x1p-53;
}
static double gaussian(void) { return sqrt(-2.0 * log(unit() + 1e-300)) * cos(6.283185307179586 * unit()); }

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

/* A row's rank as a double: NaN as -inf, -0 as +0. */
static double rank_of(float x) { return isnan(x) ? -INFINITY : x == 0.0f ? 0.0 : (double)x; }

/* Row's result checked without sorting: min(visible, K) slots, each a visible key (each once) with
 * its score's bits, in order (rank descending, ties by increasing key), and every key left out
 * ranking below the last slot or tied with it at a higher key. 1 when it holds. */
static int check_row(const float *scores, int64_t visible, int64_t K, const lig_topk *t, unsigned char *taken) {
    const int64_t want = visible < K ? visible : K;
    if (t->n != want) return 0;
    memset(taken, 0, (size_t)visible);
    for (int64_t j = 0; j < want; j++) {
        const int64_t k = t->best[j].key;
        if (k < 0 || k >= visible || taken[k] || memcmp(&t->best[j].score, &scores[k], sizeof(float)) != 0) return 0;
        taken[k] = 1;
        if (j > 0) {
            const double a = rank_of(t->best[j - 1].score), b = rank_of(t->best[j].score);
            if (a < b || (a == b && t->best[j - 1].key > k)) return 0;
        }
    }
    if (want == 0) return 1;
    const double last = rank_of(t->best[want - 1].score);
    for (int64_t k = 0; k < visible; k++) {
        const double r = rank_of(scores[k]);
        if (!taken[k] && (r > last || (r == last && k < t->best[want - 1].key))) return 0;
    }
    return 1;
}

int main(int argc, char **argv) {
    int64_t S = 4096, rows = -1, K = 2048, block = 64, runs = 7;
    const char *dist = "forward";
    const struct {
        const char *name;
        int64_t *value;
    } numbers[] = {{"--s", &S}, {"--rows", &rows}, {"--k", &K}, {"--block", &block}, {"--runs", &runs}};
    for (int i = 1; i < argc; i += 2) {
        size_t o = 0;
        while (o < sizeof numbers / sizeof numbers[0] && strcmp(argv[i], numbers[o].name)) o++;
        if (i + 1 < argc && o < sizeof numbers / sizeof numbers[0]) {
            *numbers[o].value = atoll(argv[i + 1]);
        } else if (i + 1 < argc && !strcmp(argv[i], "--dist")) {
            dist = argv[i + 1];
        } else {
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
    unsigned char *taken = malloc((size_t)S);
    double *times = calloc((size_t)runs, sizeof(double)), offered = 0.0;
    int bad = 0;
    for (int64_t run = -1; run < runs; run++) {
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
                if (!check_row(sc, visible, K, &t, taken)) bad++;
                check_time += cpu_seconds() - c0;
            }
        }
        if (run >= 0) times[run] = cpu_seconds() - t0 - check_time;
    }
    for (int64_t i = 1; i < runs; i++) /* insertion sort for the median */
        for (int64_t j = i; j > 0 && times[j - 1] > times[j]; j--) {
            const double x = times[j];
            times[j] = times[j - 1];
            times[j - 1] = x;
        }
    const double med = times[runs / 2];
    printf("topk: S = %lld, rows %lld, K = %lld, block %lld, dist %s | median of %lld runs, process CPU time\n", (long long)S,
           (long long)rows, (long long)K, (long long)block, dist, (long long)runs);
    printf("  %.3f ms per pass (min %.3f, max %.3f), %.2f us per row, %.2f ns per offered candidate, check %s\n",
           1e3 * med, 1e3 * times[0], 1e3 * times[runs - 1], 1e6 * med / (double)rows, 1e9 * med / offered,
           bad ? "FAILED" : "ok");
    free(pool), free(scratch), free(taken), free(times);
    return bad ? 1 : 0;
}

/* Realistic data for the quantized-forward benchmarks, and their float64 checks.
 *
 * Data ("keys with a shared direction, queries correlated with a few keys", as real indexer keys are), all bf16:
 *   key s:        k[d] = sigma_d g + a_s 0.8 sqrt(D) dir[d],   a_s = 1 + 0.25 g',
 *                 sigma_d = 3 on the outlier channels d % 32 == 7 (activations have a few), else 1;
 *   query head h: q[d] = 0.7 g + 0.3 sqrt(D) dir[d] + 0.35 (k_a[d] + k_b[d]),
 *                 a, b two of the row's 8 focus keys (drawn among the keys the row sees);
 *   weight:       w = (0.3 + g) / sqrt(N1 D).
 * (g: independent N(0, 1); dir: a fixed unit vector.) So every key shares a large positive score
 * component (ReLU rarely cuts it), the outlier channels set the per-token quantization scale, and a
 * row's top keys are its focus keys, then a long tail ranked by the noise, which the quantization
 * perturbs: the recall of the quantized selections against the bf16 one measures that. */
#include "indexer_data.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FOCUS = 8 };

static uint64_t next(bench_rng *r) { /* splitmix64 */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

double bench_uniform(bench_rng *r) { return (double)(next(r) >> 11) * 0x1p-53; }

double bench_gaussian(bench_rng *r) {
    const double u = ((double)(next(r) >> 11) + 0.5) * 0x1p-53, v = bench_uniform(r);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

void bench_key_direction(double *dir, int64_t D) {
    bench_rng r = {0xd1ec7104u};
    double n = 0;
    for (int64_t d = 0; d < D; d++) {
        dir[d] = bench_gaussian(&r);
        n += dir[d] * dir[d];
    }
    for (int64_t d = 0; d < D; d++) dir[d] /= sqrt(n);
}

void bench_make_keys(uint16_t *k, int64_t n, int64_t D, const double *dir, bench_rng *r) {
    const double shared = 0.8 * sqrt((double)D);
    for (int64_t s = 0; s < n; s++) {
        const double a = 1.0 + 0.25 * bench_gaussian(r);
        for (int64_t d = 0; d < D; d++) {
            const double sigma = d % 32 == 7 ? 3.0 : 1.0;
            k[s * D + d] = lig_float_to_bfloat16((float)(sigma * bench_gaussian(r) + a * shared * dir[d]));
        }
    }
}

void bench_make_query_row(uint16_t *q, int64_t N1, int64_t D, const uint16_t *keys, int64_t vis, const double *dir,
                          bench_rng *r) {
    int64_t focus[FOCUS];
    for (int f = 0; f < FOCUS; f++) focus[f] = (int64_t)(bench_uniform(r) * (double)vis);
    const double shared = 0.3 * sqrt((double)D);
    for (int64_t h = 0; h < N1; h++) {
        const uint16_t *a = keys + focus[next(r) % FOCUS] * D, *b = keys + focus[next(r) % FOCUS] * D;
        for (int64_t d = 0; d < D; d++) {
            const double x = 0.7 * bench_gaussian(r) + shared * dir[d] +
                             0.35 * ((double)lig_bfloat16_to_float(a[d]) + (double)lig_bfloat16_to_float(b[d]));
            q[h * D + d] = lig_float_to_bfloat16((float)x);
        }
    }
}

void bench_make_weights(float *w, int64_t N1, int64_t D, bench_rng *r) {
    for (int64_t h = 0; h < N1; h++) w[h] = (float)((0.3 + bench_gaussian(r)) / sqrt((double)(N1 * D)));
}

float bench_act_quant(lig_dtype qk, const uint16_t *x, int64_t n, uint8_t *codes) {
    float amax = 1e-4f;
    for (int64_t i = 0; i < n; i++) amax = fmaxf(amax, fabsf(lig_bfloat16_to_float(x[i])));
    const float scale = amax / (qk == LIG_INT8 ? 127.0f : 448.0f);
    for (int64_t i = 0; i < n; i++) {
        const float v = lig_bfloat16_to_float(x[i]) / scale;
        if (qk == LIG_INT8) {
            const long c = lrintf(v);
            codes[i] = (uint8_t)(int8_t)(c > 127 ? 127 : c < -127 ? -127 : c);
        } else {
            codes[i] = lig_float_to_float8_e4m3fn(v);
        }
    }
    return scale;
}

double bench_value(lig_dtype dt, uint16_t code) {
    if (dt == LIG_BFLOAT16) return (double)lig_bfloat16_to_float(code);
    if (dt == LIG_INT8) return (double)(int8_t)(uint8_t)code;
    return (double)lig_float8_e4m3fn_to_float((uint8_t)code);
}

/* element i of a bf16 array or of a code array, as a double */
static double element(lig_dtype dt, const void *p, int64_t i) {
    return dt == LIG_BFLOAT16 ? bench_value(dt, ((const uint16_t *)p)[i]) : bench_value(dt, ((const uint8_t *)p)[i]);
}

void bench_ref_scores(lig_dtype dt, const void *q, const float *w, const void *keys, const float *sk, int64_t vis,
                      int64_t N1, int64_t D, double *ref, double *bound) {
    double *qd = malloc(sizeof(double) * (size_t)(N1 * D)), *kd = malloc(sizeof(double) * (size_t)D);
    for (int64_t i = 0; i < N1 * D; i++) qd[i] = element(dt, q, i);
    for (int64_t s = 0; s < vis; s++) {
        for (int64_t d = 0; d < D; d++) kd[d] = element(dt, keys, s * D + d);
        const double scale = sk ? (double)sk[s] : 1.0;
        double sum = 0, mag = 0;
        for (int64_t h = 0; h < N1; h++) {
            double dot = 0, adot = 0;
            for (int64_t d = 0; d < D; d++) {
                dot += qd[h * D + d] * kd[d];
                adot += fabs(qd[h * D + d] * kd[d]);
            }
            const double x = scale * dot;
            if (x > 0) sum += (double)w[h] * x;
            mag += fabs((double)w[h]) * scale * adot;
        }
        ref[s] = sum;
        bound[s] = 2.0 * (double)(D + N1 + 4) * 0x1p-24 * mag + 1e-30;
    }
    free(qd);
    free(kd);
}

int bench_check_row(const int32_t *idx, const float *val, int64_t K, const double *ref, const double *bound,
                    int64_t vis, char *msg, size_t cap) {
    char *taken = calloc((size_t)vis, 1);
    const int64_t want = K < vis ? K : vis;
    double low = INFINITY, low_bound = 0;
    int ok = 1;
    for (int64_t j = 0; j < K && ok; j++) {
        if (j >= want) {
            ok = idx[j] == -1 && isinf(val[j]) && val[j] < 0;
            if (!ok) snprintf(msg, cap, "slot %lld: (%d, %g), expected the padding (-1, -inf)", (long long)j, idx[j], val[j]);
            continue;
        }
        const int64_t s = idx[j];
        if (s < 0 || s >= vis || taken[s]) {
            snprintf(msg, cap, "slot %lld: index %lld is not a new visible key (< %lld)", (long long)j, (long long)s,
                     (long long)vis);
            ok = 0;
        } else if (fabs((double)val[j] - ref[s]) > bound[s]) {
            snprintf(msg, cap, "key %lld: value %.9g, reference %.9g (bound %.3g)", (long long)s, (double)val[j], ref[s],
                     bound[s]);
            ok = 0;
        } else if (j > 0 && val[j] > val[j - 1]) {
            snprintf(msg, cap, "slot %lld: values not descending", (long long)j);
            ok = 0;
        } else {
            taken[s] = 1;
            if (ref[s] - bound[s] < low) low = ref[s] - bound[s], low_bound = bound[s];
        }
    }
    for (int64_t s = 0; s < vis && ok; s++)
        if (!taken[s] && ref[s] - bound[s] > low + low_bound) {
            snprintf(msg, cap, "key %lld (reference %.9g) left out above the lowest kept (%.9g)", (long long)s, ref[s],
                     low + low_bound);
            ok = 0;
        }
    free(taken);
    return ok;
}

static int cmp_i32(const void *a, const void *b) {
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

double bench_recall(const int32_t *got, const int32_t *want, int64_t K) {
    int32_t *g = malloc(sizeof(int32_t) * (size_t)K), *w = malloc(sizeof(int32_t) * (size_t)K);
    memcpy(g, got, sizeof(int32_t) * (size_t)K);
    memcpy(w, want, sizeof(int32_t) * (size_t)K);
    qsort(g, (size_t)K, sizeof *g, cmp_i32);
    qsort(w, (size_t)K, sizeof *w, cmp_i32);
    int64_t n = 0, hit = 0;
    for (int64_t i = 0, j = 0; i < K; i++) {
        if (w[i] < 0) continue;
        n++;
        while (j < K && g[j] < w[i]) j++;
        if (j < K && g[j] == w[i]) hit++;
    }
    free(g);
    free(w);
    return n ? (double)hit / (double)n : 1.0;
}

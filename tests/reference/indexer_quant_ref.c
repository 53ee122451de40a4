#include "indexer_quant_ref.h"

#include <math.h>
#include <stdlib.h>

#include "reference/indexer_fwd_ref.h"

double ref_quant_score(const ref_problem *p, const ref_quant_data *x, int64_t row, const ref_row *info, int64_t g,
                       int64_t s, double *mag)
{
    const int64_t G = p->N1 / p->N2, D = p->D;
    const int64_t key = info->key_base + s;
    const double *kv = x->k + (key * p->N2 + g) * D;
    const double sk = x->sk[key * p->N2 + g];
    double score = 0.0, size = 0.0;
    for (int64_t h = g * G; h < (g + 1) * G; h++) {
        const double *qv = x->q + (row * p->N1 + h) * D;
        double dot = 0.0, dot_abs = 0.0;
        for (int64_t d = 0; d < D; d++) {
            const double t = qv[d] * kv[d];
            dot += t;
            dot_abs += isfinite(t) ? fabs(t) : 0.0;
        }
        const double sq = x->sq != NULL ? x->sq[row * p->N1 + h] : 1.0;
        const double wh = x->w[row * p->N1 + h];
        const double v = sq * sk * dot;
        if (v > 0.0) {
            score += wh * v;
        }
        const double f = fabs(wh) * fabs(sq) * fabs(sk);
        if (isfinite(f)) {
            size += f * dot_abs;
        }
    }
    if (mag != NULL) {
        *mag = size;
    }
    return score;
}

typedef struct cand {
    double score;
    int64_t key;
} cand;

static int cmp_cand(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    return ref_fwd_order(x->score, x->key, y->score, y->key);
}

void ref_quant_forward(const ref_problem *p, const ref_quant_data *x, int64_t *idx, double *values)
{
    const int64_t rows = ref_rows_q(p), K = p->K;
    for (int64_t row = 0; row < rows; row++) {
        ref_row info;
        ref_row_info(p, row, &info);
        for (int64_t g = 0; g < p->N2; g++) {
            int64_t *ip = idx + (row * p->N2 + g) * K;
            double *vp = values + (row * p->N2 + g) * K;
            for (int64_t j = 0; j < K; j++) {
                ip[j] = -1;
                vp[j] = -INFINITY;
            }
            if (!info.valid) {
                continue;
            }
            int64_t lo, hi;
            ref_visible_range(p, &info, &lo, &hi);
            const int64_t n = hi >= lo ? hi - lo + 1 : 0;
            if (n == 0) {
                continue;
            }
            cand *c = malloc((size_t)n * sizeof *c);
            for (int64_t s = lo; s <= hi; s++) {
                c[s - lo].key = s;
                c[s - lo].score = ref_quant_score(p, x, row, &info, g, s, NULL);
            }
            qsort(c, (size_t)n, sizeof *c, cmp_cand);
            for (int64_t j = 0; j < K && j < n; j++) {
                ip[j] = c[j].key;
                vp[j] = c[j].score;
            }
            free(c);
        }
    }
}

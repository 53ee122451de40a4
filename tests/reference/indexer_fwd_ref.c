#include "indexer_fwd_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

double ref_fwd_score(const ref_problem *p, const double *q, const double *k, const double *w, int64_t row,
                     const ref_row *info, int64_t g, int64_t s, double *scale)
{
    const int64_t G = p->N1 / p->N2;
    const int64_t D = p->D;
    const double *kv = k + ((info->key_base + s) * p->N2 + g) * D;
    double score = 0.0, size = 0.0;
    for (int64_t h = g * G; h < (g + 1) * G; h++) {
        const double *qv = q + (row * p->N1 + h) * D;
        double dot = 0.0, dot_abs = 0.0;
        for (int64_t d = 0; d < D; d++) {
            const double t = qv[d] * kv[d];
            dot += t;
            dot_abs += isfinite(t) ? fabs(t) : 0.0;
        }
        const double wh = w[row * p->N1 + h];
        if (dot > 0.0) {
            score += wh * dot;
        }
        if (isfinite(wh)) {
            size += fabs(wh) * dot_abs;
        }
    }
    if (scale != NULL) {
        *scale = size;
    }
    return score;
}

int ref_fwd_better(double sa, int64_t ka, double sb, int64_t kb)
{
    const double ra = isnan(sa) ? -INFINITY : sa;
    const double rb = isnan(sb) ? -INFINITY : sb;
    return ra > rb || (ra == rb && ka < kb);
}

int ref_fwd_order(double sa, int64_t ka, double sb, int64_t kb)
{
    if (ref_fwd_better(sa, ka, sb, kb)) {
        return -1;
    }
    return ref_fwd_better(sb, kb, sa, ka) ? 1 : 0;
}

void ref_forward_unit(const ref_problem *p, const double *q, const double *k, const double *w, int64_t row,
                      int64_t g, int64_t *idx, double *values, ref_fwd_stats *stats)
{
    const int64_t K = p->K;
    for (int64_t j = 0; j < K; j++) {
        idx[j] = -1;
        values[j] = -INFINITY;
    }
    ref_row info;
    ref_row_info(p, row, &info);
    if (!info.valid) {
        return;
    }
    int64_t lo, hi;
    ref_visible_range(p, &info, &lo, &hi);
    /* Insertion into a list kept sorted best first: a candidate enters when it ranks before the
     * current last one (or the list is not full). */
    int64_t n = 0, visible = 0;
    double max_scale = 0.0;
    for (int64_t s = lo; s <= hi; s++) {
        if (!ref_visible(p->sparse_mode, p->pre_tokens, p->next_tokens, info.t, s, info.lq, info.lk)) {
            fprintf(stderr, "indexer_fwd_ref: the visible range holds an invisible key\n");
            abort();
        }
        visible++;
        double scale;
        const double sc = ref_fwd_score(p, q, k, w, row, &info, g, s, &scale);
        if (scale > max_scale) {
            max_scale = scale;
        }
        if (K == 0 || (n == K && !ref_fwd_better(sc, s, values[K - 1], idx[K - 1]))) {
            continue;
        }
        int64_t at = n < K ? n : K - 1; /* the slot that frees up */
        while (at > 0 && ref_fwd_better(sc, s, values[at - 1], idx[at - 1])) {
            values[at] = values[at - 1];
            idx[at] = idx[at - 1];
            at--;
        }
        values[at] = sc;
        idx[at] = s;
        if (n < K) {
            n++;
        }
    }
    if (stats == NULL) {
        return;
    }
    stats->units++;
    stats->visible += visible;
    stats->selected += n;
    stats->padded += K - n;
    if (max_scale > stats->max_scale) {
        stats->max_scale = max_scale;
    }
    for (int64_t j = 0; j < n; j++) {
        stats->zero_selected += values[j] == 0.0;
        stats->ordered_ties += j > 0 && values[j] == values[j - 1];
    }
    if (n == K && K > 0 && visible > K) {
        const double kth = values[K - 1];
        int64_t equal_all = 0, equal_sel = 0;
        for (int64_t s = lo; s <= hi; s++) {
            equal_all += ref_fwd_score(p, q, k, w, row, &info, g, s, NULL) == kth;
        }
        for (int64_t j = 0; j < K; j++) {
            equal_sel += values[j] == kth;
        }
        stats->boundary_ties += equal_all > equal_sel;
    }
}

void ref_forward(const ref_problem *p, const double *q, const double *k, const double *w, int64_t *idx,
                 double *values, ref_fwd_stats *stats)
{
    const int64_t rows = ref_rows_q(p);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t g = 0; g < p->N2; g++) {
            const int64_t at = (r * p->N2 + g) * p->K;
            ref_forward_unit(p, q, k, w, r, g, idx + at, values + at, stats);
        }
    }
}

double ref_kl(int64_t rows, int64_t K, const double *values, const unsigned char *counted, const double *target,
              double *dy, double *abs_loss)
{
    double total = 0.0, total_abs = 0.0;
    for (int64_t r = 0; r < rows; r++) {
        const double *v = values + r * K;
        const double *pt = target + r * K;
        const unsigned char *c = counted + r * K;
        double m = -INFINITY, mass = 0.0;
        int any = 0;
        for (int64_t j = 0; j < K; j++) {
            if (c[j]) {
                m = (!any || v[j] > m) ? v[j] : m;
                mass += pt[j];
                any = 1;
            }
        }
        double z = 0.0;
        for (int64_t j = 0; j < K; j++) {
            if (c[j]) {
                z += exp(v[j] - m);
            }
        }
        const double log_z = any ? log(z) : 0.0;
        double loss = 0.0;
        for (int64_t j = 0; j < K; j++) {
            double g = 0.0;
            if (c[j]) {
                const double log_q = v[j] - m - log_z;
                if (pt[j] > 0.0) {
                    const double term = pt[j] * (log(pt[j]) - log_q);
                    loss += term;
                    total_abs += fabs(term);
                }
                g = exp(log_q) * mass - pt[j];
            }
            if (dy != NULL) {
                dy[r * K + j] = g;
            }
        }
        total += loss;
    }
    if (abs_loss != NULL) {
        *abs_loss = total_abs;
    }
    return total;
}

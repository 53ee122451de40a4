#include "indexer_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t ref_rows_q(const ref_problem *p)
{
    return p->layout == REF_BSND ? p->B * p->S1 : p->S1;
}

int64_t ref_rows_k(const ref_problem *p)
{
    return p->layout == REF_BSND ? p->B * p->S2 : p->S2;
}

static void set_why(char *why, size_t n, const char *msg, int64_t b, int64_t v)
{
    if (why != NULL && n > 0) {
        snprintf(why, n, "%s (batch %lld, value %lld)", msg, (long long)b, (long long)v);
    }
}

int ref_seq_ok(const ref_problem *p, char *why, size_t why_size)
{
    if (p->layout == REF_BSND) {
        for (int64_t b = 0; b < p->B; b++) {
            if (p->seq_q != NULL && (p->seq_q[b] < 0 || p->seq_q[b] > p->S1)) {
                set_why(why, why_size, "query length outside 0..S1", b, p->seq_q[b]);
                return 0;
            }
            if (p->seq_k != NULL && (p->seq_k[b] < 0 || p->seq_k[b] > p->S2)) {
                set_why(why, why_size, "key length outside 0..S2", b, p->seq_k[b]);
                return 0;
            }
        }
        return 1;
    }
    if (p->seq_q == NULL || p->seq_k == NULL) {
        set_why(why, why_size, "TND needs both cumulative arrays", -1, 0);
        return 0;
    }
    for (int64_t b = 0; b < p->B; b++) {
        int64_t prev_q = b > 0 ? p->seq_q[b - 1] : 0;
        int64_t prev_k = b > 0 ? p->seq_k[b - 1] : 0;
        if (p->seq_q[b] < prev_q || p->seq_q[b] > p->S1) {
            set_why(why, why_size, "query ends not non-decreasing within 0..T1", b, p->seq_q[b]);
            return 0;
        }
        if (p->seq_k[b] < prev_k || p->seq_k[b] > p->S2) {
            set_why(why, why_size, "key ends not non-decreasing within 0..T2", b, p->seq_k[b]);
            return 0;
        }
    }
    return 1;
}

void ref_row_info(const ref_problem *p, int64_t row, ref_row *out)
{
    memset(out, 0, sizeof *out);
    if (p->layout == REF_BSND) {
        out->b = row / p->S1;
        out->t = row % p->S1;
        out->lq = p->seq_q != NULL ? p->seq_q[out->b] : p->S1;
        out->lk = p->seq_k != NULL ? p->seq_k[out->b] : p->S2;
        out->key_base = out->b * p->S2;
        out->valid = out->t < out->lq;
        return;
    }
    /* TND: the owning batch is the first b whose end is past the row (binary search). */
    int64_t lo = 0;
    int64_t hi = p->B; /* answer in [lo, hi]; hi == B means past the last end */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (p->seq_q[mid] > row) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    if (lo == p->B) {
        out->valid = 0;
        out->b = -1;
        return;
    }
    int64_t b = lo;
    int64_t q_start = b > 0 ? p->seq_q[b - 1] : 0;
    int64_t k_start = b > 0 ? p->seq_k[b - 1] : 0;
    out->valid = 1;
    out->b = b;
    out->t = row - q_start;
    out->lq = p->seq_q[b] - q_start;
    out->lk = p->seq_k[b] - k_start;
    out->key_base = k_start;
}

/*
 * Spec form: mode 0: t - pre <= s <= t + next; mode 3 with diag = Lk - Lq + t:
 * diag - pre <= s <= diag. Rewritten as differences of small numbers (t, s, Lq, Lk are
 * bounded by tensor sizes), so INT64_MAX bands cannot overflow.
 */
int ref_visible(int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens, int64_t t, int64_t s,
                int64_t lq, int64_t lk)
{
    if (sparse_mode == 0) {
        return (t - s <= pre_tokens) && (s - t <= next_tokens);
    }
    if (sparse_mode == 3) {
        int64_t diag = lk - lq + t;
        return (s <= diag) && (diag - s <= pre_tokens);
    }
    return 0;
}

void ref_visible_range(const ref_problem *p, const ref_row *row, int64_t *lo, int64_t *hi)
{
    int64_t t = row->t;
    int64_t last = row->lk - 1;
    int64_t a, z;
    if (p->sparse_mode == 0) {
        a = p->pre_tokens >= t ? 0 : t - p->pre_tokens;
        z = p->next_tokens >= last - t ? last : t + p->next_tokens;
    } else {
        int64_t diag = row->lk - row->lq + t;
        z = diag < last ? diag : last;
        a = p->pre_tokens >= diag ? 0 : diag - p->pre_tokens;
    }
    if (a < 0) {
        a = 0;
    }
    *lo = a;
    *hi = z;
}

ref_slot ref_classify(const ref_problem *p, const ref_row *row, int64_t index)
{
    if (!row->valid) {
        return REF_SLOT_ROW_INVALID;
    }
    if (index == -1) {
        return REF_SLOT_PADDING;
    }
    if (index < -1 || index >= row->lk) {
        return REF_SLOT_BAD_INDEX;
    }
    return ref_visible(p->sparse_mode, p->pre_tokens, p->next_tokens, row->t, index, row->lq, row->lk)
               ? REF_SLOT_COUNTED
               : REF_SLOT_MASKED;
}

int64_t ref_find_bad_index(const ref_problem *p, const int64_t *idx)
{
    int64_t rows = ref_rows_q(p);
    int64_t per_row = p->N2 * p->K;
    for (int64_t r = 0; r < rows; r++) {
        ref_row row;
        ref_row_info(p, r, &row);
        if (!row.valid) {
            continue;
        }
        for (int64_t i = 0; i < per_row; i++) {
            if (ref_classify(p, &row, idx[r * per_row + i]) == REF_SLOT_BAD_INDEX) {
                return r * per_row + i;
            }
        }
    }
    return -1;
}

static double dot(const double *a, const double *b, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) {
        s += a[i] * b[i];
    }
    return s;
}

void ref_forward_slots(const ref_problem *p, const double *q, const double *k, const double *w,
                       const int64_t *idx, double *scores)
{
    const int64_t rows = ref_rows_q(p);
    const int64_t G = p->N1 / p->N2;
    const int64_t D = p->D;
    for (int64_t r = 0; r < rows; r++) {
        ref_row row;
        ref_row_info(p, r, &row);
        for (int64_t g = 0; g < p->N2; g++) {
            for (int64_t j = 0; j < p->K; j++) {
                int64_t slot = (r * p->N2 + g) * p->K + j;
                scores[slot] = 0.0;
                if (!row.valid || ref_classify(p, &row, idx[slot]) != REF_SLOT_COUNTED) {
                    continue;
                }
                const double *kv = k + ((row.key_base + idx[slot]) * p->N2 + g) * D;
                double sum = 0.0;
                for (int64_t h = g * G; h < (g + 1) * G; h++) {
                    double s = dot(q + (r * p->N1 + h) * D, kv, D);
                    sum += w[r * p->N1 + h] * (s > 0.0 ? s : 0.0);
                }
                scores[slot] = sum;
            }
        }
    }
}

double ref_loss(const ref_problem *p, const double *q, const double *k, const double *w,
                const int64_t *idx, const double *dy)
{
    const int64_t slots = ref_rows_q(p) * p->N2 * p->K;
    double *scores = malloc((size_t)(slots > 0 ? slots : 1) * sizeof(double));
    if (scores == NULL) {
        abort();
    }
    ref_forward_slots(p, q, k, w, idx, scores);
    double loss = 0.0;
    const int64_t per_row = p->N2 * p->K;
    for (int64_t i = 0; i < slots; i++) {
        ref_row row;
        ref_row_info(p, i / per_row, &row);
        /* dy is read only at counted slots: elsewhere it may be NaN. */
        if (row.valid && ref_classify(p, &row, idx[i]) == REF_SLOT_COUNTED) {
            loss += dy[i] * scores[i];
        }
    }
    free(scores);
    return loss;
}

static void zero(double *a, int64_t n)
{
    if (a != NULL) {
        for (int64_t i = 0; i < n; i++) {
            a[i] = 0.0;
        }
    }
}

static void zero_counts(int64_t *a, int64_t n)
{
    if (a != NULL) {
        for (int64_t i = 0; i < n; i++) {
            a[i] = 0;
        }
    }
}

static double abs_dot(const double *a, const double *b, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) {
        s += fabs(a[i] * b[i]);
    }
    return s;
}

void ref_backward(const ref_problem *p, const double *q, const double *k, const double *w,
                  const int64_t *idx, const double *dy, const ref_grads *out)
{
    ref_backward_counted(p, q, k, w, idx, dy, out, NULL);
}

void ref_backward_counted(const ref_problem *p, const double *q, const double *k, const double *w,
                          const int64_t *idx, const double *dy, const ref_grads *out, const ref_grad_terms *terms)
{
    const ref_grad_terms none = {NULL, NULL, NULL};
    const ref_grad_terms *t = terms != NULL ? terms : &none;
    const int64_t rows = ref_rows_q(p);
    const int64_t G = p->N1 / p->N2;
    const int64_t D = p->D;
    const int64_t nq = rows * p->N1 * D;
    const int64_t nk = ref_rows_k(p) * p->N2 * D;
    const int64_t nw = rows * p->N1;
    zero(out->dq, nq);
    zero(out->dk, nk);
    zero(out->dw, nw);
    zero(out->dq_abs, nq);
    zero(out->dk_abs, nk);
    zero(out->dw_abs, nw);
    zero_counts(t->dq, nq);
    zero_counts(t->dk, nk);
    zero_counts(t->dw, nw);

    for (int64_t r = 0; r < rows; r++) {
        ref_row row;
        ref_row_info(p, r, &row);
        if (!row.valid) {
            continue; /* dQ = dW = 0, and nothing of this row is read */
        }
        for (int64_t g = 0; g < p->N2; g++) {
            for (int64_t j = 0; j < p->K; j++) {
                int64_t slot = (r * p->N2 + g) * p->K + j;
                if (ref_classify(p, &row, idx[slot]) != REF_SLOT_COUNTED) {
                    continue;
                }
                const double grad = dy[slot];
                const int64_t krow = (row.key_base + idx[slot]) * p->N2 + g;
                const double *kv = k + krow * D;
                for (int64_t h = g * G; h < (g + 1) * G; h++) {
                    const double *qv = q + (r * p->N1 + h) * D;
                    const double s = dot(qv, kv, D);
                    if (!(s > 0.0)) {
                        continue; /* ReLU: strict, the gradient at 0 is 0 */
                    }
                    const int64_t wi = r * p->N1 + h;
                    out->dw[wi] += s * grad;
                    if (out->dw_abs != NULL) {
                        out->dw_abs[wi] += fabs(grad) * abs_dot(qv, kv, D);
                    }
                    if (t->dw != NULL) {
                        t->dw[wi]++;
                    }
                    const double a = w[wi] * grad;
                    for (int64_t d = 0; d < D; d++) {
                        out->dq[(r * p->N1 + h) * D + d] += a * kv[d];
                        out->dk[krow * D + d] += a * qv[d];
                        if (out->dq_abs != NULL) {
                            out->dq_abs[(r * p->N1 + h) * D + d] += fabs(a * kv[d]);
                        }
                        if (out->dk_abs != NULL) {
                            out->dk_abs[krow * D + d] += fabs(a * qv[d]);
                        }
                        if (t->dq != NULL) {
                            t->dq[(r * p->N1 + h) * D + d]++;
                        }
                        if (t->dk != NULL) {
                            t->dk[krow * D + d]++;
                        }
                    }
                }
            }
        }
    }
}

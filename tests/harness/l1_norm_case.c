/* The problems of lig_sparse_flash_mla_softmax_l1_norm and their float64 reference (l1_norm_case.h). */
#include "l1_norm_case.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "framework.h"
#include "rng.h"

int64_t l1n_ref_visible(const l1n_case *c, int64_t b, int64_t t) {
    return cmp_lengths_visible(&c->len, b, t, c->d.mask_mode, c->d.ratio);
}

/* The tensor's own row of (b, t): query rows run b-major in BSND, from the batch's first in TND. */
static int64_t qrow(const l1n_case *c, int64_t b, int64_t t) { return c->d.tnd ? c->len.q0[b] + t : b * c->d.S1 + t; }
static int64_t krow(const l1n_case *c, int64_t b, int64_t s) { return c->d.tnd ? c->len.k0[b] + s : b * c->d.S2 + s; }

/* q_h . k_e in float64 and the sum of its terms' magnitudes. */
static double ref_dot(const l1n_case *c, int64_t b, int64_t t, int64_t h, int64_t e, double *mag) {
    const l1n_desc *d = &c->d;
    double dot = 0, abs_sum = 0;
    for (int64_t x = 0; x < d->D; x++) {
        const double qv = c->qv[(qrow(c, b, t) * d->N1 + h) * d->D + x];
        const double kv = c->kv[krow(c, b, e) * d->D + x];
        dot += qv * kv;
        abs_sum += fabs(qv * kv);
    }
    *mag = abs_sum;
    return dot;
}

void l1n_case_make(l1n_case *c, const l1n_desc *d, uint64_t seed) {
    memset(c, 0, sizeof *c);
    c->d = *d;
    th_rng r = th_rng_make(seed);
    const int64_t B = d->B;
    const cmp_lengths_spec lens = {.tnd = d->tnd, .B = B, .S1 = d->S1, .S2 = d->S2, .lengths = d->lengths,
                                   .residual = d->residual, .short_tail = true, .ratio = d->ratio,
                                   .len_dtype = d->len_dtype};
    cmp_lengths_make(&c->len, &lens, &r);
    int64_t longest = 0;
    for (int64_t b = 0; b < B; b++) longest = c->len.lk[b] > longest ? c->len.lk[b] : longest;
    c->W = d->K > 0 ? d->K : (d->tnd ? longest : d->S2) + d->extra_cols;
    const int o = d->tnd ? 1 : 0;
    const int64_t qs[4] = {B, d->S1, d->N1, d->D}, ks[4] = {B, d->S2, 1, d->D}, ls[4] = {B, 1, d->S1, d->N1};
    tbuf_make(&c->q, d->dtype, 4 - o, qs + o, d->strides, TB_FLOAT_GAP_FILL);
    tbuf_make(&c->k, d->dtype, 4 - o, ks + o, d->strides, TB_FLOAT_GAP_FILL);
    tbuf_make(&c->lse, LIG_FLOAT32, 4 - o, ls + o, d->strides, TB_FLOAT_GAP_FILL);
    /* slots / columns: [B,S1,1,C] or [B,S1,C] (TND without B) */
    const int64_t cs_long[4] = {B, d->S1, 1, c->W}, cs_short[3] = {B, d->S1, c->W};
    const int64_t *cs = d->short_form ? cs_short + o : cs_long + o;
    const int crank = (d->short_form ? 3 : 4) - o;
    tbuf_make(&c->out, LIG_FLOAT32, crank, cs, d->strides, TB_OUTPUT_FILL);
    if (d->K > 0) tbuf_make(&c->idx, d->idx_dtype, crank, cs, d->strides, TB_INT_GAP_FILL);
    for (int64_t i = 0; i < tbuf_numel(&c->q); i++) tbuf_write(&c->q, i, d->magnitude * (2 * th_rng_unit(&r) - 1));
    for (int64_t i = 0; i < tbuf_numel(&c->k); i++) tbuf_write(&c->k, i, d->magnitude * (2 * th_rng_unit(&r) - 1));
    c->qv = malloc(sizeof(double) * (size_t)(tbuf_numel(&c->q) + 1));
    c->kv = malloc(sizeof(double) * (size_t)(tbuf_numel(&c->k) + 1));
    tbuf_read_doubles(&c->q, c->qv);
    tbuf_read_doubles(&c->k, c->kv);
    /* lse: any value for rows no one reads, the visible scores' log-sum-exp plus [0, 1] elsewhere */
    for (int64_t i = 0; i < tbuf_numel(&c->lse); i++) tbuf_write(&c->lse, i, 4 * th_rng_unit(&r) - 2);
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < c->len.lq[b]; t++) {
            const int64_t n = l1n_ref_visible(c, b, t);
            for (int64_t h = 0; h < d->N1 && n > 0; h++) {
                double m = -INFINITY, s = 0, mag;
                for (int64_t e = 0; e < n; e++) m = fmax(m, d->scale * ref_dot(c, b, t, h, e, &mag));
                for (int64_t e = 0; e < n; e++) s += exp(d->scale * ref_dot(c, b, t, h, e, &mag) - m);
                tbuf_write(&c->lse, qrow(c, b, t) * d->N1 + h, m + log(s) + th_rng_unit(&r));
            }
        }
    if (d->K > 0) /* every row's slots: valid rows a mix, the others out of range (never read) */
        for (int64_t row = 0; row < (d->tnd ? d->S1 : B * d->S1); row++) {
            int64_t b = d->tnd ? 0 : row / d->S1, t = d->tnd ? row : row % d->S1;
            if (d->tnd)
                while (b < B - 1 && t >= c->len.q0[b] + c->len.lq[b]) b++;
            if (d->tnd) t -= c->len.q0[b];
            const bool valid = B > 0 && t >= 0 && t < c->len.lq[b];
            const int64_t n = valid ? l1n_ref_visible(c, b, t) : 0, lk = valid ? c->len.lk[b] : 0;
            for (int64_t j = 0; j < d->K; j++) {
                int64_t v = -1;
                const int64_t pick = th_rng_range(&r, 0, 9);
                if (!valid) v = -3 - j; /* an error if read */
                else if (pick < 5 && n > 0) v = th_rng_range(&r, 0, n - 1);
                else if (pick < 7 && lk > n) v = th_rng_range(&r, n, lk - 1); /* masked: 0 */
                else if (pick == 7 && j > 0) v = tbuf_read_int(&c->idx, row * d->K + j - 1);
                tbuf_write_int(&c->idx, row * d->K + j, v);
            }
        }
    tbuf_snapshot(&c->out);
}

void l1n_case_free(l1n_case *c) {
    tbuf *all[] = {&c->q, &c->k, &c->lse, &c->idx, &c->out};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->base) tbuf_free(all[i]);
    cmp_lengths_free(&c->len);
    free(c->qv);
    free(c->kv);
}

lig_status l1n_case_call(l1n_case *c) {
    uint64_t ws = 0;
    lig_executor *e = NULL;
    lig_status st = lig_sparse_flash_mla_softmax_l1_norm_get_workspace_size(
        c->q.t, c->k.t, c->lse.t, c->d.K > 0 ? c->idx.t : NULL, c->len.aq.t, c->len.ak.t, c->len.res.t, c->d.scale, c->d.ratio,
        c->d.mask_mode, c->d.tnd ? "TND" : "BSND", c->out.t, &ws, &e);
    if (st != LIG_SUCCESS) return st;
    void *buf = ws ? malloc((size_t)ws) : NULL;
    st = lig_sparse_flash_mla_softmax_l1_norm(buf, ws, e, NULL);
    free(buf);
    return st;
}

/* The float64 target of entry e at (b, t) and a bound on what fp32 evaluation may move it: per
 * head the argument scale * S - lse is off by at most |scale| (D + 2) eps32 sum_d |q_d k_d| plus
 * two roundings, expf adds a few eps, the head sum N1 roundings, the mean one. */
static double ref_target(const l1n_case *c, int64_t b, int64_t t, int64_t e, double *tol) {
    const l1n_desc *d = &c->d;
    const double eps = FLT_EPSILON, scale = (double)(float)d->scale;
    double sum = 0, err = 0;
    for (int64_t h = 0; h < d->N1; h++) {
        double mag;
        const double dot = ref_dot(c, b, t, h, e, &mag);
        const double lse = tbuf_read(&c->lse, qrow(c, b, t) * d->N1 + h);
        const double arg = scale * dot - lse, P = exp(arg);
        const double arg_err = fabs(scale) * (double)(d->D + 2) * eps * mag + 2 * eps * (fabs(scale * dot) + fabs(arg));
        sum += P;
        err += P * (expm1(arg_err) + 4 * eps);
    }
    if (d->N1 == 0) {
        *tol = 0;
        return 0;
    }
    const double p = sum / (double)d->N1;
    *tol = 2 * (err / (double)d->N1 + (double)(d->N1 + 2) * eps * p) + 1e-37;
    return p;
}

void l1n_case_check(l1n_case *c, const char *label) {
    const l1n_desc *d = &c->d;
    const int64_t rows = d->tnd ? d->S1 : d->B * d->S1;
    char *seen = calloc((size_t)(rows * c->W) + 1, 1);
    int bad = 0;
    for (int64_t b = 0; b < d->B; b++)
        for (int64_t t = 0; t < c->len.lq[b]; t++) {
            const int64_t n = l1n_ref_visible(c, b, t), row = qrow(c, b, t);
            for (int64_t col = 0; col < c->W; col++) {
                int64_t e = col;
                if (d->K > 0) e = tbuf_read_int(&c->idx, row * d->K + col);
                double tol = 0, want = 0;
                if (e >= 0 && e < n) want = ref_target(c, b, t, e, &tol);
                const int64_t i = row * c->W + col;
                seen[i] = 1;
                const double got = tbuf_read(&c->out, i);
                if (!(fabs(got - want) <= tol) && bad++ < 5)
                    CHECK(false, "%s: out[b=%lld,t=%lld,col=%lld] (entry %lld, %lld visible) = %.9g, want %.9g (tolerance %.3g)",
                          label, (long long)b, (long long)t, (long long)col, (long long)e, (long long)n, got, want, tol);
            }
        }
    for (int64_t i = 0; i < rows * c->W; i++)
        if (!seen[i] && tbuf_read(&c->out, i) != 0.0 && bad++ < 5)
            CHECK(false, "%s: element %lld outside the valid rows = %g, want 0", label, (long long)i, tbuf_read(&c->out, i));
    CHECK(bad == 0, "%s: %d elements wrong", label, bad);
    CHECK(tbuf_gaps_unchanged(&c->out), "%s: a byte outside softmax_l1_norm's view was written", label);
    free(seen);
}

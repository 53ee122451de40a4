/* The problems of lig_dense_indexer_kl_loss_grad and their float64 reference (dense_kl_case.h). */
#include "dense_kl_case.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "framework.h"
#include "rng.h"

static int64_t q_rows(const kl_case *c) { return c->in.d.tnd ? c->in.d.S1 : c->in.d.B * c->in.d.S1; }
static int64_t k_rows(const kl_case *c) { return c->in.d.tnd ? c->in.d.S2 : c->in.d.B * c->in.d.S2; }
static int64_t qrow(const kl_case *c, int64_t b, int64_t t) { return c->in.d.tnd ? c->in.len.q0[b] + t : b * c->in.d.S1 + t; }
static int64_t krow(const kl_case *c, int64_t b, int64_t j) { return c->in.d.tnd ? c->in.len.k0[b] + j : b * c->in.d.S2 + j; }

static double *read_all(const tbuf *b) {
    double *v = malloc(sizeof(double) * (size_t)(tbuf_numel(b) + 1));
    tbuf_read_doubles(b, v);
    return v;
}

void kl_case_make(kl_case *c, const lse_desc *d, uint64_t seed, int64_t extra_w, bool dw_f32, lig_status *lse_status) {
    memset(c, 0, sizeof *c);
    lse_case_make(&c->in, d, seed);
    *lse_status = lse_case_call(&c->in);
    c->deterministic = true;
    c->with_loss = true;
    int64_t longest = 0;
    for (int64_t b = 0; b < d->B; b++)
        if (c->in.len.lk[b] > longest) longest = c->in.len.lk[b];
    c->W = longest + extra_w;
    const int64_t ts[4] = {d->B, d->S1, d->N2, c->W}, o = d->tnd ? 1 : 0;
    tbuf_make(&c->target, LIG_FLOAT32, 4 - (int)o, ts + o, d->strides, TB_FLOAT_GAP_FILL);
    tbuf_make(&c->sm, LIG_FLOAT32, 4 - (int)o, ts + o, d->strides, TB_OUTPUT_FILL);
    tbuf_make(&c->dq, d->dtype, c->in.q.ndim, c->in.q.shape, d->strides, TB_OUTPUT_FILL);
    tbuf_make(&c->dk, d->dtype, c->in.k.ndim, c->in.k.shape, d->strides, TB_OUTPUT_FILL);
    tbuf_make(&c->dw, dw_f32 ? LIG_FLOAT32 : d->w_dtype, c->in.w.ndim, c->in.w.shape, d->strides, TB_OUTPUT_FILL);
    const int64_t one[1] = {1};
    tbuf_make(&c->loss, LIG_FLOAT32, 1, one, TC_CONTIGUOUS, TB_OUTPUT_FILL);
    /* targets: positive over the visible entries, summing to 0.4 .. 1 (so that y sum(p) - p and
     * y - p differ), some entries 0; NaN at every other entry and row (never read) */
    th_rng r = th_rng_make(seed ^ 0x5eedULL);
    for (int64_t i = 0; i < tbuf_numel(&c->target); i++) tbuf_write(&c->target, i, NAN);
    for (int64_t b = 0; b < d->B; b++)
        for (int64_t t = 0; t < c->in.len.lq[b]; t++)
            for (int64_t g = 0; g < d->N2; g++) {
                const int64_t n = lse_ref_visible(&c->in, b, t), at = (qrow(c, b, t) * d->N2 + g) * c->W;
                double sum = 0, *v = malloc(sizeof(double) * (size_t)(n + 1));
                for (int64_t j = 0; j < n; j++) sum += (v[j] = th_rng_unit(&r) < 0.2 ? 0.0 : th_rng_unit(&r));
                const double mass = 0.4 + 0.6 * th_rng_unit(&r);
                for (int64_t j = 0; j < n; j++) tbuf_write(&c->target, at + j, sum > 0 ? v[j] * mass / sum : 0.0);
                free(v);
            }
    c->Q = read_all(&c->in.q);
    c->K = read_all(&c->in.k);
    c->Wt = read_all(&c->in.w);
    c->T = read_all(&c->target);
    c->L = read_all(&c->in.lse);
    tbuf *outs[] = {&c->sm, &c->dq, &c->dk, &c->dw, &c->loss};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) tbuf_snapshot(outs[i]);
    tbuf_snapshot(&c->target);
}

void kl_case_free(kl_case *c) {
    tbuf *all[] = {&c->target, &c->dq, &c->dk, &c->dw, &c->sm, &c->loss};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->base) tbuf_free(all[i]);
    free(c->Q); free(c->K); free(c->Wt); free(c->T); free(c->L);
    lse_case_free(&c->in);
}

lig_status kl_case_call(kl_case *c) {
    uint64_t ws = 0;
    lig_executor *e = NULL;
    lse_case *in = &c->in;
    lig_status st = lig_dense_indexer_kl_loss_grad_get_workspace_size(
        in->q.t, in->k.t, in->w.t, c->target.t, in->lse.t, in->len.aq.t, in->len.ak.t, in->len.res.t, in->d.tnd ? "TND" : "BSND",
        in->d.mask_mode, in->d.ratio, c->deterministic, c->dq.t, c->dk.t, c->dw.t, c->sm.t,
        c->with_loss ? c->loss.t : NULL, &ws, &e);
    if (st != LIG_SUCCESS) return st;
    void *buf = ws ? malloc((size_t)ws) : NULL;
    st = lig_dense_indexer_kl_loss_grad(buf, ws, e, NULL);
    free(buf);
    return st;
}

/* The tolerances kl_case_check uses, accumulated beside the reference (NULL: not wanted). */
typedef struct tolerances {
    double *q, *k, *w, *y, loss;
    double rel; /* the gradients' relative error per term (accumulation, bf16 products) */
} tolerances;

static void reference(const kl_case *c, const double *Q, const double *K, const double *W, bool own_lse, double *loss,
                      double *dQ, double *dK, double *dW, double *Y, tolerances *tol) {
    const lse_desc *d = &c->in.d;
    const int64_t G = d->N2 > 0 ? d->N1 / d->N2 : 0, D = d->D;
    if (dQ) memset(dQ, 0, sizeof(double) * (size_t)(q_rows(c) * d->N1 * D));
    if (dK) memset(dK, 0, sizeof(double) * (size_t)(k_rows(c) * d->N2 * D));
    if (dW) memset(dW, 0, sizeof(double) * (size_t)(q_rows(c) * d->N1));
    if (Y) memset(Y, 0, sizeof(double) * (size_t)(q_rows(c) * d->N2 * c->W));
    *loss = 0;
    const int64_t most = c->W > 0 ? c->W : 1;
    double *s = malloc(sizeof(double) * (size_t)(most * (G > 0 ? G : 1))), *sa = malloc(sizeof(double) * (size_t)(most * (G > 0 ? G : 1)));
    double *I = malloc(sizeof(double) * (size_t)most), *dI = malloc(sizeof(double) * (size_t)most);
    double *dIe = malloc(sizeof(double) * (size_t)most), *magI = malloc(sizeof(double) * (size_t)most);
    for (int64_t b = 0; b < d->B; b++)
        for (int64_t t = 0; t < c->in.len.lq[b]; t++)
            for (int64_t g = 0; g < d->N2; g++) {
                const int64_t n = lse_ref_visible(&c->in, b, t), qr = qrow(c, b, t), trow = (qr * d->N2 + g) * c->W;
                double m = -INFINITY;
                for (int64_t j = 0; j < n; j++) {
                    I[j] = 0;
                    magI[j] = 0;
                    for (int64_t hh = 0; hh < G; hh++) {
                        const int64_t h = g * G + hh;
                        double dot = 0, absdot = 0;
                        for (int64_t x = 0; x < D; x++) {
                            const double v = Q[(qr * d->N1 + h) * D + x] * K[(krow(c, b, j) * d->N2 + g) * D + x];
                            dot += v;
                            absdot += fabs(v);
                        }
                        s[j * G + hh] = dot;
                        sa[j * G + hh] = absdot;
                        I[j] += W[qr * d->N1 + h] * (dot > 0 ? dot : 0);
                        magI[j] += fabs(W[qr * d->N1 + h]) * absdot;
                    }
                    if (I[j] > m) m = I[j];
                }
                double lse = c->L[lse_case_index(&c->in, b, t, g)];
                if (own_lse) {
                    double z = 0;
                    for (int64_t j = 0; j < n; j++) z += exp(I[j] - m);
                    lse = n > 0 ? m + log(z) : -INFINITY;
                }
                double P = 0;
                for (int64_t j = 0; j < n; j++) P += c->T[trow + j];
                for (int64_t j = 0; j < n; j++) {
                    const double p = c->T[trow + j], y = exp(I[j] - lse);
                    if (p > 0) *loss += p * (log(p) - (I[j] - lse));
                    dI[j] = y * P - p;
                    if (Y) Y[trow + j] = y;
                    if (tol) {
                        const double dIscore = (double)(D + G + 2) * FLT_EPSILON * 2 * magI[j] + 1e-30;
                        dIe[j] = 1.5 * y * P * dIscore + 4 * FLT_EPSILON * (y * P + p);
                        tol->y[trow + j] = 1.5 * y * dIscore + 2 * FLT_EPSILON * y;
                        tol->loss += p * dIscore + 4 * FLT_EPSILON * fabs(p * (log(p > 0 ? p : 1) - (I[j] - lse)));
                    }
                }
                for (int64_t j = 0; j < n; j++)
                    for (int64_t hh = 0; hh < G; hh++) {
                        const int64_t h = g * G + hh, kr = krow(c, b, j);
                        const double sv = s[j * G + hh], wv = W[qr * d->N1 + h], a = sv > 0 ? dI[j] * wv : 0;
                        if (dW) dW[qr * d->N1 + h] += dI[j] * (sv > 0 ? sv : 0);
                        const double e = tol ? dIe[j] + tol->rel * fabs(dI[j]) : 0;
                        if (tol)
                            tol->w[qr * d->N1 + h] += e * fabs(sv) + fabs(dI[j]) * (double)(D + 2) * FLT_EPSILON * 2 * sa[j * G + hh];
                        for (int64_t x = 0; x < D; x++) {
                            const int64_t qi = (qr * d->N1 + h) * D + x, ki = (kr * d->N2 + g) * D + x;
                            if (dQ) dQ[qi] += a * K[ki];
                            if (dK) dK[ki] += a * Q[qi];
                            if (tol) {
                                tol->q[qi] += e * fabs(wv * K[ki]);
                                tol->k[ki] += e * fabs(wv * Q[qi]);
                            }
                        }
                    }
            }
    free(s); free(sa); free(I); free(dI); free(dIe); free(magI);
}

void kl_reference(const kl_case *c, const double *Q, const double *K, const double *W, bool own_lse, double *loss,
                  double *dQ, double *dK, double *dW, double *Y) {
    reference(c, Q, K, W, own_lse, loss, dQ, dK, dW, Y, NULL);
}

/* Half an ulp of a dtype's rounding, relative. */
static double rounding(lig_dtype t) {
    return t == LIG_FLOAT32 ? FLT_EPSILON / 2 : t == LIG_FLOAT16 ? 1.0 / 2048 : 1.0 / 256;
}

static int check_all(const char *label, const char *name, const tbuf *out, const double *want, const double *tol,
                     bool exact_zero_where_no_tol) {
    int bad = 0;
    const double r = rounding(out->dtype);
    /* FLOAT16's subnormals are 2^-24 apart: half of that absolute, below 2^-14 */
    const double subnormal = out->dtype == LIG_FLOAT16 ? ldexp(1.0, -25) : 1e-30;
    for (int64_t i = 0; i < tbuf_numel(out); i++) {
        const double got = tbuf_read(out, i);
        const bool ok = exact_zero_where_no_tol && tol[i] == 0 && want[i] == 0
                            ? got == 0
                            : fabs(got - want[i]) <= tol[i] + r * fabs(want[i]) + subnormal;
        if (!ok && bad++ < 4)
            CHECK(false, "%s: %s[%lld] = %.9g, want %.9g (tolerance %.3g)", label, name, (long long)i, got, want[i],
                  tol[i] + r * fabs(want[i]) + subnormal);
    }
    CHECK(tbuf_gaps_unchanged(out), "%s: a byte outside %s's view was written", label, name);
    return bad;
}

void kl_case_check(kl_case *c, const char *label) {
    const lse_desc *d = &c->in.d;
    const int64_t nq = tbuf_numel(&c->dq), nk = tbuf_numel(&c->dk), nw = tbuf_numel(&c->dw), ny = tbuf_numel(&c->sm);
    double *dQ = calloc((size_t)nq + 1, 8), *dK = calloc((size_t)nk + 1, 8), *dW = calloc((size_t)nw + 1, 8);
    double *Y = calloc((size_t)ny + 1, 8);
    tolerances tol = {.q = calloc((size_t)nq + 1, 8), .k = calloc((size_t)nk + 1, 8), .w = calloc((size_t)nw + 1, 8),
                      .y = calloc((size_t)ny + 1, 8)};
    tol.rel = (double)(c->W + d->D + d->N1 + 8) * FLT_EPSILON + (d->dtype == LIG_BFLOAT16 ? 1.0 / 256 : 0);
    double loss;
    reference(c, c->Q, c->K, c->Wt, false, &loss, dQ, dK, dW, Y, &tol);
    int bad = 0;
    bad += check_all(label, "d_query", &c->dq, dQ, tol.q, false);
    bad += check_all(label, "d_key", &c->dk, dK, tol.k, false);
    bad += check_all(label, "d_weights", &c->dw, dW, tol.w, false);
    bad += check_all(label, "softmax_out", &c->sm, Y, tol.y, true);
    if (c->with_loss) {
        const double got = tbuf_read(&c->loss, 0), t = tol.loss + 1e-6 * fabs(loss) + 1e-30;
        if (!CHECK(fabs(got - loss) <= t, "%s: loss %.9g, want %.9g (tolerance %.3g)", label, got, loss, t)) bad++;
    } else
        CHECK(tbuf_unchanged(&c->loss), "%s: loss written without being asked for", label);
    CHECK(tbuf_unchanged(&c->target), "%s: attn_softmax_l1_norm was written", label);
    CHECK(bad == 0, "%s: %d outputs wrong", label, bad);
    free(dQ); free(dK); free(dW); free(Y); free(tol.q); free(tol.k); free(tol.w); free(tol.y);
}

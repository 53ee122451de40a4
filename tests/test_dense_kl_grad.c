/* lig_dense_indexer_kl_loss_grad (docs/contract.md 2.9) against the float64 reference of
 * tests/harness/dense_kl_case.c (the loss by its definition, its analytic gradients, which
 * dense_kl_reference_is_the_loss_gradient checks by finite differences of the float64 loss),
 * fed by lig_dense_indexer_softmax_lse as the pipeline is: layouts, dtypes, both weight dtypes,
 * strides, lengths, ratios 1/4/128 with residuals, both mask modes, odd shapes; bitwise across
 * thread counts and runs. The suite runs once per kernel set (LIG_ISA). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dense_kl_case.h"
#include "float_formats.h"
#include "framework.h"
#include "lig.h"

static lse_desc base(void) {
    return (lse_desc){.label = "base", .B = 2, .S1 = 5, .S2 = 9, .N1 = 4, .N2 = 1, .D = 16, .dtype = LIG_FLOAT32,
                      .w_dtype = LIG_FLOAT32, .len_dtype = LIG_INT64, .mask_mode = 3, .ratio = 1, .scale = 1};
}

static void run_and_check(const lse_desc *d, uint64_t seed, int64_t extra_w, bool dw_f32, bool with_loss) {
    kl_case c;
    lig_status st;
    kl_case_make(&c, d, seed, extra_w, dw_f32, &st);
    c.with_loss = with_loss;
    char label[200];
    snprintf(label, sizeof label, "%s (%s, %s/w %s B=%lld S1=%lld S2=%lld N1=%lld N2=%lld D=%lld mask=%lld r=%lld%s W+%lld)",
             d->label, d->tnd ? "TND" : "BSND", th_dtype_name(d->dtype), th_dtype_name(d->w_dtype), (long long)d->B,
             (long long)d->S1, (long long)d->S2, (long long)d->N1, (long long)d->N2, (long long)d->D,
             (long long)d->mask_mode, (long long)d->ratio, d->residual ? " +res" : "", (long long)extra_w);
    if (CHECK(st == LIG_SUCCESS, "%s: lse %s", label, lig_get_last_error())) {
        st = kl_case_call(&c);
        if (CHECK(st == LIG_SUCCESS, "%s: status %d (%s)", label, (int)st, lig_get_last_error())) kl_case_check(&c, label);
    }
    kl_case_free(&c);
}

/* Case `index` of the dense matrix, with 6 query heads (a head group of 3 with two key heads) where
 * the lse's matrix has 4, and the extra target columns, d_weights dtype and loss varied. */
static void matrix_case(const lse_desc *desc, int index, void *ctx) {
    (void)ctx;
    lse_desc d = *desc;
    d.N1 += d.dtype == LIG_BFLOAT16 ? 0 : 2;
    run_and_check(&d, 300 + (uint64_t)index, index % 3, index % 2 == 0, index % 4 != 3);
}

LIG_TEST(dense_kl_grad_matrix) {
    const lse_desc b = base();
    th_note("%d cases", lse_matrix_each(&b, matrix_case, NULL));
}

static void edge_case(const lse_desc *desc, int index, void *ctx) {
    (void)ctx;
    lse_desc d = *desc;
    d.lengths = index % 2 == 1;
    run_and_check(&d, 17 + (uint64_t)index, index % 2, true, true);
}

/* Shapes at the edges: no key, no row, D = 0 (I = 0), one head, 64 heads of D 128, odd groups. */
LIG_TEST(dense_kl_grad_edges) {
    const lse_desc b = base();
    lse_edges_each(&b, edge_case, NULL);
}

/* The reference's analytic gradients are the derivatives of its float64 loss (with the lse that
 * of the float64 scores): central differences at every input element of a small case, ratio 4
 * with residuals. */
LIG_TEST(dense_kl_reference_is_the_loss_gradient) {
    lse_desc d = base();
    d.B = 2; d.S1 = 6; d.S2 = 7; d.N1 = 3; d.D = 4; d.ratio = 4; d.residual = true; d.lengths = false;
    kl_case c;
    lig_status st;
    kl_case_make(&c, &d, 77, 0, true, &st);
    CHECK(st == LIG_SUCCESS, "lse: %s", lig_get_last_error());
    const int64_t nq = tbuf_numel(&c.in.q), nk = tbuf_numel(&c.in.k), nw = tbuf_numel(&c.in.w);
    double loss, *dQ = calloc((size_t)nq, 8), *dK = calloc((size_t)nk, 8), *dW = calloc((size_t)nw, 8);
    kl_reference(&c, c.Q, c.K, c.Wt, true, &loss, dQ, dK, dW, NULL);
    struct { double *x, *grad; int64_t n; const char *name; } inputs[3] = {{c.Q, dQ, nq, "query"}, {c.K, dK, nk, "key"},
                                                                          {c.Wt, dW, nw, "weights"}};
    int bad = 0, nonzero = 0;
    for (int v = 0; v < 3; v++)
        for (int64_t i = 0; i < inputs[v].n; i++) {
            const double keep = inputs[v].x[i], h = 1e-6;
            double up, down;
            inputs[v].x[i] = keep + h;
            kl_reference(&c, c.Q, c.K, c.Wt, true, &up, NULL, NULL, NULL, NULL);
            inputs[v].x[i] = keep - h;
            kl_reference(&c, c.Q, c.K, c.Wt, true, &down, NULL, NULL, NULL, NULL);
            inputs[v].x[i] = keep;
            const double fd = (up - down) / (2 * h), an = inputs[v].grad[i];
            nonzero += an != 0;
            if (fabs(fd - an) > 1e-6 * (1 + fabs(an)) && bad++ < 5)
                CHECK(false, "%s[%lld]: analytic %.12g, finite difference %.12g", inputs[v].name, (long long)i, an, fd);
        }
    CHECK(bad == 0, "%d gradients differ from the finite differences", bad);
    th_note("loss %.6g, %d of %lld gradients non-zero", loss, nonzero, (long long)(nq + nk + nw));
    CHECK(nonzero > (int)(nq + nk + nw) / 4, "only %d non-zero gradients: the case tests little", nonzero);
    free(dQ); free(dK); free(dW);
    kl_case_free(&c);
}

/* Every output bitwise the same for 1 and 2 threads and across runs (deterministic default). */
LIG_TEST(dense_kl_grad_threads_bitwise) {
    const lse_desc b = base();
    for (int di = 0; di < 3; di++) {
        const lse_desc d = lse_threads_desc(&b, di);
        unsigned char *first[5] = {NULL};
        size_t bytes[5] = {0};
        const int threads[4] = {1, 2, 2, 1};
        for (int run = 0; run < 4; run++) {
            lig_set_num_threads(threads[run]);
            kl_case c;
            lig_status st;
            kl_case_make(&c, &d, 5, 2, false, &st);
            if (st == LIG_SUCCESS) st = kl_case_call(&c);
            if (CHECK(st == LIG_SUCCESS, "threads %d: %s", threads[run], lig_get_last_error())) {
                if (run == 0) kl_case_check(&c, "threads 1");
                const tbuf *outs[5] = {&c.dq, &c.dk, &c.dw, &c.sm, &c.loss};
                const char *names[5] = {"d_query", "d_key", "d_weights", "softmax_out", "loss"};
                for (int o = 0; o < 5; o++) {
                    if (!first[o]) {
                        bytes[o] = outs[o]->bytes;
                        first[o] = malloc(bytes[o]);
                        memcpy(first[o], outs[o]->base, bytes[o]);
                    } else
                        CHECK(memcmp(first[o], outs[o]->base, bytes[o]) == 0, "%s: run %d (%d threads): %s differs",
                              th_dtype_name(d.dtype), run, threads[run], names[o]);
                }
            }
            kl_case_free(&c);
        }
        for (int o = 0; o < 5; o++) free(first[o]);
    }
    lig_set_num_threads(0);
}

/* deterministic = false (dK under per-row locks): every output still within the reference's
 * bound, and everything but d_key bitwise the deterministic run's. */
LIG_TEST(dense_kl_grad_nondeterministic) {
    lse_desc d = base();
    d.label = "non-deterministic";
    d.dtype = d.w_dtype = LIG_BFLOAT16;
    d.B = 2; d.S1 = 20; d.S2 = 200; d.N1 = 16; d.D = 32; d.ratio = 4; d.residual = true;
    lig_set_num_threads(2);
    kl_case a, b;
    lig_status st_a, st_b;
    kl_case_make(&a, &d, 9, 0, true, &st_a);
    kl_case_make(&b, &d, 9, 0, true, &st_b);
    b.deterministic = false;
    if (st_a == LIG_SUCCESS) st_a = kl_case_call(&a);
    if (st_b == LIG_SUCCESS) st_b = kl_case_call(&b);
    if (CHECK(st_a == LIG_SUCCESS && st_b == LIG_SUCCESS, "%s", lig_get_last_error())) {
        kl_case_check(&b, "non-deterministic");
        const tbuf *x[4] = {&a.dq, &a.dw, &a.sm, &a.loss}, *y[4] = {&b.dq, &b.dw, &b.sm, &b.loss};
        for (int o = 0; o < 4; o++)
            CHECK(memcmp(x[o]->base, y[o]->base, x[o]->bytes) == 0, "output %d differs between the modes", o);
    }
    kl_case_free(&a);
    kl_case_free(&b);
    lig_set_num_threads(0);
}

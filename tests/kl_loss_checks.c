/* The KL-loss tests' shared checks (see kl_loss_checks.h). */
#include "kl_loss_checks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error_cases.h"
#include "framework.h"
#include "rng.h"
#include "testing/lig_testing.h"

lkcase_desc lkcase_base_desc(void) {
    return (lkcase_desc){.name = "base", .layout = REF_BSND, .B = 2, .S1 = 6, .S2 = 9, .N1 = 4, .N2 = 1, .D = 8,
                         .K = 7, .N1m = 8, .Dm = 24, .Dr = 8, .dtype = LIG_FLOAT32, .target = LIG_KL_TARGET_HEAD_MEAN,
                         .sparse_mode = 3, .pre_tokens = INT64_MAX, .next_tokens = INT64_MAX,
                         .index_dtype = LIG_INT64, .dw_dtype = LIG_FLOAT32};
}

lkcase_desc lkcase_threads_desc(lig_dtype dtype) {
    lkcase_desc d = lkcase_base_desc();
    d.B = 3;
    d.S1 = 24;
    d.S2 = 40;
    d.K = 90;
    d.N2 = 2;
    d.N1 = 64;
    d.N1m = 32;
    d.dtype = dtype;
    return d;
}

int lkcase_outputs_equal(const lkcase *a, const lkcase *b) {
    for (int k = KA_DQ; k <= KA_LOSS; k++)
        if (a->bytes[k] != b->bytes[k] || memcmp(a->buf[k], b->buf[k], a->bytes[k]) != 0) return 0;
    return 1;
}

void lkcase_check_thread_invariance(const lkcase_desc *d, uint64_t seed, const lkcase *first, const char *label) {
    static const int threads[] = {1, 2, 3, 2, 3};
    static const int64_t ring[] = {0, 0, 0, 1, 3};
    for (int i = 0; i < 5; i++) {
        lkcase c;
        lkcase_make(&c, d, seed);
        lig_set_num_threads(threads[i]);
        lig_testing_set_grad_ring_chunks(ring[i]);
        const lig_status st = lkcase_call(&c);
        if (CHECK(st == LIG_SUCCESS, "%s: call: %s", label, lig_get_last_error()))
            CHECK(lkcase_outputs_equal(first, &c), "%s: %d threads, ring %lld: outputs differ from 1 thread", label,
                  threads[i], (long long)ring[i]);
        lkcase_free(&c);
    }
    lig_testing_set_tuning(NULL);
    lig_set_num_threads(0);
}

void lkcase_continuous_index_data(lkcase *c, uint64_t seed) {
    th_rng r = th_rng_make(seed);
    const lkcase_desc *d = &c->d;
    const int64_t nq = c->rows_q * d->N1 * d->D, nk = c->rows_k * d->N2 * d->D, nw = c->rows_q * d->N1;
    for (int64_t i = 0; i < nq; i++) c->qi[i] = 2 * th_rng_unit(&r) - 1;
    for (int64_t i = 0; i < nk; i++) c->ki[i] = 2 * th_rng_unit(&r) - 1;
    for (int64_t i = 0; i < nw; i++) c->w[i] = 2 * th_rng_unit(&r) - 1;
}

int lkcase_check_finite_differences(lkcase *c, double (*loss)(const lkcase *c, void *ctx), void *ctx,
                                    const double *const grads[3], double rel, const char *label, int *nonzero) {
    const lkcase_desc *d = &c->d;
    double *arrays[3] = {c->qi, c->ki, c->w};
    const int64_t counts[3] = {c->rows_q * d->N1 * d->D, c->rows_k * d->N2 * d->D, c->rows_q * d->N1};
    int checked = 0, moved = 0;
    for (int a = 0; a < 3; a++)
        for (int64_t i = 0; i < counts[a]; i++) {
            const double keep = arrays[a][i], h = 1e-6;
            arrays[a][i] = keep + h;
            const double up = loss(c, ctx);
            arrays[a][i] = keep - h;
            const double down = loss(c, ctx);
            arrays[a][i] = keep;
            const double fd = (up - down) / (2 * h);
            CHECK(fabs(fd - grads[a][i]) <= 1e-6 + rel * fabs(fd), "%s: array %d [%lld]: fd %.9g, analytic %.9g",
                  label, a, (long long)i, fd, grads[a][i]);
            checked++;
            moved += fabs(fd) > 1e-4;
        }
    if (nonzero) *nonzero = moved;
    return checked;
}

void lkcase_expect_failure(lkcase *c, int phase, lig_status want, const char *names, const char *label) {
    unsigned char *snap[KA_COUNT] = {0};
    for (int a = KA_DQ; a <= KA_LOSS; a++) {
        snap[a] = malloc(c->bytes[a] + 1);
        memcpy(snap[a], c->buf[a], c->bytes[a]);
    }
    uint64_t ws_size = 0;
    lig_executor *ex = NULL;
    lig_status st = lkcase_phase1(c, &ws_size, &ex);
    if (phase == 2 && st == LIG_SUCCESS) {
        void *ws = ws_size ? malloc(ws_size) : NULL;
        st = lig_sparse_indexer_grad_kl_loss(ws, ws_size, ex, NULL);
        free(ws);
    } else if (phase == 2) {
        CHECK(0, "%s: phase 1 failed: %s", label, lig_get_last_error());
    } else {
        CHECK(ex == NULL, "%s: a failed phase 1 leaves no executor", label);
    }
    CHECK(st == want, "%s: status %d, expected %d (%s)", label, (int)st, (int)want, lig_get_last_error());
    if (st != LIG_SUCCESS) check_error_message(label, lig_get_last_error(), names);
    for (int a = KA_DQ; a <= KA_LOSS; a++) {
        CHECK(memcmp(snap[a], c->buf[a], c->bytes[a]) == 0, "%s: output %d written on failure", label, a);
        free(snap[a]);
    }
}

/* Test problems' lengths over compressed keys (compressed_lengths.h). */
#include "compressed_lengths.h"

#include <stdlib.h>
#include <string.h>

void cmp_lengths_make(cmp_lengths *c, const cmp_lengths_spec *s, th_rng *r) {
    memset(c, 0, sizeof *c);
    const int64_t B = s->B;
    c->B = B;
    c->lq = calloc((size_t)B + 1, 8);
    c->lk = calloc((size_t)B + 1, 8);
    c->q0 = calloc((size_t)B + 1, 8);
    c->k0 = calloc((size_t)B + 1, 8);
    c->resv = calloc((size_t)B + 1, 8);
    int64_t qa = 0, ka = 0;
    for (int64_t b = 0; b < B; b++) {
        if (s->tnd) {
            c->lq[b] = b == B - 1 ? s->S1 - qa : th_rng_range(r, 0, s->S1 - qa);
            c->lk[b] = b == B - 1 ? s->S2 - ka : th_rng_range(r, 0, s->S2 - ka);
            c->q0[b] = qa;
            c->k0[b] = ka;
            qa += c->lq[b];
            ka += c->lk[b];
        } else {
            c->lq[b] = s->lengths ? th_rng_range(r, 0, s->S1) : s->S1;
            c->lk[b] = s->lengths ? th_rng_range(r, 0, s->S2) : s->S2;
        }
        c->resv[b] = s->residual ? th_rng_range(r, 0, s->ratio - 1) : 0;
    }
    /* rows past the last cumulative end */
    if (s->short_tail && s->tnd && B > 0 && c->lq[B - 1] > 0 && th_rng_range(r, 0, 2) == 0) c->lq[B - 1]--;
    const int64_t bs[1] = {B};
    if (s->tnd || s->lengths) {
        tbuf_make(&c->aq, s->len_dtype, 1, bs, TC_CONTIGUOUS, TB_INT_GAP_FILL);
        tbuf_make(&c->ak, s->len_dtype, 1, bs, TC_CONTIGUOUS, TB_INT_GAP_FILL);
        for (int64_t b = 0; b < B; b++) {
            tbuf_write_int(&c->aq, b, s->tnd ? c->q0[b] + c->lq[b] : c->lq[b]);
            tbuf_write_int(&c->ak, b, s->tnd ? c->k0[b] + c->lk[b] : c->lk[b]);
        }
    }
    if (s->residual) {
        tbuf_make(&c->res, s->len_dtype, 1, bs, TC_CONTIGUOUS, TB_INT_GAP_FILL);
        for (int64_t b = 0; b < B; b++) tbuf_write_int(&c->res, b, c->resv[b]);
    }
}

void cmp_lengths_free(cmp_lengths *c) {
    tbuf *all[] = {&c->aq, &c->ak, &c->res};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->base) tbuf_free(all[i]);
    free(c->lq); free(c->lk); free(c->q0); free(c->k0); free(c->resv);
}

int64_t cmp_lengths_visible(const cmp_lengths *c, int64_t b, int64_t t, int64_t mask_mode, int64_t ratio) {
    if (mask_mode == 0) return c->lk[b];
    const int64_t position = c->lk[b] * ratio + c->resv[b] - c->lq[b] + t;
    int64_t n = 0;
    for (int64_t j = 0; j < c->lk[b]; j++)
        if (j * ratio + ratio - 1 <= position) n++;
    return n;
}

void cmp_lengths_break_residual(cmp_lengths *c, lig_dtype len_dtype, int64_t value) {
    if (c->B == 0) return;
    if (!c->res.base) {
        const int64_t bs[1] = {c->B};
        tbuf_make(&c->res, len_dtype, 1, bs, TC_CONTIGUOUS, TB_INT_GAP_FILL);
        for (int64_t b = 0; b < c->B; b++) tbuf_write_int(&c->res, b, 0);
    }
    tbuf_write_int(&c->res, c->B - 1, value);
}

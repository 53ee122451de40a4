#include "case_generators.h"

#include <math.h>
#include <stdlib.h>

#include "float_formats.h"

void gen_opts_default(gen_opts *o)
{
    /* tail_pad, min_abs_s, dup_pool: off */
    *o = (gen_opts){.grid = 1, .grid_range = 8, .p_pad = 0.15, .p_mask = 0.15, .p_dup = 0.15, .poison = 1};
}

void gen_bsnd(th_rng *r, tcase *tc)
{
    tc->p.layout = REF_BSND;
    tc_alloc(tc);
    for (int64_t b = 0; b < tc->p.B; b++) {
        tc->seq_q[b] = th_rng_chance(r, 0.3) ? tc->p.S1 : th_rng_range(r, 0, tc->p.S1);
        tc->seq_k[b] = th_rng_chance(r, 0.3) ? tc->p.S2 : th_rng_range(r, 0, tc->p.S2);
    }
}

void gen_tnd(th_rng *r, tcase *tc, int64_t max_q, int64_t max_k, int64_t extra_q, int64_t extra_k)
{
    int64_t B = tc->p.B;
    int64_t *lq = th_xcalloc((size_t)B, sizeof(int64_t));
    int64_t *lk = th_xcalloc((size_t)B, sizeof(int64_t));
    int64_t tq = 0, tk = 0;
    for (int64_t b = 0; b < B; b++) {
        lq[b] = th_rng_chance(r, 0.15) ? 0 : th_rng_range(r, 0, max_q);
        lk[b] = th_rng_chance(r, 0.15) ? 0 : th_rng_range(r, 0, max_k);
        tq += lq[b];
        tk += lk[b];
    }
    tc->p.layout = REF_TND;
    tc->p.S1 = tq + extra_q;
    tc->p.S2 = tk + extra_k;
    tc->has_seq_q = tc->has_seq_k = 1;
    tc_alloc(tc);
    int64_t eq = 0, ek = 0;
    for (int64_t b = 0; b < B; b++) {
        eq += lq[b];
        ek += lk[b];
        tc->seq_q[b] = eq;
        tc->seq_k[b] = ek;
    }
    free(lq);
    free(lk);
}

double gen_value(th_rng *r, const tcase *tc, const gen_opts *o)
{
    if (o->grid) {
        return (double)th_rng_range(r, -o->grid_range, o->grid_range) / 8.0;
    }
    return th_round_dtype(tc->dtype, 2.0 * th_rng_unit(r) - 1.0);
}

int64_t gen_garbage_index(th_rng *r, const tcase *tc, int64_t lk)
{
    int is32 = tc->idx_dtype == LIG_INT32;
    switch (th_rng_range(r, 0, 6)) {
    case 0: return is32 ? INT32_MIN : INT64_MIN;
    case 1: return is32 ? INT32_MAX : INT64_MAX;
    case 2: return -2;
    case 3: return lk;
    case 4: return -1;
    default: return th_rng_range(r, -3 * lk - 5, 3 * lk + 5);
    }
}

static double poison_value(th_rng *r)
{
    switch (th_rng_range(r, 0, 2)) {
    case 0: return NAN;
    case 1: return INFINITY;
    default: return -INFINITY;
    }
}

/* A random key in [0, lk) outside [lo, hi], or -1 when every key is visible. */
static int64_t masked_key(th_rng *r, int64_t lo, int64_t hi, int64_t lk)
{
    int64_t below = lo < lk ? lo : lk;            /* keys 0..below-1 */
    int64_t above = hi + 1 > 0 ? lk - (hi + 1) : lk; /* keys hi+1..lk-1 */
    if (lo > hi) {                                  /* nothing visible: every key is masked */
        below = lk;
        above = 0;
    }
    if (above < 0) {
        above = 0;
    }
    if (below + above <= 0) {
        return -1;
    }
    int64_t pick = th_rng_range(r, 0, below + above - 1);
    return pick < below ? pick : hi + 1 + (pick - below);
}

static void fill_row(th_rng *r, tcase *tc, const gen_opts *o, int64_t row_index, const ref_row *row)
{
    const ref_problem *p = &tc->p;
    int64_t lo, hi;
    ref_visible_range(p, row, &lo, &hi);
    int64_t vis_hi = hi;
    if (o->dup_pool > 0 && lo <= hi && hi - lo + 1 > o->dup_pool) {
        vis_hi = lo + o->dup_pool - 1;
    }
    for (int64_t g = 0; g < p->N2; g++) {
        int64_t base = (row_index * p->N2 + g) * p->K;
        int64_t n_real = o->tail_pad ? th_rng_range(r, 0, p->K) : p->K;
        for (int64_t j = 0; j < p->K; j++) {
            int64_t v;
            double u = th_rng_unit(r);
            if (j >= n_real || (!o->tail_pad && u < o->p_pad)) {
                v = -1;
            } else if (u < o->p_pad + o->p_mask) {
                v = masked_key(r, lo, hi, row->lk);
            } else if (u < o->p_pad + o->p_mask + o->p_dup && j > 0) {
                v = tc->idx[base + th_rng_range(r, 0, j - 1)];
            } else if (lo <= hi) {
                v = th_rng_range(r, lo, vis_hi);
            } else {
                v = -1;
            }
            tc->idx[base + j] = v;
            ref_slot kind = ref_classify(p, row, v);
            tc->dy[base + j] = (kind != REF_SLOT_COUNTED && o->poison) ? poison_value(r) : gen_value(r, tc, o);
        }
    }
}

/* Continuous data: drop (to -1) counted slots where some head has |S| < min_abs_s, so that the
 * fp32 and float64 ReLU decisions cannot differ. */
static void drop_near_zero(tcase *tc, const gen_opts *o, int64_t row_index, const ref_row *row)
{
    const ref_problem *p = &tc->p;
    const int64_t G = p->N1 / p->N2;
    for (int64_t g = 0; g < p->N2; g++) {
        for (int64_t j = 0; j < p->K; j++) {
            int64_t slot = (row_index * p->N2 + g) * p->K + j;
            if (ref_classify(p, row, tc->idx[slot]) != REF_SLOT_COUNTED) {
                continue;
            }
            const double *kv = tc->k + ((row->key_base + tc->idx[slot]) * p->N2 + g) * p->D;
            for (int64_t h = g * G; h < (g + 1) * G; h++) {
                const double *qv = tc->q + (row_index * p->N1 + h) * p->D;
                double s = 0.0;
                for (int64_t d = 0; d < p->D; d++) {
                    s += qv[d] * kv[d];
                }
                if (fabs(s) < o->min_abs_s) {
                    tc->idx[slot] = -1;
                    if (o->poison) {
                        tc->dy[slot] = NAN;
                    }
                    break;
                }
            }
        }
    }
}

void gen_matrix_shape(th_rng *r, tcase *tc, ref_layout layout, lig_dtype dtype, int64_t mode, lig_dtype idx_dtype,
                      int64_t n2, int v, const int64_t *Ks, int nK)
{
    static const int64_t Ds[] = {1, 5, 13, 33, 64, 67, 8, 3, 17};
    static const tc_strides ins[] = {TC_CONTIGUOUS, TC_PADDED, TC_EXPLICIT, TC_PERMUTED};
    static const tc_strides outs[] = {TC_CONTIGUOUS, TC_PERMUTED, TC_PADDED, TC_EXPLICIT, TC_PADDED};
    tc_init(tc);
    tc->dtype = dtype;
    tc->idx_dtype = idx_dtype;
    tc->p.sparse_mode = mode;
    tc->p.N2 = n2;
    tc->p.N1 = n2 * (1 + v % 3);
    tc->p.D = Ds[v % 9];
    tc->p.K = Ks[(v / 2) % nK];
    tc->p.B = 1 + (v / 3) % 3;
    tc->seq_dtype = ((v / 3) % 2) ? LIG_INT32 : LIG_INT64;
    tc->short_form = n2 == 1 && (v / 5) % 2 == 1;
    tc->in_strides = ins[v % 4];
    tc->out_strides = outs[(v / 4) % 5];
    if (v % 5 == 0) {
        tc->p.pre_tokens = tc->p.next_tokens = INT64_MAX;
    } else {
        tc->p.pre_tokens = (v % 7 == 1) ? INT64_MAX : th_rng_range(r, 0, 4);
        tc->p.next_tokens = (v % 7 == 2) ? INT64_MAX : th_rng_range(r, 0, 4);
    }
    if (layout == REF_BSND) {
        tc->p.S1 = th_rng_range(r, 1, 9);
        tc->p.S2 = th_rng_range(r, 1, 12);
        tc->has_seq_q = (v % 3) != 0;
        tc->has_seq_k = (v % 3) == 1 || (v % 6) == 0;
        gen_bsnd(r, tc);
    } else {
        gen_tnd(r, tc, 6, 8, th_rng_range(r, 0, 2), th_rng_range(r, 0, 2));
    }
}

void gen_layout(th_rng *r, tcase *tc, int tnd, int64_t s1, int64_t s2, int64_t extra_q, int64_t extra_k,
                int with_seq)
{
    if (tnd) {
        gen_tnd(r, tc, s1, s2, extra_q, extra_k);
    } else {
        tc->p.S1 = s1;
        tc->p.S2 = s2;
        tc->has_seq_q = tc->has_seq_k = with_seq;
        gen_bsnd(r, tc);
    }
}

void gen_batch_1024(th_rng *r, tcase *tc, int tnd)
{
    tc_init(tc);
    tc_set_dims(tc, 1024, 2, 1, 4, 4);
    tc->dtype = LIG_FLOAT16;
    gen_layout(r, tc, tnd, 3, 5, 2, 2, 1);
}

void gen_deepseek_heads(tcase *tc)
{
    tc_init(tc);
    tc->p.N1 = 64;
    tc->p.N2 = 1;
    tc->p.D = 128;
    tc->dtype = LIG_BFLOAT16;
    tc->p.sparse_mode = 3;
    tc->short_form = 1;
}

void gen_contended_case(th_rng *r, tcase *tc, lig_dtype dtype, int grid, int64_t n1, int64_t n2, int tnd)
{
    gen_opts o;
    gen_opts_default(&o);
    o.grid = grid;
    o.min_abs_s = grid ? 0.0 : 1e-3;
    o.dup_pool = 3;
    o.p_dup = 0.3;
    o.p_pad = 0.05;
    o.p_mask = 0.05;
    tc_init(tc);
    tc->grid = grid;
    tc->dtype = dtype;
    tc->dw_dtype = dtype;
    tc_set_dims(tc, 2, n1, n2, 24, 16);
    if (tnd) {
        gen_tnd(r, tc, 200, 220, 3, 0);
    } else {
        tc->p.S1 = 200;
        tc->p.S2 = 200;
        gen_bsnd(r, tc);
    }
    gen_data(r, tc, &o);
}

void gen_data(th_rng *r, tcase *tc, const gen_opts *o)
{
    const ref_problem *p = &tc->p;
    const int64_t nq = tc_numel_q(tc), nk = tc_numel_k(tc), nw = tc_numel_w(tc);
    for (int64_t i = 0; i < nq; i++) {
        tc->q[i] = gen_value(r, tc, o);
    }
    for (int64_t i = 0; i < nk; i++) {
        tc->k[i] = gen_value(r, tc, o);
    }
    for (int64_t i = 0; i < nw; i++) {
        tc->w[i] = gen_value(r, tc, o);
    }
    const int64_t rows = ref_rows_q(p);
    const int64_t per_row = p->N2 * p->K;
    for (int64_t rr = 0; rr < rows; rr++) {
        ref_row row;
        ref_row_info(p, rr, &row);
        if (row.valid) {
            fill_row(r, tc, o, rr, &row);
            continue;
        }
        for (int64_t i = 0; i < per_row; i++) {
            tc->idx[rr * per_row + i] = o->poison ? gen_garbage_index(r, tc, row.lk) : -1;
            tc->dy[rr * per_row + i] = o->poison ? poison_value(r) : gen_value(r, tc, o);
        }
        if (o->poison && th_rng_chance(r, 0.5)) {
            /* Nothing of an invalid row may reach an output, not even its query or weight. */
            for (int64_t i = 0; i < p->N1 * p->D; i++) {
                tc->q[rr * p->N1 * p->D + i] = NAN;
            }
            for (int64_t i = 0; i < p->N1; i++) {
                tc->w[rr * p->N1 + i] = NAN;
            }
        }
    }
    if (!o->grid && o->min_abs_s > 0.0) {
        for (int64_t rr = 0; rr < rows; rr++) {
            ref_row row;
            ref_row_info(p, rr, &row);
            if (row.valid) {
                drop_near_zero(tc, o, rr, &row);
            }
        }
    }
    if (o->poison) {
        /* Keys that do not exist (past a batch's length or past the last TND end). */
        const int64_t rows_k = ref_rows_k(p);
        const int64_t kw = p->N2 * p->D;
        for (int64_t s = 0; s < rows_k; s++) {
            int exists;
            if (p->layout == REF_BSND) {
                int64_t b = s / p->S2;
                exists = s % p->S2 < (p->seq_k != NULL ? p->seq_k[b] : p->S2);
            } else {
                exists = p->B > 0 && s < p->seq_k[p->B - 1];
            }
            if (!exists) {
                for (int64_t i = 0; i < kw; i++) {
                    tc->k[s * kw + i] = NAN;
                }
            }
        }
    }
}

/* The KL-loss test problems (see kl_loss_case.h). The indexer's data is on a grid (multiples of
 * 1/4, weights of 1/8, small D) so that every index score and gate is exact in fp32 and the
 * comparison with the reference measures the loss's own arithmetic; the main attention's data is
 * continuous. Invalid rows hold absurd indices, which must never be read. */
#include "kl_loss_case.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "framework.h"
#include "rng.h"
#include "tensor_buffers.h"

static void *alloc_filled(uint64_t bytes, int fill) {
    void *p = malloc(bytes ? bytes : 1);
    memset(p, fill, bytes ? bytes : 1);
    return p;
}

static int64_t dsize(lig_dtype t) { return t == LIG_FLOAT32 || t == LIG_INT32 ? 4 : t == LIG_INT64 ? 8 : 2; }

/* The description of tensor a, for callers that rebuild it (the fuzzers' defects). */
static void describe(lkcase *c, int a, lig_dtype dt, int ndim, const int64_t *shape) {
    c->dtype[a] = dt;
    c->ndim[a] = ndim;
    memcpy(c->shape[a], shape, sizeof(int64_t) * (size_t)ndim);
}

/* A float tensor of n elements from `gen`, its values read back rounded into v. */
static void make_float(lkcase *c, int a, lig_dtype dt, int ndim, const int64_t *shape, double *v, int64_t n) {
    c->bytes[a] = (uint64_t)(n * dsize(dt));
    c->buf[a] = alloc_filled(c->bytes[a], 0);
    for (int64_t i = 0; i < n; i++) {
        th_store(c->buf[a], dt, i, v[i]);
        v[i] = th_load(c->buf[a], dt, i);
    }
    c->t[a] = lig_create_tensor(c->buf[a], dt, ndim, shape, NULL);
    describe(c, a, dt, ndim, shape);
}

static void make_output(lkcase *c, int a, lig_dtype dt, int ndim, const int64_t *shape, int64_t n) {
    c->bytes[a] = (uint64_t)(n * dsize(dt));
    c->buf[a] = alloc_filled(c->bytes[a], TB_OUTPUT_FILL);
    c->t[a] = lig_create_tensor(c->buf[a], dt, ndim, shape, NULL);
    describe(c, a, dt, ndim, shape);
}

static double *grid(th_rng *r, int64_t n, double step, int64_t half) {
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = (double)th_rng_range(r, -half, half) * step;
    return v;
}

static double *uniform(th_rng *r, int64_t n) {
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = 2.0 * th_rng_unit(r) - 1.0;
    return v;
}

double lkcase_main_score(const lkcase *c, int64_t row, int64_t key_row, int64_t h) {
    const lkcase_desc *d = &c->d;
    double s = 0.0;
    for (int64_t i = 0; i < d->Dm; i++) s += c->mq[(row * d->N1m + h) * d->Dm + i] * c->mk[key_row * d->Dm + i];
    for (int64_t i = 0; i < d->Dr; i++) s += c->mqr[(row * d->N1m + h) * d->Dr + i] * c->mkr[key_row * d->Dr + i];
    return c->scale * s;
}

static void make_indices(lkcase *c, th_rng *r) {
    const lkcase_desc *d = &c->d;
    const int64_t K = d->K;
    c->idx = malloc(sizeof(int64_t) * (size_t)(c->rows_q * d->N2 * K + 1));
    for (int64_t row = 0; row < c->rows_q; row++) {
        ref_row info;
        ref_row_info(&c->p, row, &info);
        int64_t lo = 0, hi = -1;
        if (info.valid) ref_visible_range(&c->p, &info, &lo, &hi);
        for (int64_t g = 0; g < d->N2; g++) {
            int64_t *ix = c->idx + (row * d->N2 + g) * K;
            for (int64_t j = 0; j < K; j++) {
                if (!info.valid) {
                    ix[j] = d->index_dtype == LIG_INT32 ? 0x7fffffff : ((int64_t)1 << 40); /* never read */
                    continue;
                }
                const double u = th_rng_unit(r);
                if (lo > hi || u < 0.15) ix[j] = -1;                                  /* padding */
                else if (u < 0.25 && (lo > 0 || hi < info.lk - 1)) {                   /* masked */
                    ix[j] = lo > 0 ? th_rng_range(r, 0, lo - 1) : th_rng_range(r, hi + 1, info.lk - 1);
                } else if (j > 0 && u < 0.35 && ix[j - 1] >= lo && ix[j - 1] <= hi) ix[j] = ix[j - 1]; /* duplicate */
                else ix[j] = th_rng_range(r, lo, hi);
            }
        }
    }
}

/* Statistics of each (row, head): over the counted slots of key head 0 (sparse) or every visible key. */
static void make_statistics(lkcase *c) {
    const lkcase_desc *d = &c->d;
    const int64_t n = c->rows_q * d->N1m;
    c->smax = malloc(sizeof(double) * (size_t)(n + 1));
    c->ssum = malloc(sizeof(double) * (size_t)(n + 1));
    c->lse = malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t row = 0; row < c->rows_q; row++) {
        ref_row info;
        ref_row_info(&c->p, row, &info);
        int64_t lo = 0, hi = -1;
        if (info.valid) ref_visible_range(&c->p, &info, &lo, &hi);
        const int64_t *ix = c->idx + row * d->N2 * d->K;
        for (int64_t h = 0; h < d->N1m; h++) {
            double m = -INFINITY, z = 0.0;
            for (int pass = 0; pass < 2; pass++) {
                const int64_t cnt = d->sparse_stats ? d->K : hi - lo + 1;
                for (int64_t j = 0; j < cnt; j++) {
                    const int64_t s = d->sparse_stats ? ix[j] : lo + j;
                    if (!info.valid || (d->sparse_stats && ref_classify(&c->p, &info, s) != REF_SLOT_COUNTED)) continue;
                    const double x = lkcase_main_score(c, row, info.key_base + s, h);
                    if (pass == 0) m = x > m ? x : m;
                    else z += exp(x - m);
                }
            }
            if (c->sinks) { /* the sink is one more entry of the head's softmax */
                const double sk = c->sinks[h], m2 = sk > m ? sk : m;
                z = (z == 0.0 ? 0.0 : z * exp(m - m2)) + exp(sk - m2);
                m = m2;
            }
            if (z == 0.0) { /* no key: any statistics (never used by a counted slot of key head 0) */
                m = 0.0;
                z = 1.0;
            }
            c->smax[row * d->N1m + h] = m;
            c->ssum[row * d->N1m + h] = z;
            c->lse[row * d->N1m + h] = m + log(z);
        }
    }
}

void lkcase_make(lkcase *c, const lkcase_desc *d, uint64_t seed) {
    memset(c, 0, sizeof *c);
    c->d = *d;
    th_rng r = th_rng_make(seed);
    const bool tnd = d->layout == REF_TND;
    c->p = (ref_problem){.layout = d->layout, .B = d->B, .S1 = d->S1, .S2 = d->S2, .N1 = d->N1, .N2 = d->N2,
                         .D = d->D, .K = d->K, .sparse_mode = d->sparse_mode, .pre_tokens = d->pre_tokens,
                         .next_tokens = d->next_tokens};
    if (tnd) { /* cumulative ends over the T rows, the last batch short of the end */
        int64_t aq = 0, ak = 0;
        for (int64_t b = 0; b < d->B; b++) {
            aq += th_rng_range(&r, 0, d->S1 / d->B);
            ak += th_rng_range(&r, 1, d->S2 / d->B);
            c->seq_q[b] = aq;
            c->seq_k[b] = ak;
        }
        c->p.seq_q = c->seq_q;
        c->p.seq_k = c->seq_k;
    } else if (d->lengths) {
        for (int64_t b = 0; b < d->B; b++) {
            c->seq_q[b] = th_rng_range(&r, 1, d->S1);
            c->seq_k[b] = th_rng_range(&r, 1, d->S2);
        }
        c->p.seq_q = c->seq_q;
        c->p.seq_k = c->seq_k;
    }
    c->rows_q = ref_rows_q(&c->p);
    c->rows_k = ref_rows_k(&c->p);
    c->scale = (double)(float)(1.0 / sqrt((double)(d->Dm + d->Dr > 0 ? d->Dm + d->Dr : 1)));
    c->layout = tnd ? "TND" : "BSND";
    c->sparse_mode = d->sparse_mode;
    c->pre_tokens = d->pre_tokens;
    c->next_tokens = d->next_tokens;
    c->target = d->target;
    c->deterministic = true;

    /* shapes: BSND [B,S,..], TND [T,..] */
    int64_t lead[2] = {d->B, d->S1}, leadk[2] = {d->B, d->S2};
    const int nl = tnd ? 1 : 2;
    const int64_t *lq = tnd ? lead + 1 : lead, *lk = tnd ? leadk + 1 : leadk;
#define SHAPE(name, base, ...)                                                                                    \
    int64_t name[6];                                                                                              \
    int name##_n = nl;                                                                                            \
    memcpy(name, base, sizeof(int64_t) * (size_t)nl);                                                             \
    {                                                                                                             \
        const int64_t rest[] = {__VA_ARGS__};                                                                     \
        for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++) name[name##_n++] = rest[i];                     \
    }
    SHAPE(s_q, lq, d->N1m, d->Dm)
    SHAPE(s_k, lk, 1, d->Dm)
    SHAPE(s_qr, lq, d->N1m, d->Dr)
    SHAPE(s_kr, lk, 1, d->Dr)
    SHAPE(s_qi, lq, d->N1, d->D)
    SHAPE(s_ki, lk, d->N2, d->D)
    SHAPE(s_w, lq, d->N1)
    SHAPE(s_idx, lq, d->N2, d->K)
#undef SHAPE
    if (d->short_form) { /* [.., K] */
        s_idx[s_idx_n - 2] = d->K;
        s_idx_n--;
    }
    int64_t s_st[4], s_st_n = 0;
    if (!tnd) s_st[s_st_n++] = d->B;
    s_st[s_st_n++] = 1;
    s_st[s_st_n++] = d->S1;
    s_st[s_st_n++] = d->N1m;

    const int64_t nq = c->rows_q, nk = c->rows_k;
    c->mq = uniform(&r, nq * d->N1m * d->Dm);
    c->mk = uniform(&r, nk * d->Dm);
    make_float(c, KA_Q, d->dtype, s_q_n, s_q, c->mq, nq * d->N1m * d->Dm);
    make_float(c, KA_K, d->dtype, s_k_n, s_k, c->mk, nk * d->Dm);
    if (d->Dr > 0) {
        c->mqr = uniform(&r, nq * d->N1m * d->Dr);
        c->mkr = uniform(&r, nk * d->Dr);
        make_float(c, KA_QR, d->dtype, s_qr_n, s_qr, c->mqr, nq * d->N1m * d->Dr);
        make_float(c, KA_KR, d->dtype, s_kr_n, s_kr, c->mkr, nk * d->Dr);
    }
    c->qi = grid(&r, nq * d->N1 * d->D, 0.25, 4);
    c->ki = grid(&r, nk * d->N2 * d->D, 0.25, 4);
    c->w = grid(&r, nq * d->N1, 0.125, 8);
    make_float(c, KA_QI, d->dtype, s_qi_n, s_qi, c->qi, nq * d->N1 * d->D);
    make_float(c, KA_KI, d->dtype, s_ki_n, s_ki, c->ki, nk * d->N2 * d->D);
    make_float(c, KA_W, d->dtype, s_w_n, s_w, c->w, nq * d->N1);

    make_indices(c, &r);
    const int64_t ni = nq * d->N2 * d->K;
    c->bytes[KA_IDX] = (uint64_t)(ni * dsize(d->index_dtype));
    c->buf[KA_IDX] = alloc_filled(c->bytes[KA_IDX], 0);
    for (int64_t i = 0; i < ni; i++) th_store_int(c->buf[KA_IDX], d->index_dtype, i, c->idx[i]);
    c->t[KA_IDX] = lig_create_tensor(c->buf[KA_IDX], d->index_dtype, s_idx_n, s_idx, NULL);
    describe(c, KA_IDX, d->index_dtype, s_idx_n, s_idx);

    if (d->sinks) { /* FLOAT32 [N1m], continuous, some far below the scores (negligible) or above them */
        const int64_t s_sk[1] = {d->N1m};
        c->sinks = malloc(sizeof(double) * (size_t)(d->N1m + 1));
        for (int64_t h = 0; h < d->N1m; h++) c->sinks[h] = 4.0 * th_rng_unit(&r) - 2.0 - (h % 5 == 4 ? 30.0 : 0.0);
        make_float(c, KA_SINKS, LIG_FLOAT32, 1, s_sk, c->sinks, d->N1m);
    }
    make_statistics(c);
    if (d->lse) make_float(c, KA_LSE, LIG_FLOAT32, (int)s_st_n, s_st, c->lse, nq * d->N1m);
    else {
        make_float(c, KA_SMAX, LIG_FLOAT32, (int)s_st_n, s_st, c->smax, nq * d->N1m);
        make_float(c, KA_SSUM, LIG_FLOAT32, (int)s_st_n, s_st, c->ssum, nq * d->N1m);
    }
    if (c->p.seq_q) {
        const int64_t sb[1] = {d->B};
        c->bytes[KA_AQ] = c->bytes[KA_AK] = (uint64_t)(8 * d->B);
        c->buf[KA_AQ] = alloc_filled(c->bytes[KA_AQ], 0);
        c->buf[KA_AK] = alloc_filled(c->bytes[KA_AK], 0);
        memcpy(c->buf[KA_AQ], c->seq_q, c->bytes[KA_AQ]);
        memcpy(c->buf[KA_AK], c->seq_k, c->bytes[KA_AK]);
        c->t[KA_AQ] = lig_create_tensor(c->buf[KA_AQ], LIG_INT64, 1, sb, NULL);
        c->t[KA_AK] = lig_create_tensor(c->buf[KA_AK], LIG_INT64, 1, sb, NULL);
        describe(c, KA_AQ, LIG_INT64, 1, sb);
        describe(c, KA_AK, LIG_INT64, 1, sb);
    }
    make_output(c, KA_DQ, d->dtype, s_qi_n, s_qi, nq * d->N1 * d->D);
    make_output(c, KA_DK, d->dtype, s_ki_n, s_ki, nk * d->N2 * d->D);
    make_output(c, KA_DW, d->dw_dtype, s_w_n, s_w, nq * d->N1);
    const int64_t one[1] = {1};
    make_output(c, KA_LOSS, LIG_FLOAT32, 1, one, 1);
}

void lkcase_free(lkcase *c) {
    for (int a = 0; a < KA_COUNT; a++) {
        lig_destroy_tensor(c->t[a]);
        free(c->buf[a]);
    }
    free(c->mq); free(c->mk); free(c->mqr); free(c->mkr); free(c->smax); free(c->ssum); free(c->lse);
    free(c->qi); free(c->ki); free(c->w); free(c->idx); free(c->sinks);
    memset(c, 0, sizeof *c);
}

ref_kl_loss_case lkcase_ref(const lkcase *c) {
    return (ref_kl_loss_case){.p = &c->p, .N1m = c->d.N1m, .Dm = c->d.Dm, .Dr = c->d.Dr, .mq = c->mq, .mk = c->mk,
                              .mqr = c->mqr, .mkr = c->mkr, .smax = c->d.lse ? NULL : c->smax,
                              .ssum = c->d.lse ? NULL : c->ssum, .lse = c->d.lse ? c->lse : NULL, .scale = c->scale,
                              .l1 = c->target == LIG_KL_TARGET_L1,
                              .cann = c->target == LIG_KL_TARGET_CANN, .qi = c->qi, .ki = c->ki, .w = c->w, .idx = c->idx,
                              .sinks = c->d.sinks ? c->sinks : NULL};
}

lig_status lkcase_phase1(lkcase *c, uint64_t *ws_size, lig_executor **ex) {
    lig_tensor *const *t = c->t;
    if (c->d.v2 || c->d.sinks)
        return lig_sparse_indexer_grad_kl_loss_v2_get_workspace_size(
            t[KA_Q], t[KA_K], t[KA_QI], t[KA_KI], t[KA_W], t[KA_IDX], t[KA_SMAX], t[KA_SSUM], t[KA_LSE], t[KA_QR],
            t[KA_KR], t[KA_AQ], t[KA_AK], t[KA_SINKS], c->scale, c->layout, c->sparse_mode, c->pre_tokens,
            c->next_tokens, c->target, c->deterministic, t[KA_DQ], t[KA_DK], t[KA_DW], t[KA_LOSS], ws_size, ex);
    return lig_sparse_indexer_grad_kl_loss_get_workspace_size(
        t[KA_Q], t[KA_K], t[KA_QI], t[KA_KI], t[KA_W], t[KA_IDX], t[KA_SMAX], t[KA_SSUM], t[KA_LSE], t[KA_QR],
        t[KA_KR], t[KA_AQ], t[KA_AK], c->scale, c->layout, c->sparse_mode, c->pre_tokens, c->next_tokens, c->target,
        c->deterministic, t[KA_DQ], t[KA_DK], t[KA_DW], t[KA_LOSS], ws_size, ex);
}

lig_status lkcase_call(lkcase *c) {
    uint64_t ws_size = 0;
    lig_executor *ex = NULL;
    lig_status st = lkcase_phase1(c, &ws_size, &ex);
    if (st != LIG_SUCCESS) return st;
    void *ws = ws_size ? malloc(ws_size) : NULL;
    st = lig_sparse_indexer_grad_kl_loss(ws, ws_size, ex, NULL);
    free(ws);
    return st;
}

static double *read_all(const lkcase *c, int a, lig_dtype dt, int64_t n) {
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = th_load(c->buf[a], dt, i);
    return v;
}

void lkcase_outputs(const lkcase *c, double **dq, double **dk, double **dw, double *loss) {
    const lkcase_desc *d = &c->d;
    *dq = read_all(c, KA_DQ, d->dtype, c->rows_q * d->N1 * d->D);
    *dk = read_all(c, KA_DK, d->dtype, c->rows_k * d->N2 * d->D);
    *dw = read_all(c, KA_DW, d->dw_dtype, c->rows_q * d->N1);
    float f;
    memcpy(&f, c->buf[KA_LOSS], sizeof f);
    *loss = f;
}

/* The output rounding of a dtype, relative. */
double lkcase_out_rel(lig_dtype t) { return t == LIG_BFLOAT16 ? 1.0 / 256 : t == LIG_FLOAT16 ? 1.0 / 2048 : 1e-6; }

double lkcase_maxabs(const double *v, int64_t n) {
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) m = fabs(v[i]) > m ? fabs(v[i]) : m;
    return m;
}

/* Elements within rel * |ref| + 2e-4 * max |ref| + 4e-6 * sizes (the fp32 teacher's and dI's
 * errors: relative to the tensor's size, and dI's absolute error, about fp32's epsilon of the
 * target's scale, times the sizes of the terms that carry it, `sizes` = the sum of |w k|, |w q|,
 * |q k| over the counted slots); an element with no counted term must be exactly 0. */
static void check_close(const char *label, const char *what, const double *got, const double *ref,
                        const double *sizes, int64_t n, double rel) {
    const double m = lkcase_maxabs(ref, n);
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 3; i++) {
        const double bound = sizes[i] == 0.0 ? 0.0 : rel * fabs(ref[i]) + 2e-4 * m + 4e-6 * sizes[i] + 1e-30;
        if (!(fabs(got[i] - ref[i]) <= bound)) {
            CHECK(0, "%s: %s[%lld] = %.9g, reference %.9g (bound %.3g)", label, what, (long long)i, got[i], ref[i],
                  bound);
            bad++;
        }
    }
}

void lkcase_check_outputs(const lkcase *c, const char *label) {
    const lkcase_desc *d = &c->d;
    const int64_t nq = c->rows_q * d->N1 * d->D, nk = c->rows_k * d->N2 * d->D, nw = c->rows_q * d->N1;
    const int64_t ni = c->rows_q * d->N2 * d->K;
    const ref_kl_loss_case rc = lkcase_ref(c);
    double *dI = calloc((size_t)ni + 1, sizeof(double)), abs_loss = 0.0;
    const double loss_ref = ref_kl_loss(&rc, dI, &abs_loss);
    ref_grads g = {.dq = calloc((size_t)nq + 1, 8), .dk = calloc((size_t)nk + 1, 8), .dw = calloc((size_t)nw + 1, 8),
                   .dq_abs = calloc((size_t)nq + 1, 8), .dk_abs = calloc((size_t)nk + 1, 8),
                   .dw_abs = calloc((size_t)nw + 1, 8)};
    ref_backward(&c->p, c->qi, c->ki, c->w, c->idx, dI, &g);
    /* the sizes of the terms: the backward's with dy = 1 on every counted slot */
    double *ones = calloc((size_t)ni + 1, sizeof(double));
    int64_t units = 0; /* (row, key head) with a counted slot: each adds fp32's error of a sum of p log p */
    for (int64_t row = 0; row < c->rows_q; row++) {
        ref_row info;
        ref_row_info(&c->p, row, &info);
        for (int64_t h = 0; info.valid && h < d->N2; h++) {
            int64_t counted = 0;
            for (int64_t j = (row * d->N2 + h) * d->K; j < (row * d->N2 + h + 1) * d->K; j++)
                counted += ones[j] = ref_classify(&c->p, &info, c->idx[j]) == REF_SLOT_COUNTED;
            units += counted > 0;
        }
    }
    ref_grads sz = {.dq = calloc((size_t)nq + 1, 8), .dk = calloc((size_t)nk + 1, 8), .dw = calloc((size_t)nw + 1, 8),
                    .dq_abs = calloc((size_t)nq + 1, 8), .dk_abs = calloc((size_t)nk + 1, 8),
                    .dw_abs = calloc((size_t)nw + 1, 8)};
    ref_backward(&c->p, c->qi, c->ki, c->w, c->idx, ones, &sz);
    double *dq, *dk, *dw, loss;
    lkcase_outputs(c, &dq, &dk, &dw, &loss);
    /* relative to the terms' sizes, and absolute per unit: p and y carry fp32's relative error,
     * so each unit's sum_j p (log p - log y) is off by about eps * sum_j p <= eps even where the
     * terms cancel to ~0 (one key, every slot a duplicate: the fuzzer's case) */
    CHECK(fabs(loss - loss_ref) <= 1e-4 * abs_loss + 1e-6 * fabs(loss_ref) + 1e-6 * (double)units + 1e-7,
          "%s: loss %.9g, reference %.9g", label, loss, loss_ref);
    check_close(label, "d_query_index", dq, g.dq, sz.dq_abs, nq, lkcase_out_rel(d->dtype));
    check_close(label, "d_key_index", dk, g.dk, sz.dk_abs, nk, lkcase_out_rel(d->dtype));
    check_close(label, "d_weights", dw, g.dw, sz.dw_abs, nw, lkcase_out_rel(d->dw_dtype));
    free(ones);
    free(sz.dq); free(sz.dk); free(sz.dw); free(sz.dq_abs); free(sz.dk_abs); free(sz.dw_abs);
    free(dq); free(dk); free(dw); free(dI);
    free(g.dq); free(g.dk); free(g.dw); free(g.dq_abs); free(g.dk_abs); free(g.dw_abs);
}


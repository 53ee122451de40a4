#include "forward_kl_checks.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "float_formats.h"
#include "framework.h"
#include "lig.h"
#include "error_bounds.h"
#include "suite.h"

/* Grid data: scores are multiples of 2^-9; every partial sum of a score is bounded by the sum of
 * |terms| ("scale"), so fp32 is exact while that stays below 2^24 * 2^-9. */
#define FWD_EXACT_SCALE 32768.0

static double fwd_value(th_rng *r, const tcase *tc, const fwd_gen_opts *o, int range)
{
    if (o->grid) {
        return (double)th_rng_range(r, -range, range) / (double)o->grid_den;
    }
    return th_round_dtype(tc->dtype, 2.0 * th_rng_unit(r) - 1.0);
}

void fwd_gen_opts_default(fwd_gen_opts *o)
{
    /* tie_heavy: off */
    *o = (fwd_gen_opts){.grid = 1, .grid_range = 8, .grid_den = 8, .p_dead_head = 0.6, .p_zero_w = 0.1,
                        .p_dup_key = 0.1, .poison = 1};
}

/* First global key row of the batch owning global key row s, or -1 when s belongs to none. */
static int64_t key_batch_start(const ref_problem *p, int64_t s)
{
    if (p->layout == REF_BSND) {
        int64_t b = s / p->S2;
        int64_t lk = p->seq_k != NULL ? p->seq_k[b] : p->S2;
        return s % p->S2 < lk ? b * p->S2 : -1;
    }
    int64_t start = 0;
    for (int64_t b = 0; b < p->B; b++) {
        if (s < p->seq_k[b]) {
            return start;
        }
        start = p->seq_k[b];
    }
    return -1;
}

void fwd_gen_data(th_rng *r, tcase *tc, const fwd_gen_opts *o)
{
    const ref_problem *p = &tc->p;
    const int range = o->tie_heavy ? 2 : o->grid_range;
    const int64_t rows_q = ref_rows_q(p), rows_k = ref_rows_k(p);
    const int64_t kw = p->N2 * p->D, qw = p->N1 * p->D;
    for (int64_t s = 0; s < rows_k; s++) {
        const int64_t start = key_batch_start(p, s);
        if (start < 0) {
            for (int64_t i = 0; i < kw; i++) {
                tc->k[s * kw + i] = o->poison ? NAN : fwd_value(r, tc, o, range);
            }
            continue;
        }
        if (s > start && th_rng_chance(r, o->p_dup_key)) {
            const int64_t from = th_rng_range(r, start, s - 1);
            memcpy(tc->k + s * kw, tc->k + from * kw, (size_t)kw * sizeof(double));
            continue;
        }
        for (int64_t i = 0; i < kw; i++) {
            const double v = fwd_value(r, tc, o, range);
            tc->k[s * kw + i] = o->tie_heavy ? fabs(v) : v;
        }
    }
    for (int64_t row = 0; row < rows_q; row++) {
        ref_row info;
        ref_row_info(p, row, &info);
        const int nan_row = o->poison && !info.valid && th_rng_chance(r, 0.5);
        for (int64_t h = 0; h < p->N1; h++) {
            const int dead = o->tie_heavy && th_rng_chance(r, o->p_dead_head);
            for (int64_t d = 0; d < p->D; d++) {
                const double v = fwd_value(r, tc, o, range);
                tc->q[row * qw + h * p->D + d] = nan_row ? NAN : dead ? -fabs(v) : v;
            }
            const double wv = th_rng_chance(r, o->p_zero_w) ? 0.0 : fwd_value(r, tc, o, o->grid_range);
            tc->w[row * p->N1 + h] = nan_row ? NAN : wv;
        }
    }
}

/* ---- forward checks ---- */

static fwd_check_stats g_fstats;

void fwd_check_stats_reset(void)
{
    memset(&g_fstats, 0, sizeof g_fstats);
}

fwd_check_stats fwd_check_stats_get(void)
{
    return g_fstats;
}

void fwd_check_stats_note(const char *what)
{
    const fwd_check_stats s = g_fstats;
    th_note("%s: %" PRId64 " results (%" PRId64 " exact), %" PRId64 " units, %" PRId64 " visible keys, %" PRId64
            " selected, %" PRId64 " padded, %" PRId64 " invalid-row slots; ties: %" PRId64 " ordered, %" PRId64
            " at the k-th score, %" PRId64 " zero scores selected",
            what, s.cases, s.exact_cases, s.units, s.visible, s.selected, s.padded, s.invalid_slots, s.ordered_ties,
            s.boundary_ties, s.zero_selected);
    CHECK(s.cases == 0 || s.selected > 0, "%s selected nothing at all", what);
}

static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Continuous data: the selection must be the top-k up to the fp32 error of the scores. */
static int tolerant_unit(const tcase *tc, lig_dtype val_dtype, int64_t row, const ref_row *info, int64_t g,
                         const int64_t *li, const double *lv, const int64_t *ri, const double *rv, char *why,
                         size_t why_size)
{
    const ref_problem *p = &tc->p;
    const int64_t K = p->K;
    const int64_t G = p->N2 ? p->N1 / p->N2 : 0;
    /* A score's elementary products w q_d k_d go through D roundings in q.k (a product, D - 1
     * additions), one in the product by w and up to G - 1 additions over the heads (error_bounds.h). */
    const double steps = (double)(p->D + G);
    int64_t n = 0;
    while (n < K && ri[n] >= 0) {
        n++;
    }
    double kth = 0.0, kth_scale = 0.0;
    if (n > 0) {
        kth = ref_fwd_score(p, tc->q, tc->k, tc->w, row, info, g, ri[n - 1], &kth_scale);
        (void)rv;
    }
    double prev = 0.0, prev_scale = 0.0;
    for (int64_t j = 0; j < K; j++) {
        if (j >= n) {
            if (li[j] != -1 || (lv != NULL && lv[j] != -INFINITY)) {
                snprintf(why, why_size, "slot %" PRId64 ": expected -1 / -inf (only %" PRId64
                         " visible keys), got %" PRId64 " / %g", j, n, li[j], lv ? lv[j] : 0.0);
                return 0;
            }
            continue;
        }
        const int64_t s = li[j];
        if (s < 0 || s >= info->lk ||
            !ref_visible(p->sparse_mode, p->pre_tokens, p->next_tokens, info->t, s, info->lq, info->lk)) {
            snprintf(why, why_size, "slot %" PRId64 " holds %" PRId64 ", not a visible key", j, s);
            return 0;
        }
        double scale;
        const double sc = ref_fwd_score(p, tc->q, tc->k, tc->w, row, info, g, s, &scale);
        if (sc < kth - tol_accumulated(steps, scale) - tol_accumulated(steps, kth_scale)) {
            snprintf(why, why_size, "slot %" PRId64 ": key %" PRId64 " scores %.9g, below the k-th score %.9g "
                     "beyond the tolerance", j, s, sc, kth);
            return 0;
        }
        if (j > 0 && sc > prev + tol_accumulated(steps, scale) + tol_accumulated(steps, prev_scale)) {
            snprintf(why, why_size, "slot %" PRId64 ": key %" PRId64 " scores %.9g, above slot %" PRId64
                     "'s %.9g: not in descending order", j, s, sc, j - 1, prev);
            return 0;
        }
        if (lv != NULL) {
            const double tol = tol_element(val_dtype, sc, steps, scale);
            if (!(fabs(lv[j] - sc) <= tol)) {
                snprintf(why, why_size, "slot %" PRId64 ": value %.9g for key %" PRId64 ", reference %.9g (tol %.3g)",
                         j, lv[j], s, sc, tol);
                return 0;
            }
        }
        prev = sc;
        prev_scale = scale;
    }
    if (n > 1) {
        int64_t *sorted = th_xmalloc((size_t)n * sizeof(int64_t));
        memcpy(sorted, li, (size_t)n * sizeof(int64_t));
        qsort(sorted, (size_t)n, sizeof(int64_t), cmp_i64);
        for (int64_t j = 1; j < n; j++) {
            if (sorted[j] == sorted[j - 1]) {
                snprintf(why, why_size, "key %" PRId64 " selected twice", sorted[j]);
                free(sorted);
                return 0;
            }
        }
        free(sorted);
    }
    return 1;
}

int fwd_check_outputs(const tcase *tc, lig_dtype val_dtype, const int64_t *lib_idx, const double *lib_val,
                      const char *label)
{
    const ref_problem *p = &tc->p;
    const int64_t rows = ref_rows_q(p), K = p->K;
    const int64_t slots = rows * p->N2 * K;
    int64_t *ref_idx = th_xmalloc((size_t)slots * sizeof(int64_t));
    double *ref_val = th_xmalloc((size_t)slots * sizeof(double));
    ref_fwd_stats st;
    memset(&st, 0, sizeof st);
    ref_forward(p, tc->q, tc->k, tc->w, ref_idx, ref_val, &st);
    const int exact = tc->grid && st.max_scale < FWD_EXACT_SCALE;
    g_fstats.cases++;
    g_fstats.exact_cases += exact;
    g_fstats.units += st.units;
    g_fstats.visible += st.visible;
    g_fstats.selected += st.selected;
    g_fstats.padded += st.padded;
    g_fstats.ordered_ties += st.ordered_ties;
    g_fstats.boundary_ties += st.boundary_ties;
    g_fstats.zero_selected += st.zero_selected;

    int64_t bad = 0;
    char why[512];
    for (int64_t r = 0; r < rows; r++) {
        ref_row info;
        ref_row_info(p, r, &info);
        for (int64_t g = 0; g < p->N2; g++) {
            const int64_t base = (r * p->N2 + g) * K;
            const int64_t *li = lib_idx + base;
            const double *lv = lib_val ? lib_val + base : NULL;
            int ok = 1;
            why[0] = '\0';
            if (!info.valid) {
                g_fstats.invalid_slots += K;
                for (int64_t j = 0; j < K && ok; j++) {
                    if (li[j] != -1 || (lv && lv[j] != -INFINITY)) {
                        snprintf(why, sizeof why, "invalid row, slot %" PRId64 ": expected -1 / -inf, got %" PRId64
                                 " / %g", j, li[j], lv ? lv[j] : 0.0);
                        ok = 0;
                    }
                }
            } else if (exact) {
                for (int64_t j = 0; j < K && ok; j++) {
                    const int64_t want = ref_idx[base + j];
                    if (li[j] != want) {
                        snprintf(why, sizeof why, "slot %" PRId64 ": index %" PRId64 ", expected %" PRId64
                                 " (reference score %.9g, lib's key scores %.9g)", j, li[j], want, ref_val[base + j],
                                 (li[j] >= 0 && li[j] < info.lk)
                                     ? ref_fwd_score(p, tc->q, tc->k, tc->w, r, &info, g, li[j], NULL) : NAN);
                        ok = 0;
                    } else if (lv != NULL) {
                        const double wv = want < 0 ? -INFINITY : th_round_dtype(val_dtype, ref_val[base + j]);
                        if (!(lv[j] == wv || (isnan(lv[j]) && isnan(wv)))) {
                            snprintf(why, sizeof why, "slot %" PRId64 " (key %" PRId64 "): value %.9g, expected %.9g "
                                     "(reference %.9g rounded once to %s)", j, want, lv[j], wv, ref_val[base + j],
                                     th_dtype_name(val_dtype));
                            ok = 0;
                        }
                    }
                }
            } else {
                ok = tolerant_unit(tc, val_dtype, r, &info, g, li, lv, ref_idx + base, ref_val + base, why,
                                   sizeof why);
            }
            if (!ok) {
                if (bad < 3) {
                    if (info.valid) {
                        CHECK(0, "%s: row %" PRId64 " (batch %" PRId64 " t %" PRId64 ", Lq %" PRId64 " Lk %" PRId64
                              ") head %" PRId64 ": %s", label, r, info.b, info.t, info.lq, info.lk, g, why);
                    } else {
                        CHECK(0, "%s: row %" PRId64 " head %" PRId64 ": %s", label, r, g, why);
                    }
                }
                bad++;
            }
        }
    }
    if (bad > 3) {
        CHECK(0, "%s: %" PRId64 " (row, head) units wrong in all", label, bad);
    }
    free(ref_idx);
    free(ref_val);
    return bad == 0;
}

int fwd_check_result(const tcase *tc, lig_dtype val_dtype, const op_result *res, const char *label)
{
    int ok = fwd_check_outputs(tc, val_dtype, res->idx, res->val, label);
    ok &= CHECK(res->gaps_ok, "%s: an input changed or an output byte outside the strided view was written", label);
    return ok;
}

int fwd_check_case_or_refused(tcase *tc, int with_values, lig_dtype val_dtype, const char *label, int *refused)
{
    suite_case sc = {.tc = tc, .with_values = with_values, .val_dtype = val_dtype};
    return suite_check(&suite_forward, &sc, label, refused);
}

int fwd_check_case(tcase *tc, int with_values, lig_dtype val_dtype, const char *label)
{
    return fwd_check_case_or_refused(tc, with_values, val_dtype, label, NULL);
}

/* ---- KL step ---- */

void kl_gen_opts_default(kl_gen_opts *o)
{
    *o = (kl_gen_opts){.p_pad = 0.2, .p_empty_row = 0.1, .p_zero_target = 0.15, .normalize = 1, .logit_scale = 4.0,
                       .poison = 1};
}

static double poison(th_rng *r)
{
    switch (th_rng_range(r, 0, 4)) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -INFINITY;
    case 3: return -1e30;
    default: return -3.5;
    }
}

void kl_gen_data(th_rng *r, klcase *kc, const kl_gen_opts *o)
{
    const int64_t rows = kl_rows(kc), K = kl_K(kc);
    const int is32 = kc->idx_dtype == LIG_INT32;
    for (int64_t row = 0; row < rows; row++) {
        const int empty = th_rng_chance(r, o->p_empty_row);
        double mass = 0.0;
        for (int64_t j = 0; j < K; j++) {
            const int64_t i = row * K + j;
            const int counted = !empty && !th_rng_chance(r, o->p_pad);
            if (counted) {
                kc->idx[i] = th_rng_range(r, 0, 5000);
                kc->values[i] = th_round_dtype(kc->v_dtype, o->logit_scale * (2.0 * th_rng_unit(r) - 1.0));
                kc->target[i] = th_rng_chance(r, o->p_zero_target) ? 0.0 : th_rng_unit(r) + 1e-3;
                mass += kc->target[i];
            } else {
                static const int64_t pads[] = {-1, -1, -1, -2, -7};
                kc->idx[i] = th_rng_chance(r, 0.8) ? pads[th_rng_range(r, 0, 4)] : (is32 ? INT32_MIN : INT64_MIN);
                /* without indices the padding mark is the value -inf */
                kc->values[i] = (!kc->has_indices || !o->poison) ? -INFINITY : poison(r);
                kc->target[i] = o->poison ? poison(r) : 0.0;
            }
        }
        const double f = o->normalize ? (mass > 0.0 ? 1.0 / mass : 1.0) : 0.1 + 5.0 * th_rng_unit(r);
        for (int64_t j = 0; j < K; j++) {
            const int64_t i = row * K + j;
            if (kl_counted(kc, i)) {
                kc->target[i] = th_round_dtype(kc->t_dtype, kc->target[i] * f);
            } else if (isfinite(kc->target[i]) || isnan(kc->target[i])) {
                kc->target[i] = th_round_dtype(kc->t_dtype, kc->target[i]);
            }
        }
    }
}

int kl_check_outputs(const klcase *kc, double lib_loss, const double *lib_dy, const char *label)
{
    const int64_t rows = kl_rows(kc), K = kl_K(kc), n = rows * K;
    unsigned char *counted = th_xmalloc((size_t)n);
    double *dy = th_xmalloc((size_t)n * sizeof(double));
    for (int64_t i = 0; i < n; i++) {
        counted[i] = (unsigned char)kl_counted(kc, i);
    }
    double abs_loss = 0.0;
    const double loss = ref_kl(rows, K, kc->values, counted, kc->target, dy, &abs_loss);
    int ok = 1;
    const double loss_tol = 2.0 * ldexp(1.0, -24) * fabs(loss) + 1e-12 * abs_loss + 1e-300;
    ok &= CHECK(fabs(lib_loss - loss) <= loss_tol, "%s: loss %.9g, reference %.12g (tolerance %.3g)", label, lib_loss,
                loss, loss_tol);
    int64_t bad = 0;
    for (int64_t r = 0; r < rows; r++) {
        double row_scale = 0.0, mass = 0.0;
        for (int64_t j = 0; j < K; j++) {
            if (counted[r * K + j]) {
                mass += kc->target[r * K + j];
                row_scale = fmax(row_scale, fabs(kc->target[r * K + j]));
            }
        }
        row_scale = fmax(row_scale, fabs(mass));
        for (int64_t j = 0; j < K; j++) {
            const int64_t i = r * K + j;
            const double eps = tol_eps(kc->dy_dtype);
            const double tol = 2.0 * eps * fabs(dy[i]) + tol_tiny(kc->dy_dtype) + 1e-12 * row_scale;
            const char *why = NULL;
            if (!counted[i] && lib_dy[i] != 0.0) {
                why = "slot does not count: expected exactly 0";
            } else if (!(fabs(lib_dy[i] - dy[i]) <= tol)) {
                why = "outside tolerance";
            }
            if (why != NULL) {
                if (bad < 3) {
                    CHECK(0, "%s: dy[row %" PRId64 "][%" PRId64 "] = %.9g, reference %.9g (%s; value %g target %g "
                          "counted %d)", label, r, j, lib_dy[i], dy[i], why, kc->values[i], kc->target[i], counted[i]);
                }
                bad++;
            }
        }
    }
    if (bad > 3) {
        CHECK(0, "%s: %" PRId64 " of %" PRId64 " dy elements wrong", label, bad, n);
    }
    free(counted);
    free(dy);
    return ok && bad == 0;
}

int fwd_check_inst(const op_inst *oi, const tcase *tc, int with_values, lig_dtype val_dtype, const char *label)
{
    const int64_t slots = tc_numel_slots(tc);
    int64_t *idx = th_xmalloc((size_t)slots * sizeof(int64_t));
    double *val = with_values ? th_xmalloc((size_t)slots * sizeof(double)) : NULL;
    fwd_read(oi, idx, val);
    const int ok = fwd_check_outputs(tc, val_dtype, idx, val, label);
    free(idx);
    free(val);
    return ok;
}

int kl_check_inst(const op_inst *oi, const klcase *kc, const char *label)
{
    double loss;
    double *dy = th_xmalloc((size_t)(kl_rows(kc) * kl_K(kc)) * sizeof(double));
    kl_read(oi, &loss, dy);
    const int ok = kl_check_outputs(kc, loss, dy, label);
    free(dy);
    return ok;
}

int kl_check_result(const klcase *kc, const op_result *res, const char *label)
{
    int ok = kl_check_outputs(kc, res->loss, res->dy, label);
    ok &= CHECK(res->gaps_ok, "%s: an input changed or an output byte outside the view was written", label);
    return ok;
}

int kl_check_case(klcase *kc, const char *label)
{
    suite_case sc = {.kc = kc};
    return suite_check(&suite_kl, &sc, label, NULL);
}

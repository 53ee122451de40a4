/* lig_sparse_indexer_grad_kl_loss (docs/contract.md 2.5) against its float64 reference
 * (reference/sparse_kl_loss_ref.c), the reference against central finite differences, the two
 * targets on sparse statistics, CANN's semantics (LIG_KL_TARGET_CANN: dI = y - p, the clamped
 * loss), determinism across runs, thread counts and ring capacities, and the error cases (nothing
 * written on failure). The suite runs once per kernel set (LIG_ISA). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error_cases.h"
#include "framework.h"
#include "kl_loss_case.h"
#include "kl_loss_checks.h"
#include "lig.h"
#include "reference/indexer_ref.h"
#include "tensor_buffers.h"
#include "core/tensor.h"
#include "testing/lig_testing.h"

#define NOBAND INT64_MAX

static lkcase_desc base_desc(void) { return lkcase_base_desc(); }

/* Runs the case and compares every output with the reference (lkcase_check_outputs). */
static void run_and_compare(lkcase *c, const char *label) {
    const lig_status st = lkcase_call(c);
    if (!CHECK(st == LIG_SUCCESS, "%s: status %d (%s)", label, (int)st, lig_get_last_error())) return;
    lkcase_check_outputs(c, label);
}

/* The reference's loss of the case (its arrays as they are now): ctx is its ref_kl_loss_case. */
static double reference_loss(const lkcase *c, void *ctx) {
    (void)c;
    return ref_kl_loss((const ref_kl_loss_case *)ctx, NULL, NULL);
}

LIG_TEST(kl_loss_ref_finite_differences) {
    lkcase_desc d = base_desc();
    d.K = 5;
    d.S1 = 4;
    d.S2 = 6;
    for (int target = 0; target < 2; target++) {
        d.target = (lig_kl_target)target;
        lkcase c;
        lkcase_make(&c, &d, 11 + (uint64_t)target);
        lkcase_continuous_index_data(&c, 5);
        const int64_t nq = c.rows_q * d.N1 * d.D, nk = c.rows_k * d.N2 * d.D, nw = c.rows_q * d.N1;
        ref_kl_loss_case rc = lkcase_ref(&c);
        const int64_t ni = c.rows_q * d.N2 * d.K;
        double *dI = calloc((size_t)ni + 1, 8);
        ref_kl_loss(&rc, dI, NULL);
        ref_grads g = {.dq = calloc((size_t)nq, 8), .dk = calloc((size_t)nk, 8), .dw = calloc((size_t)nw, 8)};
        ref_backward(&c.p, c.qi, c.ki, c.w, c.idx, dI, &g);
        const double *const grads[3] = {g.dq, g.dk, g.dw};
        char label[32];
        snprintf(label, sizeof label, "target %d", target);
        const int checked = lkcase_check_finite_differences(&c, reference_loss, &rc, grads, 1e-5, label, NULL);
        th_note("target %d: %d derivatives checked", target, checked);
        free(dI); free(g.dq); free(g.dk); free(g.dw);
        lkcase_free(&c);
    }
}

/* The matrix: layouts, key heads 1 and 2, dtypes, targets, rope, lse, statistics, lengths, band. */
LIG_TEST(kl_loss_matrix) {
    static const lig_dtype dtypes[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    int n = 0;
    for (int layout = 0; layout < 2; layout++)
        for (int n2 = 1; n2 <= 2; n2++)
            for (int dt = 0; dt < 3; dt++)
                for (int variant = 0; variant < 4; variant++) {
                    lkcase_desc d = base_desc();
                    d.layout = layout ? REF_TND : REF_BSND;
                    if (layout) {
                        d.S1 = 14;
                        d.S2 = 20;
                    }
                    d.N2 = n2;
                    d.N1 = 4 * n2;
                    d.dtype = dtypes[dt];
                    d.dw_dtype = variant & 1 ? LIG_FLOAT32 : d.dtype;
                    d.target = variant & 1 ? LIG_KL_TARGET_L1 : LIG_KL_TARGET_HEAD_MEAN;
                    d.lse = variant & 2;
                    d.Dr = variant == 2 ? 0 : 8;
                    d.sparse_stats = variant >= 2;
                    d.lengths = variant == 1;
                    d.short_form = n2 == 1 && variant == 3;
                    d.index_dtype = variant == 2 ? LIG_INT32 : LIG_INT64;
                    if (variant == 3 && !layout) { /* the band (mode 0) */
                        d.sparse_mode = 0;
                        d.pre_tokens = 3;
                        d.next_tokens = 1;
                    }
                    if (dt == 2 && variant == 0) { /* wide groups: the bf16 engines on the sets that have them */
                        d.N1 = 32 * n2;
                        d.N1m = 32;
                        d.Dm = 64;
                    }
                    lkcase c;
                    lkcase_make(&c, &d, 100 + (uint64_t)n);
                    char label[128];
                    snprintf(label, sizeof label, "%s N2=%d %s variant %d", layout ? "TND" : "BSND", n2,
                             dt == 0 ? "fp32" : dt == 1 ? "fp16" : "bf16", variant);
                    run_and_compare(&c, label);
                    lkcase_free(&c);
                    n++;
                }
    th_note("%d cases", n);
}

/* Statistics from attention over the same slots: sum_j p = 1, so both targets are the same loss. */
LIG_TEST(kl_loss_sparse_statistics_targets_agree) {
    for (int dt = 0; dt < 2; dt++) {
        lkcase_desc d = base_desc();
        d.sparse_stats = true;
        d.dtype = dt ? LIG_BFLOAT16 : LIG_FLOAT32;
        double *out[2][3], loss[2];
        int64_t counts[3] = {0, 0, 0};
        for (int target = 0; target < 2; target++) {
            d.target = (lig_kl_target)target;
            lkcase c;
            lkcase_make(&c, &d, 77);
            REQUIRE(lkcase_call(&c) == LIG_SUCCESS, "call: %s", lig_get_last_error());
            lkcase_outputs(&c, &out[target][0], &out[target][1], &out[target][2], &loss[target]);
            counts[0] = c.rows_q * d.N1 * d.D;
            counts[1] = c.rows_k * d.N2 * d.D;
            counts[2] = c.rows_q * d.N1;
            lkcase_free(&c);
        }
        CHECK(fabs(loss[0] - loss[1]) <= 1e-4 * (fabs(loss[0]) + 1e-3), "losses %.9g and %.9g", loss[0], loss[1]);
        for (int a = 0; a < 3; a++) {
            const double m = lkcase_maxabs(out[0][a], counts[a]);
            for (int64_t i = 0; i < counts[a]; i++)
                if (!CHECK(fabs(out[0][a][i] - out[1][a][i]) <= 1e-3 * m + lkcase_out_rel(d.dtype) * fabs(out[0][a][i]),
                           "output %d [%lld]: head_mean %.9g, l1 %.9g", a, (long long)i, out[0][a][i], out[1][a][i]))
                    break;
            free(out[0][a]);
            free(out[1][a]);
        }
    }
}

/* deterministic = true: bitwise across runs, thread counts 1-3 and ring capacities; false: close. */
LIG_TEST(kl_loss_determinism_threads) {
    for (int dt = 0; dt < 2; dt++) {
        const lkcase_desc d = lkcase_threads_desc(dt ? LIG_BFLOAT16 : LIG_FLOAT32);
        lkcase first;
        lkcase_make(&first, &d, 9);
        lig_set_num_threads(1);
        REQUIRE(lkcase_call(&first) == LIG_SUCCESS, "call: %s", lig_get_last_error());
        lkcase_check_thread_invariance(&d, 9, &first, dt ? "bf16" : "fp32");
        lkcase c;
        lkcase_make(&c, &d, 9);
        c.deterministic = false;
        lig_set_num_threads(3);
        REQUIRE(lkcase_call(&c) == LIG_SUCCESS, "call: %s", lig_get_last_error());
        run_and_compare(&c, dt ? "bf16 deterministic=false" : "fp32 deterministic=false");
        float l1, l2;
        memcpy(&l1, first.buf[KA_LOSS], 4);
        memcpy(&l2, c.buf[KA_LOSS], 4);
        CHECK(l1 == l2, "the loss does not depend on deterministic: %.9g vs %.9g", l1, l2);
        lig_set_num_threads(0);
        lkcase_free(&c);
        lkcase_free(&first);
    }
}

/* ---- LIG_KL_TARGET_CANN: CANN's kernel (dI = y - p, the loss clamped at 1e-8) ------------ */

/* The matrix for CANN's semantics: layouts, dtypes, statistics (dense: sum p < 1, where CANN's
 * dI = y - p and lig's y sum(p) - p differ), lse, rope, lengths, index dtypes. */
LIG_TEST(kl_loss_cann_matrix) {
    static const lig_dtype dtypes[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    int n = 0;
    for (int layout = 0; layout < 2; layout++)
        for (int dt = 0; dt < 3; dt++)
            for (int variant = 0; variant < 3; variant++) {
                lkcase_desc d = base_desc();
                d.target = LIG_KL_TARGET_CANN;
                d.layout = layout ? REF_TND : REF_BSND;
                if (layout) {
                    d.S1 = 14;
                    d.S2 = 20;
                }
                d.dtype = dtypes[dt];
                d.lse = variant == 1;
                d.sparse_stats = variant == 1;
                d.Dr = variant == 1 ? 0 : 8;
                d.lengths = variant == 2;
                d.index_dtype = variant == 2 ? LIG_INT32 : LIG_INT64;
                d.short_form = variant == 2;
                d.dw_dtype = variant == 2 ? LIG_FLOAT32 : d.dtype;
                if (dt == 2 && variant == 0) { /* wide groups: the bf16 engines on the sets that have them */
                    d.N1 = 32;
                    d.N1m = 32;
                    d.Dm = 64;
                }
                lkcase c;
                lkcase_make(&c, &d, 300 + (uint64_t)n);
                char label[128];
                snprintf(label, sizeof label, "CANN %s %s variant %d", layout ? "TND" : "BSND",
                         dt == 0 ? "fp32" : dt == 1 ? "fp16" : "bf16", variant);
                run_and_compare(&c, label);
                lkcase_free(&c);
                n++;
            }
    th_note("%d cases", n);
}

/* The reference's loss of the case with another target (the case is left as it was). */
static double ref_loss_as(const lkcase *c, lig_kl_target target) {
    ref_kl_loss_case rc = lkcase_ref(c);
    rc.l1 = target == LIG_KL_TARGET_L1;
    rc.cann = target == LIG_KL_TARGET_CANN;
    return ref_kl_loss(&rc, NULL, NULL);
}

/* The clamps at 1e-8 decide the loss: (a) statistics shifted by +30 make every p about 1e-14, so
 * each term is 1e-8 (log 1e-8 - log y); (b) weights 16 times larger make most y far below 1e-8,
 * where log y is taken as log 1e-8. Each case is compared with the reference, and the reference
 * with the unclamped loss, which must differ (the case exercises the clamp). On dense statistics
 * (sum p < 1) CANN's dI = y - p must also give other gradients than lig's head_mean target. */
LIG_TEST(kl_loss_cann_clamps) {
    for (int which = 0; which < 2; which++) {
        lkcase_desc d = base_desc();
        d.target = LIG_KL_TARGET_CANN;
        lkcase c;
        lkcase_make(&c, &d, 500 + (uint64_t)which);
        const int64_t nst = c.rows_q * d.N1m, nw = c.rows_q * d.N1;
        if (which == 0)
            for (int64_t i = 0; i < nst; i++) {
                th_store(c.buf[KA_SMAX], LIG_FLOAT32, i, c.smax[i] + 30.0);
                c.smax[i] = th_load(c.buf[KA_SMAX], LIG_FLOAT32, i);
            }
        else
            for (int64_t i = 0; i < nw; i++) { /* grid values: exact in every dtype */
                th_store(c.buf[KA_W], d.dtype, i, 16.0 * c.w[i]);
                c.w[i] = th_load(c.buf[KA_W], d.dtype, i);
            }
        const double cann = ref_loss_as(&c, LIG_KL_TARGET_CANN), plain = ref_loss_as(&c, LIG_KL_TARGET_HEAD_MEAN);
        th_note("%s: CANN's loss %.6g, unclamped %.6g", which ? "y below 1e-8" : "p below 1e-8", cann, plain);
        CHECK(fabs(cann - plain) > 0.05 * fabs(cann), "case %d: the clamp must matter: %.9g vs %.9g", which, cann,
              plain);
        run_and_compare(&c, which ? "CANN, y clamped" : "CANN, p clamped");
        lkcase_free(&c);
    }
    /* dense statistics: CANN's gradients are not lig's head_mean gradients */
    lkcase_desc d = base_desc();
    double *out[2][3], loss[2];
    int64_t nq = 0;
    for (int t = 0; t < 2; t++) {
        d.target = t ? LIG_KL_TARGET_CANN : LIG_KL_TARGET_HEAD_MEAN;
        lkcase c;
        lkcase_make(&c, &d, 77);
        REQUIRE(lkcase_call(&c) == LIG_SUCCESS, "call: %s", lig_get_last_error());
        lkcase_outputs(&c, &out[t][0], &out[t][1], &out[t][2], &loss[t]);
        nq = c.rows_q * d.N1 * d.D;
        lkcase_free(&c);
    }
    double diff = 0.0;
    for (int64_t i = 0; i < nq; i++) diff = fmax(diff, fabs(out[0][0][i] - out[1][0][i]));
    CHECK(diff > 1e-3 * lkcase_maxabs(out[0][0], nq), "dense statistics: d_query_index must differ, max diff %.3g", diff);
    for (int t = 0; t < 2; t++)
        for (int a = 0; a < 3; a++) free(out[t][a]);
}

/* ---- error cases ---------------------------------------------------------------------- */

typedef struct kl_err_case {
    const char *name;
    void (*edit)(lkcase *c);
    int phase;
    lig_status want;
    const char *names;
} kl_err_case;

static lig_tensor *retype(const lig_tensor *like_data, lkcase *c, int a, lig_dtype dt, int ndim, const int64_t *shape) {
    (void)like_data;
    lig_tensor *t = lig_create_tensor(c->buf[a], dt, ndim, shape, NULL);
    lig_destroy_tensor(c->t[a]);
    c->t[a] = t;
    return t;
}
static void e_null_query(lkcase *c) { lig_destroy_tensor(c->t[KA_Q]); c->t[KA_Q] = NULL; }
static void e_null_loss(lkcase *c) { lig_destroy_tensor(c->t[KA_LOSS]); c->t[KA_LOSS] = NULL; }
static void e_null_sum(lkcase *c) { lig_destroy_tensor(c->t[KA_SSUM]); c->t[KA_SSUM] = NULL; }
static void e_lse_and_max(lkcase *c) { /* softmax_lse next to softmax_max */
    const int64_t s[4] = {c->d.B, 1, c->d.S1, c->d.N1m};
    c->t[KA_LSE] = lig_create_tensor(c->buf[KA_SSUM], LIG_FLOAT32, 4, s, NULL);
}
static void e_half_rope(lkcase *c) { lig_destroy_tensor(c->t[KA_KR]); c->t[KA_KR] = NULL; }
static void e_key_two_heads(lkcase *c) {
    const int64_t s[4] = {c->d.B, c->d.S2 / 3, 2, c->d.Dm}; /* fewer rows: the data stays inside the buffer */
    retype(NULL, c, KA_K, c->d.dtype, 4, s);
}
static void e_key_rows(lkcase *c) {
    const int64_t s[4] = {c->d.B, c->d.S2 - 1, 1, c->d.Dm};
    retype(NULL, c, KA_K, c->d.dtype, 4, s);
}
static void e_query_dtype(lkcase *c) {
    const int64_t s[4] = {c->d.B, c->d.S1, c->d.N1m, c->d.Dm};
    retype(NULL, c, KA_Q, LIG_FLOAT16, 4, s);
}
/* The indexer's own tensors are named query_index / key_index (query and key are the main attention's). */
static void e_key_index_dims(lkcase *c) {
    const int64_t s[4] = {c->d.B, c->d.S2, c->d.N2, c->d.D / 2};
    retype(NULL, c, KA_KI, c->d.dtype, 4, s);
}
static void e_query_index_rank(lkcase *c) {
    const int64_t s[3] = {c->d.B * c->d.S1, c->d.N1, c->d.D};
    retype(NULL, c, KA_QI, c->d.dtype, 3, s);
}
static void e_rope_dims(lkcase *c) {
    const int64_t s[4] = {c->d.B, c->d.S1, c->d.N1m / 2, c->d.Dr};
    retype(NULL, c, KA_QR, c->d.dtype, 4, s);
}
static void e_stat_shape(lkcase *c) {
    const int64_t s[3] = {c->d.B, c->d.S1, c->d.N1m};
    retype(NULL, c, KA_SMAX, LIG_FLOAT32, 3, s);
}
static void e_stat_dtype(lkcase *c) {
    const int64_t s[4] = {c->d.B, 1, c->d.S1, c->d.N1m};
    retype(NULL, c, KA_SSUM, LIG_FLOAT16, 4, s);
}
static void e_loss_dtype(lkcase *c) {
    const int64_t s[1] = {1};
    lig_tensor *t = lig_create_tensor(c->buf[KA_LOSS], LIG_FLOAT16, 1, s, NULL);
    lig_destroy_tensor(c->t[KA_LOSS]);
    c->t[KA_LOSS] = t;
}
static void e_loss_shape(lkcase *c) {
    const int64_t s[1] = {2};
    lig_tensor *t = lig_create_tensor(c->buf[KA_DW], LIG_FLOAT32, 1, s, NULL);
    lig_destroy_tensor(c->t[KA_LOSS]);
    c->t[KA_LOSS] = t;
}
static void e_dw_dtype(lkcase *c) {
    const int64_t s[3] = {c->d.B, c->d.S1, c->d.N1};
    retype(NULL, c, KA_DW, LIG_BFLOAT16, 3, s);
}
static void e_target(lkcase *c) { c->target = (lig_kl_target)7; }
static void e_scale(lkcase *c) { c->scale = INFINITY; }
static void e_scale_fp32(lkcase *c) { c->scale = 1e300; }
static void e_mode(lkcase *c) { c->sparse_mode = 1; }
static void e_layout(lkcase *c) { c->layout = "SBH"; }
static void e_null_layout(lkcase *c) { c->layout = NULL; }
static void e_overlap(lkcase *c) { /* loss inside d_weights */
    const int64_t s[1] = {1};
    lig_tensor *t = lig_create_tensor(c->buf[KA_DW], LIG_FLOAT32, 1, s, NULL);
    lig_destroy_tensor(c->t[KA_LOSS]);
    c->t[KA_LOSS] = t;
}
static void e_bad_index(lkcase *c) { /* a key past the batch's length in a valid row: phase 2 */
    th_store_int(c->buf[KA_IDX], c->d.index_dtype, 0, c->d.S2);
}
static void e_index_minus_two(lkcase *c) { th_store_int(c->buf[KA_IDX], c->d.index_dtype, 3, -2); }

static const kl_err_case err_cases[] = {
    {"query NULL", e_null_query, 1, LIG_ERR_PARAM_NULLPTR, "query"},
    {"loss NULL", e_null_loss, 1, LIG_ERR_PARAM_NULLPTR, "loss"},
    {"softmax_sum NULL without lse", e_null_sum, 1, LIG_ERR_PARAM_NULLPTR, "softmax_sum"},
    {"lse next to max/sum", e_lse_and_max, 1, LIG_ERR_PARAM_INVALID, "softmax_max"},
    {"query_rope without key_rope", e_half_rope, 1, LIG_ERR_PARAM_NULLPTR, "key_rope"},
    {"key with two heads", e_key_two_heads, 1, LIG_ERR_PARAM_INVALID, "key"},
    {"key rows unlike key_index", e_key_rows, 1, LIG_ERR_PARAM_INVALID, "key"},
    {"query dtype unlike query_index", e_query_dtype, 1, LIG_ERR_PARAM_INVALID, "query"},
    {"key_index D unlike query_index", e_key_index_dims, 1, LIG_ERR_PARAM_INVALID, "key_index"},
    {"query_index rank", e_query_index_rank, 1, LIG_ERR_PARAM_INVALID, "query_index"},
    {"query_rope heads", e_rope_dims, 1, LIG_ERR_PARAM_INVALID, "query_rope"},
    {"softmax_max shape", e_stat_shape, 1, LIG_ERR_PARAM_INVALID, "softmax_max"},
    {"softmax_sum dtype", e_stat_dtype, 1, LIG_ERR_PARAM_INVALID, "softmax_sum"},
    {"loss dtype", e_loss_dtype, 1, LIG_ERR_PARAM_INVALID, "loss"},
    {"loss two elements", e_loss_shape, 1, LIG_ERR_PARAM_INVALID, "loss"},
    {"d_weights dtype", e_dw_dtype, 1, LIG_ERR_PARAM_INVALID, "d_weights"},
    {"target", e_target, 1, LIG_ERR_PARAM_INVALID, "target"},
    {"scale infinite", e_scale, 1, LIG_ERR_PARAM_INVALID, "scale"},
    {"scale past fp32", e_scale_fp32, 1, LIG_ERR_PARAM_INVALID, "scale"},
    {"sparse_mode 1", e_mode, 1, LIG_ERR_PARAM_INVALID, "sparse_mode"},
    {"layout", e_layout, 1, LIG_ERR_PARAM_INVALID, "layout"},
    {"layout NULL", e_null_layout, 1, LIG_ERR_PARAM_NULLPTR, "layout"},
    {"loss overlaps d_weights", e_overlap, 1, LIG_ERR_PARAM_INVALID, "loss|d_weights"},
    {"index past the keys", e_bad_index, 2, LIG_ERR_PARAM_INVALID, "sparse_indices"},
    {"index -2", e_index_minus_two, 2, LIG_ERR_PARAM_INVALID, "sparse_indices"},
};

LIG_TEST(kl_loss_errors) {
    int n = 0;
    for (size_t i = 0; i < sizeof err_cases / sizeof err_cases[0]; i++) {
        const kl_err_case *e = &err_cases[i];
        lkcase_desc d = base_desc();
        d.lengths = false;
        d.sparse_stats = false;
        lkcase c;
        lkcase_make(&c, &d, 31);
        e->edit(&c);
        lkcase_expect_failure(&c, e->phase, e->want, e->names, e->name);
        lkcase_free(&c);
        n++;
    }
    /* a workspace one byte short, and a NULL workspace */
    lkcase_desc d = base_desc();
    lkcase c;
    lkcase_make(&c, &d, 32);
    for (int mode = 0; mode < 2; mode++) {
        uint64_t ws_size = 0;
        lig_executor *ex = NULL;
        REQUIRE(lkcase_phase1(&c, &ws_size, &ex) == LIG_SUCCESS, "phase 1: %s", lig_get_last_error());
        REQUIRE(ws_size > 0, "a workspace");
        void *ws = malloc(ws_size);
        const lig_status st = lig_sparse_indexer_grad_kl_loss(mode ? NULL : ws, mode ? ws_size : ws_size - 1, ex, NULL);
        CHECK(st == (mode ? LIG_ERR_PARAM_NULLPTR : LIG_ERR_PARAM_INVALID), "workspace mode %d: status %d", mode,
              (int)st);
        free(ws);
        n++;
    }
    lkcase_free(&c);
    th_note("%d error cases", n);
}

/* A problem without index dims still has a loss (I = 0: y uniform) and zero gradients. */
LIG_TEST(kl_loss_empty_index_dims) {
    lkcase_desc d = base_desc();
    d.D = 0;
    lkcase c;
    lkcase_make(&c, &d, 41);
    run_and_compare(&c, "D = 0");
    lkcase_free(&c);
    d = base_desc();
    d.K = 0;
    lkcase_make(&c, &d, 42);
    uint64_t ws = 1;
    lig_executor *ex = NULL;
    REQUIRE(lkcase_phase1(&c, &ws, &ex) == LIG_SUCCESS, "K = 0: %s", lig_get_last_error());
    CHECK(ws == 0, "K = 0: no workspace, got %llu", (unsigned long long)ws);
    REQUIRE(lig_sparse_indexer_grad_kl_loss(NULL, 0, ex, NULL) == LIG_SUCCESS, "K = 0: %s", lig_get_last_error());
    float loss;
    memcpy(&loss, c.buf[KA_LOSS], 4);
    CHECK(loss == 0.0f, "K = 0: loss %g", loss);
    lkcase_free(&c);
}

/* dI reaches the products in fp32, never rounded to bf16: with two counted slots dQ_h is
 * w_h dI_1 (k_1 - k_2), one product, so the bf16 output is the reference rounded once, except
 * where the fp32 teacher's error (about 1e-5 of dI) crosses a rounding boundary. A dI rounded to
 * bf16 (2^-9) would miss the rounded reference in about half the elements. */
LIG_TEST(kl_loss_bf16_di_not_rounded) {
    lkcase_desc d = base_desc();
    d.dtype = LIG_BFLOAT16;
    d.K = 2;
    d.N1 = 32; /* the bf16 engine on the sets that have one */
    d.S1 = 16;
    d.S2 = 16;
    d.B = 2;
    lkcase c;
    lkcase_make(&c, &d, 55);
    REQUIRE(lkcase_call(&c) == LIG_SUCCESS, "call: %s", lig_get_last_error());
    const int64_t nq = c.rows_q * d.N1 * d.D, ni = c.rows_q * d.N2 * d.K;
    const ref_kl_loss_case rc = lkcase_ref(&c);
    double *dI = calloc((size_t)ni + 1, 8);
    ref_kl_loss(&rc, dI, NULL);
    ref_grads g = {.dq = calloc((size_t)nq + 1, 8), .dk = calloc((size_t)(c.rows_k * d.N2 * d.D) + 1, 8),
                   .dw = calloc((size_t)(c.rows_q * d.N1) + 1, 8)};
    ref_backward(&c.p, c.qi, c.ki, c.w, c.idx, dI, &g);
    int64_t nonzero = 0, exact = 0;
    for (int64_t i = 0; i < nq; i++) {
        if (g.dq[i] == 0.0) continue;
        nonzero++;
        exact += th_load(c.buf[KA_DQ], LIG_BFLOAT16, i) == (double)lig_bfloat16_to_float(lig_float_to_bfloat16((float)g.dq[i]));
    }
    th_note("%lld of %lld non-zero dQ elements are the reference rounded once", (long long)exact, (long long)nonzero);
    CHECK(nonzero > 100, "enough elements: %lld", (long long)nonzero);
    CHECK(exact >= nonzero * 95 / 100, "dQ rounded once: %lld of %lld", (long long)exact, (long long)nonzero);
    free(dI); free(g.dq); free(g.dk); free(g.dw);
    lkcase_free(&c);
}

/* CUDA tensors: a build with the CUDA backend refuses the operator by name in phase 1 (it has no
 * CUDA form yet); a build without refuses the device. Phase 1 reads no tensor data, so host memory
 * described as CUDA memory is enough. */
LIG_TEST(devices_kl_loss_refused_on_cuda) {
    lkcase_desc d = base_desc();
    lkcase c;
    lkcase_make(&c, &d, 61);
    for (int a = 0; a < KA_COUNT; a++) {
        if (!c.t[a] || a == KA_AQ || a == KA_AK) continue; /* sequence lengths stay on the host */
        const lig_tensor *t = c.t[a];
        lig_tensor *on = lig_create_tensor_on(c.buf[a], t->dtype, t->ndim, t->shape, NULL, LIG_DEVICE_CUDA, 0);
        lig_destroy_tensor(c.t[a]);
        c.t[a] = on;
    }
    uint64_t ws = 0;
    lig_executor *ex = NULL;
    const lig_status st = lkcase_phase1(&c, &ws, &ex);
    errtest_refused_on_cuda("lig_sparse_indexer_grad_kl_loss", st, ex);
    lkcase_free(&c);
}

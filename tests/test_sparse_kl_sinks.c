/* lig_sparse_indexer_grad_kl_loss_v2_get_workspace_size: the KL loss with attention sinks in the
 * main attention's softmax (docs/contract.md 2.5, "Sinks"). The loss against a float64 definition
 * written here (the teacher's softmax over every visible key and the sink, recomputed from the
 * main query and key, not from the statistics), the reference's dI with sinks against central
 * finite differences of that definition, the operator against the reference on a matrix of
 * layouts, dtypes, targets and statistics, the bitwise claims (sinks = -inf and sinks = NULL are
 * the V1 operator; the L1 target ignores sinks; thread counts and ring capacities), and the sinks'
 * error cases (nothing written on failure). The suite runs once per kernel set (LIG_ISA). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error_cases.h"
#include "framework.h"
#include "kl_loss_case.h"
#include "kl_loss_checks.h"
#include "lig.h"
#include "reference/indexer_fwd_ref.h"
#include "reference/indexer_ref.h"
#include "tensor_buffers.h"
#include "testing/lig_testing.h"

static lkcase_desc sinks_desc(void) {
    lkcase_desc d = lkcase_base_desc();
    d.name = "sinks";
    d.sinks = true;
    return d;
}


/* The loss by definition: per row and main head, the softmax over the row's visible keys and the
 * head's sink; the target at a counted slot is the heads' summed probability of its key over the
 * heads' summed probability of all visible keys (the sinks' mass removed, as CANN's kernel does);
 * y the softmax of the index scores over the counted slots; sum_j p (log p - log y). `cann`: every
 * term with p and y clamped below at 1e-8f, as CANN's kernel. Dense statistics only (the case's
 * statistics then describe this softmax). */
static double definition_loss(const lkcase *c, int cann) {
    const lkcase_desc *d = &c->d;
    const ref_problem *p = &c->p;
    const int64_t K = d->K;
    double total = 0.0;
    double *prob = malloc(sizeof(double) * (size_t)(d->N1m * (d->S2 + 1) + 1));
    double *score = malloc(sizeof(double) * (size_t)(K + 1));
    for (int64_t row = 0; row < c->rows_q; row++) {
        ref_row info;
        ref_row_info(p, row, &info);
        if (!info.valid) continue;
        int64_t lo = 0, hi = -1;
        ref_visible_range(p, &info, &lo, &hi);
        double keys_mass = 0.0; /* sum over heads and visible keys */
        for (int64_t h = 0; h < d->N1m; h++) {
            double m = c->sinks[h], z = 0.0;
            for (int64_t s = lo; s <= hi; s++) m = fmax(m, lkcase_main_score(c, row, info.key_base + s, h));
            for (int64_t s = lo; s <= hi; s++) z += exp(lkcase_main_score(c, row, info.key_base + s, h) - m);
            z += exp(c->sinks[h] - m);
            for (int64_t s = lo; s <= hi; s++) {
                const double ph = exp(lkcase_main_score(c, row, info.key_base + s, h) - m) / z;
                prob[h * (d->S2 + 1) + (s - lo)] = ph;
                keys_mass += ph;
            }
        }
        for (int64_t g = 0; g < d->N2; g++) {
            const int64_t *ix = c->idx + (row * d->N2 + g) * K;
            double vmax = -INFINITY, zy = 0.0;
            for (int64_t j = 0; j < K; j++) {
                if (ref_classify(p, &info, ix[j]) != REF_SLOT_COUNTED) continue;
                score[j] = ref_fwd_score(p, c->qi, c->ki, c->w, row, &info, g, ix[j], NULL);
                vmax = fmax(vmax, score[j]);
            }
            for (int64_t j = 0; j < K; j++)
                if (ref_classify(p, &info, ix[j]) == REF_SLOT_COUNTED) zy += exp(score[j] - vmax);
            for (int64_t j = 0; j < K; j++) {
                if (ref_classify(p, &info, ix[j]) != REF_SLOT_COUNTED) continue;
                double pj = 0.0;
                for (int64_t h = 0; h < d->N1m; h++) pj += prob[h * (d->S2 + 1) + (ix[j] - lo)];
                pj /= keys_mass;
                const double y = exp(score[j] - vmax) / zy;
                if (cann) {
                    const double eps = (double)1e-8f, pc = fmax(pj, eps), yc = fmax(y, eps);
                    total += pc * (log(pc) - log(yc));
                } else if (pj > 0.0) {
                    total += pj * (log(pj) - log(y));
                }
            }
        }
    }
    free(prob);
    free(score);
    return total;
}

static double head_mean_definition(const lkcase *c, void *ctx) {
    (void)ctx;
    return definition_loss(c, 0);
}

/* The definition against the reference and the operator's loss; the reference's gradients (dI
 * with sinks through the reference backward) against central differences of the definition (not
 * for CANN's target, whose dI is not its loss's derivative). */
LIG_TEST(kl_sinks_definition_and_finite_differences) {
    for (int variant = 0; variant < 3; variant++) {
        lkcase_desc d = sinks_desc();
        d.K = 5;
        d.S1 = 4;
        d.S2 = 6;
        d.target = variant == 2 ? LIG_KL_TARGET_CANN : LIG_KL_TARGET_HEAD_MEAN;
        d.lse = variant == 1;
        d.layout = variant == 1 ? REF_TND : REF_BSND;
        if (variant == 1) {
            d.S1 = 8;
            d.S2 = 12;
        }
        lkcase c;
        lkcase_make(&c, &d, 41 + (uint64_t)variant);
        const int cann = d.target == LIG_KL_TARGET_CANN;
        const ref_kl_loss_case rc = lkcase_ref(&c);
        const double def = definition_loss(&c, cann), ref = ref_kl_loss(&rc, NULL, NULL);
        /* the statistics are fp32 roundings of the definition's: relative 1e-6 */
        CHECK(fabs(def - ref) <= 1e-5 * fabs(def) + 1e-9, "variant %d: definition %.12g, reference %.12g", variant, def,
              ref);
        REQUIRE(lkcase_call(&c) == LIG_SUCCESS, "variant %d: %s", variant, lig_get_last_error());
        double *dq, *dk, *dw, loss;
        lkcase_outputs(&c, &dq, &dk, &dw, &loss);
        CHECK(fabs(loss - def) <= 1e-4 * fabs(def) + 1e-6, "variant %d: operator loss %.9g, definition %.9g", variant,
              loss, def);
        free(dq); free(dk); free(dw);
        lkcase_check_outputs(&c, cann ? "CANN with sinks" : "head mean with sinks");
        if (cann) { /* CANN's dI = y - p is not the derivative of its loss: no finite differences */
            lkcase_free(&c);
            continue;
        }

        lkcase_continuous_index_data(&c, 7 + (uint64_t)variant);
        const int64_t nq = c.rows_q * d.N1 * d.D, nk = c.rows_k * d.N2 * d.D, nw = c.rows_q * d.N1;
        const int64_t ni = c.rows_q * d.N2 * d.K;
        double *dI = calloc((size_t)ni + 1, 8);
        ref_kl_loss(&rc, dI, NULL);
        ref_grads g = {.dq = calloc((size_t)nq + 1, 8), .dk = calloc((size_t)nk + 1, 8), .dw = calloc((size_t)nw + 1, 8)};
        ref_backward(&c.p, c.qi, c.ki, c.w, c.idx, dI, &g);
        const double *const grads[3] = {g.dq, g.dk, g.dw};
        /* the definition's target is recomputed without fp32, the reference's comes from the fp32
         * statistics: their p differ by ~1e-7 relative, so dI does too (hence 1e-4) */
        int nonzero = 0;
        const int checked = lkcase_check_finite_differences(&c, head_mean_definition, NULL, grads, 1e-4,
                                                            "head mean with sinks", &nonzero);
        CHECK(nonzero > checked / 4, "variant %d: the derivatives must not vanish (%d of %d)", variant, nonzero, checked);
        th_note("variant %d: %d derivatives checked (%d non-zero), loss %.6g", variant, checked, nonzero, def);
        free(dI); free(g.dq); free(g.dk); free(g.dw);
        lkcase_free(&c);
    }
}

/* The sinks change the head-mean targets: against the same case without them, the loss must move. */
LIG_TEST(kl_sinks_change_the_target) {
    lkcase_desc d = sinks_desc();
    lkcase c;
    lkcase_make(&c, &d, 12);
    ref_kl_loss_case rc = lkcase_ref(&c);
    const double with = ref_kl_loss(&rc, NULL, NULL);
    rc.sinks = NULL;
    const double without = ref_kl_loss(&rc, NULL, NULL);
    CHECK(fabs(with - without) > 0.01 * fabs(with), "the sinks must matter: %.9g vs %.9g", with, without);
    lkcase_free(&c);
}

/* Layouts, key heads, dtypes, targets, lse or max/sum, dense or sparse statistics, rope, lengths. */
LIG_TEST(kl_sinks_matrix) {
    static const lig_dtype dtypes[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    int n = 0;
    for (int layout = 0; layout < 2; layout++)
        for (int dt = 0; dt < 3; dt++)
            for (int variant = 0; variant < 4; variant++) {
                lkcase_desc d = sinks_desc();
                d.layout = layout ? REF_TND : REF_BSND;
                if (layout) {
                    d.S1 = 14;
                    d.S2 = 20;
                }
                d.dtype = dtypes[dt];
                d.target = variant == 3 ? LIG_KL_TARGET_L1 : variant == 2 ? LIG_KL_TARGET_CANN : LIG_KL_TARGET_HEAD_MEAN;
                d.N2 = variant == 1 ? 2 : 1;
                d.N1 = 4 * d.N2;
                d.lse = variant & 1;
                d.sparse_stats = variant == 2;
                d.Dr = variant == 1 ? 0 : 8;
                d.lengths = variant == 3;
                d.index_dtype = variant == 2 ? LIG_INT32 : LIG_INT64;
                d.dw_dtype = variant == 0 ? d.dtype : LIG_FLOAT32;
                if (dt == 2 && variant == 0) { /* wide groups: the bf16 engines on the sets that have them */
                    d.N1 = 32;
                    d.N1m = 32;
                    d.Dm = 64;
                }
                lkcase c;
                lkcase_make(&c, &d, 700 + (uint64_t)n);
                char label[128];
                snprintf(label, sizeof label, "sinks %s %s variant %d", layout ? "TND" : "BSND",
                         dt == 0 ? "fp32" : dt == 1 ? "fp16" : "bf16", variant);
                const lig_status st = lkcase_call(&c);
                if (CHECK(st == LIG_SUCCESS, "%s: status %d (%s)", label, (int)st, lig_get_last_error()))
                    lkcase_check_outputs(&c, label);
                lkcase_free(&c);
                n++;
            }
    th_note("%d cases", n);
}

/* Sets every sink of the case to v (the statistics stay as they were made). */
static void set_sinks(lkcase *c, double v) {
    for (int64_t h = 0; h < c->d.N1m; h++) {
        th_store(c->buf[KA_SINKS], LIG_FLOAT32, h, v);
        c->sinks[h] = v;
    }
}

/* The V1 operator bit for bit: sinks all -inf (every target), sinks NULL through V2, and any sinks
 * with the L1 target (where they cancel). */
LIG_TEST(kl_sinks_bitwise_v1) {
    int n = 0;
    for (int target = 0; target < 3; target++)
        for (int variant = 0; variant < 3; variant++) {
            lkcase_desc d = sinks_desc();
            d.target = (lig_kl_target)target;
            d.lse = variant == 1;
            if (variant == 2) { /* bf16, wide: the bf16 engines where the set has them */
                d.dtype = LIG_BFLOAT16;
                d.N1 = 32;
                d.N1m = 32;
                d.Dm = 64;
            }
            lkcase v1;
            lkcase_desc d1 = d;
            d1.sinks = false;
            lkcase_make(&v1, &d1, 90 + (uint64_t)n); /* the same draws: the sinks come after the data */
            REQUIRE(lkcase_call(&v1) == LIG_SUCCESS, "V1: %s", lig_get_last_error());
            lkcase c;
            lkcase_make(&c, &d, 90 + (uint64_t)n);
            /* the V1 case's statistics, so that only the sinks differ */
            const uint64_t stat_bytes = (uint64_t)(c.rows_q * d.N1m * 4);
            for (int a = KA_SMAX; a <= KA_LSE; a++)
                if (c.buf[a]) memcpy(c.buf[a], v1.buf[a], stat_bytes);
            set_sinks(&c, -INFINITY);
            REQUIRE(lkcase_call(&c) == LIG_SUCCESS, "V2, -inf: %s", lig_get_last_error());
            CHECK(lkcase_outputs_equal(&v1, &c), "target %d variant %d: sinks -inf differ from V1", target, variant);
            if (target == LIG_KL_TARGET_L1) {
                set_sinks(&c, 1.5);
                REQUIRE(lkcase_call(&c) == LIG_SUCCESS, "V2, L1: %s", lig_get_last_error());
                CHECK(lkcase_outputs_equal(&v1, &c), "variant %d: the L1 target must ignore the sinks", variant);
            }
            lkcase n2;
            lkcase_desc dn = d1;
            dn.v2 = true;
            lkcase_make(&n2, &dn, 90 + (uint64_t)n);
            REQUIRE(lkcase_call(&n2) == LIG_SUCCESS, "V2, NULL: %s", lig_get_last_error());
            CHECK(lkcase_outputs_equal(&v1, &n2), "target %d variant %d: V2 without sinks differs from V1", target, variant);
            lkcase_free(&n2);
            lkcase_free(&c);
            lkcase_free(&v1);
            n++;
        }
    th_note("%d cases", n);
}

/* deterministic = true: bitwise across runs, thread counts 1-3 and ring capacities. */
LIG_TEST(kl_sinks_determinism_threads) {
    for (int dt = 0; dt < 2; dt++) {
        lkcase_desc d = lkcase_threads_desc(dt ? LIG_BFLOAT16 : LIG_FLOAT32);
        d.sinks = true;
        lkcase first;
        lkcase_make(&first, &d, 19);
        lig_set_num_threads(1);
        REQUIRE(lkcase_call(&first) == LIG_SUCCESS, "call: %s", lig_get_last_error());
        lkcase_check_outputs(&first, dt ? "bf16, 1 thread" : "fp32, 1 thread");
        lkcase_check_thread_invariance(&d, 19, &first, dt ? "bf16 with sinks" : "fp32 with sinks");
        lkcase_free(&first);
    }
}

/* ---- error cases: the sinks tensor ------------------------------------------------------ */

static void replace_sinks(lkcase *c, void *data, lig_dtype dt, int ndim, const int64_t *shape) {
    lig_destroy_tensor(c->t[KA_SINKS]);
    c->t[KA_SINKS] = lig_create_tensor(data, dt, ndim, shape, NULL);
}
static void e_sinks_fp16(lkcase *c) {
    const int64_t s[1] = {c->d.N1m};
    replace_sinks(c, c->buf[KA_SINKS], LIG_FLOAT16, 1, s);
}
static void e_sinks_int32(lkcase *c) {
    const int64_t s[1] = {c->d.N1m};
    replace_sinks(c, c->buf[KA_SINKS], LIG_INT32, 1, s);
}
static void e_sinks_long(lkcase *c) { /* one per index head instead of per main head */
    const int64_t s[1] = {c->d.N1};
    replace_sinks(c, c->buf[KA_SINKS], LIG_FLOAT32, 1, s);
}
static void e_sinks_rank2(lkcase *c) {
    const int64_t s[2] = {1, c->d.N1m};
    replace_sinks(c, c->buf[KA_SINKS], LIG_FLOAT32, 2, s);
}
static void e_sinks_in_output(lkcase *c) { /* the sinks read from d_weights' memory */
    const int64_t s[1] = {c->d.N1m};
    replace_sinks(c, c->buf[KA_DW], LIG_FLOAT32, 1, s);
}

typedef struct sink_err_case {
    const char *name;
    void (*edit)(lkcase *c);
    lig_status want;
    const char *names;
} sink_err_case;

LIG_TEST(kl_sinks_errors) {
    static const sink_err_case cases[] = {
        {"sinks FLOAT16", e_sinks_fp16, LIG_ERR_PARAM_INVALID, "sinks"},
        {"sinks INT32", e_sinks_int32, LIG_ERR_PARAM_INVALID, "sinks"},
        {"sinks per index head", e_sinks_long, LIG_ERR_PARAM_INVALID, "sinks"},
        {"sinks [1,N1]", e_sinks_rank2, LIG_ERR_PARAM_INVALID, "sinks"},
        {"sinks inside d_weights", e_sinks_in_output, LIG_ERR_PARAM_INVALID, "sinks|d_weights"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const sink_err_case *e = &cases[i];
        lkcase_desc d = sinks_desc();
        d.N1m = 12; /* unlike N1 = 4 */
        d.dw_dtype = LIG_FLOAT32;
        lkcase c;
        lkcase_make(&c, &d, 51);
        e->edit(&c);
        lkcase_expect_failure(&c, 1, e->want, e->names, e->name);
        lkcase_free(&c);
    }
}

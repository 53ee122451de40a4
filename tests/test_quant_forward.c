/* The quantized forward (lig_quant_indexer_get_workspace_size / lig_quant_indexer, contract 2.4)
 * against the float64 reference (reference/indexer_quant_ref.h), on every kernel set the suite
 * runs: random shapes over both code dtypes, the three key layouts, with and without query
 * scales, every scale, weight, index and value dtype, both sparse modes and bands, K past the
 * visible keys, degenerate extents, INT8 dot products past 2^24, NaN codes, bitwise equality
 * across thread counts, INT8 across kernel sets, FP8 per set. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error_bounds.h"
#include "float_formats.h"
#include "framework.h"
#include "lig.h"
#include "problem_case.h"
#include "quant_case.h"
#include "rng.h"

static const lig_dtype qk_dtypes[2] = {LIG_FLOAT8_E4M3FN, LIG_INT8};
static const lig_dtype float_dtypes[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
static const lig_dtype scale_dtypes[2] = {LIG_FLOAT32, LIG_FLOAT16};
static const int64_t Ds[5] = {1, 7, 64, 128, 129};
static const int64_t Gs[6] = {1, 2, 3, 8, 16, 64};

/* Case v of the matrix cell (qk, key layout, sq, mode): the secondary choices cycle with v. */
static void matrix_spec(th_rng *r, qspec *s, int qk, int kl, int has_sq, int mode, int v)
{
    qspec_default(s);
    s->qk = qk_dtypes[qk];
    s->layout = kl == 1 ? REF_TND : (kl == 2 && (v & 1)) ? REF_TND : REF_BSND; /* paged under both query layouts */
    s->paged = kl == 2;
    s->has_sq = has_sq;
    s->sparse_mode = mode ? 3 : 0;
    s->D = Ds[(v + qk + kl) % 5];
    s->G = Gs[(v * 7 + mode + kl) % 6];
    s->N2 = 1 + (v + has_sq) % 3;
    if (s->G * s->N2 > 64) {
        s->N2 = 1; /* at most 64 query heads: keeps the cases small */
    }
    s->B = 1 + th_rng_range(r, 0, 2);
    s->S1 = 1 + th_rng_range(r, 0, 9);
    s->S2 = 1 + th_rng_range(r, 0, 40);
    s->K = 1 + th_rng_range(r, 0, 12);
    if (v % 4 == 3) {
        s->K = s->S2 + 5; /* more slots than keys: padding */
    }
    s->w_dtype = float_dtypes[(v + mode) % 3];
    s->sq_dtype = scale_dtypes[v % 2];
    s->sk_dtype = scale_dtypes[(v / 2) % 2];
    s->idx_dtype = (v + kl) % 2 ? LIG_INT64 : LIG_INT32;
    s->with_values = v % 5 != 4;
    s->val_dtype = float_dtypes[(v / 3) % 3];
    s->lengths = v % 3 != 0;
    s->pad = v % 4 == 1;
    s->short_form = v % 2;
    s->block_size = 1 + (v % 4) * 3;
    s->p_dup_key = 0.15;
    if (mode == 0 && v % 3 == 1) { /* a band around the diagonal */
        s->pre_tokens = th_rng_range(r, 0, 6);
        s->next_tokens = th_rng_range(r, 0, 6);
    } else if (mode == 1 && v % 3 == 2) {
        s->pre_tokens = th_rng_range(r, 0, 8);
    }
}

/* The defaults, case v's code dtype (cycling) and query layout (BSND, BSND, TND, TND, ...), keys paged or not. */
static void cycle_spec(qspec *s, int v, int paged)
{
    qspec_default(s);
    s->qk = qk_dtypes[v % 2];
    s->layout = v & 2 ? REF_TND : REF_BSND;
    s->paged = paged;
}

/* Makes the case of spec s from a generator seeded with `seed`, runs and checks it. */
static void run_check_seeded(uint64_t seed, const qspec *s, const char *label)
{
    th_rng r = th_rng_make(seed);
    qcase c;
    qcase_make(&r, s, &c);
    qcase_run_check(&c, label);
    qcase_free(&c);
}

/* Logical [rows][N2][K] outputs for case c. */
static int64_t case_slots(const qcase *c, int64_t **idx, double **val)
{
    const int64_t slots = c->rows_q * c->p.N2 * c->p.K;
    *idx = malloc((size_t)slots * sizeof(int64_t));
    *val = malloc((size_t)slots * sizeof(double));
    return slots;
}

/* A case run again and again (thread counts, kernel sets) whose output bytes must stay the first run's. */
typedef struct same_bytes {
    qcase c;
    int64_t *idx;
    double *val;
    unsigned char *first; /* the first run's output bytes */
    size_t first_bytes;
} same_bytes;

static void same_bytes_make(uint64_t seed, const qspec *s, same_bytes *b)
{
    th_rng r = th_rng_make(seed);
    qcase_make(&r, s, &b->c);
    case_slots(&b->c, &b->idx, &b->val);
    b->first = NULL;
    b->first_bytes = 0;
}

static void same_bytes_free(same_bytes *b)
{
    free(b->first);
    free(b->idx);
    free(b->val);
    qcase_free(&b->c);
}

/* One run: the first is checked against the reference and kept; every later one must write its
 * bytes. `what` names this run, `first_what` the first. */
static void same_bytes_run(same_bytes *b, int threads, const char *label, int v, const char *what,
                           const char *first_what)
{
    unsigned char *raw = NULL;
    size_t bytes = 0;
    int inputs_ok;
    const lig_status st = qcase_run(&b->c, threads, b->idx, b->val, &inputs_ok, &raw, &bytes);
    CHECK(st == LIG_SUCCESS && inputs_ok, "%s: status %d", what, (int)st);
    if (b->first == NULL) {
        qcase_check(&b->c, b->idx, b->val, label);
        b->first = raw;
        b->first_bytes = bytes;
    } else {
        CHECK(bytes == b->first_bytes && memcmp(raw, b->first, bytes) == 0, "case %d: %s wrote other bytes than %s", v,
              what, first_what);
        free(raw);
    }
}

LIG_TEST(quant_fwd_matrix)
{
    qcheck_stats_reset();
    int cases = 0;
    for (int qk = 0; qk < 2; qk++)
        for (int kl = 0; kl < 3; kl++)
            for (int has_sq = 0; has_sq < 2; has_sq++)
                for (int mode = 0; mode < 2; mode++)
                    for (int v = 0; v < 6; v++) {
                        th_rng r = th_rng_make(0x18a0u + (uint64_t)(((qk * 3 + kl) * 2 + has_sq) * 2 + mode) * 100 +
                                               (uint64_t)v);
                        qspec s;
                        matrix_spec(&r, &s, qk, kl, has_sq, mode, v);
                        qcase c;
                        qcase_make(&r, &s, &c);
                        char label[64];
                        snprintf(label, sizeof label, "matrix case %d", cases);
                        qcase_run_check(&c, label);
                        qcase_free(&c);
                        cases++;
                    }
    qcheck_stats_note("quantized forward matrix");
    const qcheck_stats st = qcheck_stats_get();
    CHECK(st.exact_units * 2 > st.units, "expected most units compared exactly, got %" PRId64 " of %" PRId64,
          st.exact_units, st.units);
    CHECK(st.twins > 0 && st.padded > 0, "the matrix must meet exact ties between twin keys and padded slots");
}

LIG_TEST(quant_fwd_bands)
{
    static const int64_t bands[] = {0, 1, 2, 5, INT64_MAX - 1, INT64_MAX};
    qcheck_stats_reset();
    int v = 0;
    for (int mode = 0; mode < 2; mode++)
        for (size_t i = 0; i < 6; i++)
            for (size_t j = 0; j < 6; j++, v++) {
                if (mode == 1 && j > 0) {
                    continue; /* mode 3 ignores next_tokens */
                }
                qspec s;
                qspec_default(&s);
                qspec_dims(&s, 8, 12, 1 + v % 2, 3, 7, 1 + v % 7);
                s.qk = qk_dtypes[v % 2];
                s.layout = v % 3 == 0 ? REF_TND : REF_BSND;
                s.paged = v % 3 == 2;
                s.sparse_mode = mode ? 3 : 0;
                s.pre_tokens = bands[i];
                s.next_tokens = bands[j];
                s.lengths = 1;
                run_check_seeded(0xba0du + (uint64_t)v, &s, "band");
            }
    qcheck_stats_note("quantized forward bands");
}

/* Zero extents: no query heads, D = 0 (every visible score exactly 0: the first visible keys win),
 * no keys, no rows, and K far past everything. */
LIG_TEST(quant_fwd_degenerate)
{
    qcheck_stats_reset();
    for (int v = 0; v < 16; v++) {
        qspec s;
        cycle_spec(&s, v, (v & 4) != 0);
        s.lengths = 1;
        switch (v / 8 * 4 + v % 4) {
        case 0: s.D = 0; break;
        case 1: s.S2 = 0; s.paged = 0; break;
        case 2: s.S1 = 0; break;
        case 3: s.G = 1; s.D = 1; s.K = 1000; break;
        case 4: s.D = 0; s.K = 50; break;
        case 5: s.B = 1; s.S1 = 1; s.S2 = 1; break;
        case 6: s.S2 = 1; s.K = 3; break;
        default: s.block_size = 1; s.S2 = 20; break;
        }
        run_check_seeded(0xde9u + (uint64_t)v, &s, "degenerate");
    }
    qcheck_stats_note("quantized forward degenerate shapes");
}

/* INT8 dot products past 2^24: every code 127 (odd products: a plain fp32 sum past 2^24 drifts)
 * or -128, with scales and weights 1, so the value is the exact integer dot rounded once to fp32;
 * and random codes at D past the exact chunk, against the same rule. */
LIG_TEST(quant_fwd_int8_long_dot)
{
    static const int64_t Dlong[] = {1024, 1025, 1100, 2100, 3000};
    for (size_t i = 0; i < sizeof Dlong / sizeof Dlong[0]; i++) {
        for (int extreme = 2; extreme >= 0; extreme--) {
            th_rng r = th_rng_make(0x1e8u + i * 3 + (uint64_t)extreme);
            qspec s;
            qspec_default(&s);
            qspec_dims(&s, 2, 5, 1, 1, Dlong[i], 5);
            s.qk = LIG_INT8;
            s.int8_extreme = extreme;
            s.B = 1;
            s.has_sq = extreme ? (int)(i % 2) : 1;
            s.p_dup_key = 0;
            qcase c;
            qcase_make(&r, &s, &c);
            int64_t *idx;
            double *val;
            case_slots(&c, &idx, &val);
            int inputs_ok;
            const lig_status st = qcase_run(&c, 0, idx, val, &inputs_ok, NULL, NULL);
            if (CHECK(st == LIG_SUCCESS, "D = %" PRId64 ": status %d: %s", s.D, (int)st, lig_get_last_error())) {
                for (int64_t row = 0; row < c.rows_q; row++) {
                    ref_row info;
                    ref_row_info(&c.p, row, &info);
                    for (int64_t j = 0; j < c.p.K && info.valid; j++) {
                        const int64_t key = idx[row * c.p.K + j];
                        if (key < 0) {
                            continue;
                        }
                        /* the exact integer dot, then the documented fp32 steps */
                        int64_t dot = 0;
                        for (int64_t d = 0; d < s.D; d++) {
                            dot += (int64_t)(int8_t)c.qc[row * s.D + d] * (int8_t)c.kc[(info.key_base + key) * s.D + d];
                        }
                        float x = (float)dot * (float)c.sk[info.key_base + key];
                        if (s.has_sq) {
                            x = x * (float)c.sq[row];
                        }
                        const float want = x > 0.0f ? (float)c.w[row] * x : 0.0f;
                        CHECK(val[row * c.p.K + j] == (double)want, "D = %" PRId64 "%s: row %" PRId64 " key %" PRId64
                              ": value %.9g, expected %.9g (the exact dot %" PRId64 " rounded once)", s.D,
                              extreme == 1 ? " all -128" : extreme == 2 ? " all 127" : "", row, key, val[row * c.p.K + j], (double)want, dot);
                    }
                }
                CHECK(qcase_check(&c, idx, val, "long INT8 dot"), "D = %" PRId64 " against the reference", s.D);
            }
            CHECK(inputs_ok, "D = %" PRId64 ": inputs unchanged", s.D);
            free(idx);
            free(val);
            qcase_free(&c);
        }
    }
}

/* NaN codes among valid FP8 data: a head whose dot is NaN is gated shut (adds exactly 0, as the
 * reference's select does); scores stay finite and rank normally. */
LIG_TEST(quant_fwd_nan_codes)
{
    qcheck_stats_reset();
    for (int v = 0; v < 8; v++) {
        qspec s;
        qspec_default(&s);
        s.qk = LIG_FLOAT8_E4M3FN;
        s.p_nan_code = v < 4 ? 0.02 : 0.3;
        s.layout = v & 1 ? REF_TND : REF_BSND;
        s.paged = (v & 2) != 0;
        s.D = 7 + v;
        s.G = 1 + v % 4;
        s.S2 = 30;
        s.K = 6;
        run_check_seeded(0x7au + (uint64_t)v, &s, "NaN codes");
    }
    qcheck_stats_note("quantized forward with NaN codes");
}

/* The same bytes for 1, 2 and 3 threads (a long decode-like row set shares its key blocks). */
LIG_TEST(quant_fwd_determinism_threads)
{
    for (int v = 0; v < 4; v++) {
        const uint64_t seed = 0xde7u + (uint64_t)v;
        qspec s;
        cycle_spec(&s, v, v == 1);
        qspec_dims(&s, 24, 300, 2, 8, 64 + v, 40);
        s.B = 3;
        s.lengths = 1;
        same_bytes b;
        same_bytes_make(seed, &s, &b);
        static const int threads[] = {1, 2, 3, 1};
        for (int i = 0; i < 4; i++) {
            char what[32];
            snprintf(what, sizeof what, "%d threads", threads[i]);
            same_bytes_run(&b, threads[i], "determinism", v, what, "1 thread");
        }
        same_bytes_free(&b);
    }
}

/* The same problem as an unquantized forward on the decoded fp32 values selects the same keys when every scale and
 * weight is 1 and the INT8 dots are exact: the two forwards share one operator. */
LIG_TEST(quant_fwd_matches_float_forward)
{
    th_rng r = th_rng_make(0xf10au);
    qspec s;
    qspec_default(&s);
    qspec_dims(&s, 6, 25, 2, 2, 16, 7);
    s.qk = LIG_INT8;
    s.int8_extreme = 0;
    s.has_sq = 0;
    s.p_dup_key = 0.2;
    qcase c;
    qcase_make(&r, &s, &c);
    for (int64_t i = 0; i < c.rows_q * c.p.N1; i++) {
        c.w[i] = 1.0;
    }
    for (int64_t i = 0; i < c.rows_k * c.p.N2; i++) {
        c.sk[i] = isnan(c.sk[i]) ? c.sk[i] : 1.0;
    }
    const int64_t slots = c.rows_q * c.p.N2 * c.p.K;
    int64_t *qi = malloc((size_t)slots * sizeof(int64_t)), *fi = malloc((size_t)slots * sizeof(int64_t));
    double *qv = malloc((size_t)slots * sizeof(double));
    int inputs_ok;
    REQUIRE(qcase_run(&c, 0, qi, qv, &inputs_ok, NULL, NULL) == LIG_SUCCESS, "the quantized forward: %s",
            lig_get_last_error());
    /* the same numbers as FLOAT32 tensors through lig_indexer */
    const int64_t B = c.p.B, S1 = c.p.S1, S2 = c.p.S2, N1 = c.p.N1, N2 = c.p.N2, D = c.p.D, K = c.p.K;
    float *q = malloc((size_t)(B * S1 * N1 * D) * sizeof(float)), *k = malloc((size_t)(B * S2 * N2 * D) * sizeof(float));
    float *w = malloc((size_t)(B * S1 * N1) * sizeof(float)), *v = malloc((size_t)slots * sizeof(float));
    int32_t *ix = malloc((size_t)slots * sizeof(int32_t));
    for (int64_t i = 0; i < B * S1 * N1 * D; i++) q[i] = (float)(int8_t)c.qc[i];
    for (int64_t i = 0; i < B * S2 * N2 * D; i++) k[i] = (float)(int8_t)c.kc[i];
    for (int64_t i = 0; i < B * S1 * N1; i++) w[i] = 1.0f;
    const int64_t qs[4] = {B, S1, N1, D}, ks[4] = {B, S2, N2, D}, ws[3] = {B, S1, N1}, os[4] = {B, S1, N2, K};
    lig_tensor *tq = lig_create_tensor(q, LIG_FLOAT32, 4, qs, NULL), *tk = lig_create_tensor(k, LIG_FLOAT32, 4, ks, NULL);
    lig_tensor *tw = lig_create_tensor(w, LIG_FLOAT32, 3, ws, NULL), *ti = lig_create_tensor(ix, LIG_INT32, 4, os, NULL);
    lig_tensor *tv = lig_create_tensor(v, LIG_FLOAT32, 4, os, NULL);
    uint64_t wsz = 0;
    lig_executor *e = NULL;
    lig_status st = lig_indexer_get_workspace_size(tq, tk, tw, NULL, NULL, "BSND", K, c.p.sparse_mode, c.p.pre_tokens,
                                                   c.p.next_tokens, ti, tv, &wsz, &e);
    void *mem = wsz ? malloc((size_t)wsz) : NULL;
    if (st == LIG_SUCCESS) st = lig_indexer(mem, wsz, e, NULL);
    REQUIRE(st == LIG_SUCCESS, "the fp32 forward: %s", lig_get_last_error());
    int64_t diff = 0;
    for (int64_t i = 0; i < slots; i++) {
        diff += qi[i] != ix[i] || qv[i] != (double)v[i];
    }
    CHECK(diff == 0, "%" PRId64 " of %" PRId64 " slots differ between the INT8 and the fp32 forward", diff, slots);
    free(mem);
    lig_destroy_tensor(tq);
    lig_destroy_tensor(tk);
    lig_destroy_tensor(tw);
    lig_destroy_tensor(ti);
    lig_destroy_tensor(tv);
    free(q);
    free(k);
    free(w);
    free(v);
    free(ix);
    free(qi);
    free(fi);
    free(qv);
    qcase_free(&c);
}

/* Every kernel set this CPU has computes the same INT8 bytes: the int32 dot products are exact on
 * every set's int8 GEMM (and on the portable engine's chunked fp32 GEMM), and the conversion to
 * fp32, the scales and the head sum are one fixed fp32 order everywhere (contract 2.4). */
LIG_TEST(quant_fwd_same_on_every_set)
{
    char sets[256];
    snprintf(sets, sizeof sets, "%s", lig_kernel_sets());
    for (int v = 0; v < 4; v++) {
        const uint64_t seed = 0x5e75u + (uint64_t)v;
        qspec s;
        cycle_spec(&s, v, v == 3);
        s.qk = LIG_INT8;
        qspec_dims(&s, 9, 70 + 40 * v, 2, 5 + 59 * (v == 2), 33 + 32 * v, 9);
        s.val_dtype = LIG_FLOAT32;
        same_bytes b;
        same_bytes_make(seed, &s, &b);
        int n_sets = 0;
        char list[256];
        snprintf(list, sizeof list, "%s", sets);
        for (char *name = strtok(list, ","); name != NULL; name = strtok(NULL, ",")) {
            if (!CHECK(lig_set_kernel_set(name) == LIG_SUCCESS, "forcing %s, which lig_kernel_sets() lists: %s", name,
                       lig_get_last_error())) {
                continue;
            }
            char what[300];
            snprintf(what, sizeof what, "set %s", name);
            same_bytes_run(&b, 0, "every set", v, what, "the first set");
            n_sets++;
        }
        lig_set_kernel_set(NULL);
        if (v == 0) {
            th_note("%d kernel sets compared (%s)", n_sets, sets);
            if (n_sets < 2) {
                th_skip("the comparison across sets: this CPU supports one kernel set (%s)", sets);
            }
        }
        same_bytes_free(&b);
    }
}

/* FP8 on each kernel set this CPU has: a set's bf16 units add a pair's two products in their own
 * order, so FP8 bytes are reproducible per set, not across sets (contract 2.4). On each set the
 * result agrees with the float64 reference within the bound and is the same bytes for 1, 2 and 3
 * threads. */
LIG_TEST(quant_fwd_fp8_each_set)
{
    char sets[256], list[256];
    snprintf(sets, sizeof sets, "%s", lig_kernel_sets());
    snprintf(list, sizeof list, "%s", sets);
    for (char *name = strtok(list, ","); name != NULL; name = strtok(NULL, ",")) {
        if (!CHECK(lig_set_kernel_set(name) == LIG_SUCCESS, "forcing %s, which lig_kernel_sets() lists: %s", name,
                   lig_get_last_error())) {
            continue;
        }
        for (int v = 0; v < 3; v++) {
            qspec s;
            cycle_spec(&s, 2 * v, v == 2);
            qspec_dims(&s, 9, 150, 2, v == 1 ? 64 : 5, 33 + 48 * v, 9);
            s.has_sq = v != 1;
            s.val_dtype = LIG_FLOAT32;
            same_bytes b;
            same_bytes_make(0xf8e5u + (uint64_t)v, &s, &b);
            static const int threads[] = {1, 2, 3};
            for (int i = 0; i < 3; i++) {
                char what[300], label[300];
                snprintf(what, sizeof what, "set %s, %d threads", name, threads[i]);
                snprintf(label, sizeof label, "FP8 on set %s", name);
                same_bytes_run(&b, threads[i], label, v, what, "1 thread");
            }
            same_bytes_free(&b);
        }
    }
    lig_set_kernel_set(NULL);
}

/* Non-finite weights and scales on exact data (INT8 codes, scales 1, weights multiples of 1/4:
 * every fp32 step exact): a +-inf weight on a head whose x <= 0 adds nothing (the select), an
 * infinite key scale makes x +-inf (or NaN where the dot is 0, which the select drops), and a
 * NaN score ranks as -inf, ties to the lower key, with NaN written as its value. The selection
 * and the values must be the reference's exactly. */
LIG_TEST(quant_fwd_nonfinite_weights_and_scales)
{
    int64_t nan_scores = 0, inf_scores = 0;
    for (int v = 0; v < 6; v++) {
        th_rng r = th_rng_make(0x1f1u + (uint64_t)v);
        qspec s;
        qspec_default(&s);
        qspec_dims(&s, 6, 20, 1 + v % 2, 3, 8, 8 + v);
        s.qk = LIG_INT8;
        s.layout = v & 2 ? REF_TND : REF_BSND;
        s.paged = v >= 4;
        s.has_sq = v % 3 != 0;
        qcase c;
        qcase_make(&r, &s, &c);
        for (int64_t i = 0; i < c.rows_q * c.p.N1; i++) {
            if (!isnan(c.w[i])) { /* valid rows */
                c.w[i] = (double)th_rng_range(&r, -4, 4) / 4.0;
                c.sq[i] = 1.0;
                const int64_t pick = th_rng_range(&r, 0, 9);
                c.w[i] = pick == 0 ? NAN : pick == 1 ? INFINITY : pick == 2 ? -INFINITY : c.w[i];
            }
        }
        for (int64_t i = 0; i < c.rows_k * c.p.N2; i++) {
            if (!isnan(c.sk[i])) {
                c.sk[i] = th_rng_chance(&r, 0.1) ? INFINITY : 1.0;
            }
        }
        const int64_t slots = c.rows_q * c.p.N2 * c.p.K;
        int64_t *idx = malloc((size_t)slots * sizeof(int64_t)), *ridx = malloc((size_t)slots * sizeof(int64_t));
        double *val = malloc((size_t)slots * sizeof(double)), *rval = malloc((size_t)slots * sizeof(double));
        int inputs_ok;
        const lig_status st = qcase_run(&c, 0, idx, val, &inputs_ok, NULL, NULL);
        if (CHECK(st == LIG_SUCCESS && inputs_ok, "case %d: status %d: %s", v, (int)st, lig_get_last_error())) {
            const ref_quant_data x = {c.q, c.k, c.w, c.s.has_sq ? c.sq : NULL, c.sk};
            ref_quant_forward(&c.p, &x, ridx, rval);
            int64_t bad = 0;
            for (int64_t i = 0; i < slots; i++) {
                const int same_val = val[i] == rval[i] || (isnan(val[i]) && isnan(rval[i]));
                if ((idx[i] != ridx[i] || !same_val) && bad++ < 3) {
                    CHECK(0, "case %d slot %" PRId64 ": key %" PRId64 " value %g, reference key %" PRId64 " value %g", v,
                          i, idx[i], val[i], ridx[i], rval[i]);
                }
                nan_scores += ridx[i] >= 0 && isnan(rval[i]);
                inf_scores += ridx[i] >= 0 && isinf(rval[i]);
            }
            CHECK(bad == 0, "case %d: %" PRId64 " slots differ", v, bad);
        }
        void *const results[] = {idx, ridx, val, rval};
        th_free_all(results, sizeof results / sizeof results[0]);
        qcase_free(&c);
    }
    th_note("%" PRId64 " NaN and %" PRId64 " infinite scores selected", nan_scores, inf_scores);
    CHECK(nan_scores > 0 && inf_scores > 0, "the cases must select NaN and infinite scores");
}

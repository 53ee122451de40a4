/*
 * The forward's key split for few rows (decode; src/backends/cpu/operators/fwd_split.h):
 * decode shapes (B = 1 and 3, next_n = 1..4 rows per sequence at the end of a few thousand keys,
 * BSND, TND and paged keys, bands, K above and below the visible range) through lig_indexer and
 * lig_quant_indexer. The unsplit run (a slice length of 0, set through testing/lig_testing.h) is checked
 * against the float64 reference; every split run (several slice lengths, default included) with 1,
 * 2, 3 and 5 threads must write the unsplit run's bytes exactly, and the plan must really have
 * split (white-box: the executor's plan is read after phase 1). Then ties among ReLU zeros and NaN
 * scores, whose order the contract fixes, checked on the outputs themselves.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/executor.h"
#include "backends/cpu/operators/indexer_plan.h"
#include "forward_kl_checks.h"
#include "framework.h"
#include "testing/lig_testing.h"
#include "lig.h"
#include "problem_case.h"
#include "quant_case.h"
#include "rng.h"
#include "suite.h"

static const int split_threads[] = {1, 2, 3, 5};
enum { N_THREADS = sizeof split_threads / sizeof split_threads[0] };

/* The plan's jobs after phase 1 (the stripes' slices in all; -1: the stripes walk of many rows). */
static int64_t plan_jobs(const lig_executor *e) {
    const lig_cpu_fwd_plan *p = e->plan.plan;
    return p->split.n > 0 ? p->split.jobs : -1;
}

static int64_t plan_stripes(const lig_executor *e) {
    const lig_cpu_fwd_plan *p = e->plan.plan;
    return p->split.n;
}

/* ---- the planner alone --------------------------------------------------------------- */

/* A one-key-head BSND problem of B batches, lq rows each at the end of lk[b] keys (decode). */
typedef struct fake_problem {
    lig_problem pr;
    int64_t arr[5 * 8 + 1];
} fake_problem;

static void fake_decode(fake_problem *f, int64_t B, int64_t lq, const int64_t *lk, int64_t G) {
    memset(f, 0, sizeof *f);
    lig_problem *p = &f->pr;
    p->B = B;
    p->N2 = 1;
    p->G = G;
    p->N1 = G;
    p->sparse_mode = 3;
    p->pre_tokens = p->next_tokens = INT64_MAX;
    p->bt = (lig_batches){.B = B, .lq = f->arr, .lk = f->arr + B, .q_base = f->arr + 2 * B, .k_base = f->arr + 3 * B,
                          .row_prefix = f->arr + 4 * B};
    for (int64_t b = 0; b < B; b++) {
        p->bt.lq[b] = lq;
        p->bt.lk[b] = lk[b];
        p->bt.row_prefix[b] = b * lq;
    }
    p->units = B * lq;
}

/* Every stripe's slices are whole blocks from its first key and cover its keys; the slots fit. */
static void check_slices(const lig_fwd_stripes *sp, int64_t block, int64_t slots, const char *label) {
    int64_t used = 0, jobs = 0;
    for (int64_t i = 0; i < sp->n; i++) {
        const lig_fwd_stripe *st = &sp->stripe[i];
        const int64_t keys = st->hi >= st->lo ? st->hi - st->lo + 1 : 0;
        CHECK(st->slice_keys % block == 0, "%s: stripe %lld: slice of %lld keys, not whole blocks of %lld", label,
              (long long)i, (long long)st->slice_keys, (long long)block);
        CHECK(st->slices >= 1 && (st->slices - 1) * st->slice_keys < (keys > 0 ? keys : 1) &&
                  st->slices * st->slice_keys >= keys,
              "%s: stripe %lld: %lld slices of %lld do not tile %lld keys", label, (long long)i, (long long)st->slices,
              (long long)st->slice_keys, (long long)keys);
        CHECK(st->first_job == jobs, "%s: stripe %lld starts at job %lld, expected %lld", label, (long long)i,
              (long long)st->first_job, (long long)jobs);
        jobs += st->slices;
        if (st->slices > 1) used += st->slices * st->m;
    }
    CHECK(jobs == sp->jobs, "%s: %lld jobs listed, %lld counted", label, (long long)sp->jobs, (long long)jobs);
    CHECK(used <= slots, "%s: %lld (row, slice) pairs for %lld slots", label, (long long)used, (long long)slots);
}

LIG_TEST(fwd_split_plan) {
    const int64_t block = 64, K = 2048;
    const int64_t slots = lig_fwd_split_slots(K);
    CHECK(slots >= 16, "K = 2048: %lld slots, expected room for 16 slices at least", (long long)slots);
    CHECK(lig_fwd_split_slots(INT64_C(1) << 40) == 0, "a huge K must not split (%lld slots)",
          (long long)lig_fwd_split_slots(INT64_C(1) << 40));
    /* decode B = 1, next_n = 1 against 64K keys, G = 64: one stripe, 8 slices of 8192 (4 K) */
    fake_problem f;
    const int64_t lk64[1] = {65536};
    fake_decode(&f, 1, 1, lk64, 64);
    const int64_t rows = lig_fwd_split_stripe_rows(64, 1);
    CHECK(rows == 4, "G = 64: %lld rows per stripe, expected 4 (256 columns)", (long long)rows);
    lig_fwd_stripes sp;
    CHECK(lig_fwd_list_stripes(&f.pr, rows, &sp) && sp.n == 1, "64K decode: %lld stripes, expected 1", (long long)sp.n);
    CHECK(sp.stripe[0].lo == 0 && sp.stripe[0].hi == 65535, "64K decode: keys %lld..%lld", (long long)sp.stripe[0].lo,
          (long long)sp.stripe[0].hi);
    lig_fwd_split_stripes(&sp, K, block, -1, slots);
    CHECK(sp.stripe[0].slices == 8 && sp.stripe[0].slice_keys == 8192, "64K decode: %lld slices of %lld, expected 8 of 8192",
          (long long)sp.stripe[0].slices, (long long)sp.stripe[0].slice_keys);
    check_slices(&sp, block, slots, "64K decode");
    lig_fwd_split_stripes(&sp, K, block, 0, slots);
    CHECK(sp.jobs == 1, "split_keys = 0: %lld jobs, expected 1", (long long)sp.jobs);
    /* B = 3, next_n = 4, G = 64, odd contexts and slice lengths: whole blocks, slots respected */
    const int64_t lk3[3] = {70001, 129, 100000};
    fake_decode(&f, 3, 4, lk3, 64);
    CHECK(lig_fwd_list_stripes(&f.pr, rows, &sp) && sp.n == 3, "B = 3 next_n = 4: %lld stripes, expected 3", (long long)sp.n);
    for (int64_t i = 0; i < 3; i++)
        CHECK(sp.stripe[i].m == 4 && sp.stripe[i].lo == 0 && sp.stripe[i].hi == lk3[i] - 1,
              "B = 3: stripe %lld has %lld rows, keys %lld..%lld", (long long)i, (long long)sp.stripe[i].m,
              (long long)sp.stripe[i].lo, (long long)sp.stripe[i].hi);
    static const int64_t asked[] = {-1, 1, 100, 4096, 9999};
    for (size_t a = 0; a < sizeof asked / sizeof asked[0]; a++) {
        lig_fwd_split_stripes(&sp, K, block, asked[a], slots);
        char label[64];
        snprintf(label, sizeof label, "B = 3, split_keys %lld", (long long)asked[a]);
        check_slices(&sp, block, slots, label);
        CHECK(sp.stripe[1].slices == 1 || asked[a] < 129, "%s: 129 keys cut into %lld slices", label,
              (long long)sp.stripe[1].slices);
        CHECK(sp.jobs > 3, "%s: no stripe was split (%lld jobs)", label, (long long)sp.jobs);
    }
    /* many rows keep the stripes walk */
    fake_decode(&f, 8, 40, (const int64_t[8]){100, 100, 100, 100, 100, 100, 100, 100}, 64);
    CHECK(!lig_fwd_list_stripes(&f.pr, rows, &sp), "320 rows of G = 64 must keep the stripes walk (%lld stripes)", (long long)sp.n);
}

/* ---- lig_indexer -------------------------------------------------------------------- */

/* A decode problem: B sequences of next_n rows at the end of ctx[b] keys, BSND or TND. */
static void decode_tcase(tcase *tc, th_rng *r, int tnd, lig_dtype dtype, int64_t B, int64_t next_n, const int64_t *ctx,
                         int64_t N2, int64_t G, int64_t D, int64_t K, int64_t pre, int grid, int ties) {
    tc_init(tc);
    tc->dtype = dtype;
    tc->idx_dtype = (B + next_n) % 2 ? LIG_INT64 : LIG_INT32;
    tc->grid = grid;
    tc_set_dims(tc, B, N2 * G, N2, D, K);
    tc->p.sparse_mode = 3;
    tc->p.pre_tokens = pre;
    tc->p.next_tokens = 0;
    int64_t longest = 0, total = 0;
    for (int64_t b = 0; b < B; b++) {
        longest = ctx[b] > longest ? ctx[b] : longest;
        total += ctx[b];
    }
    tc->p.layout = tnd ? REF_TND : REF_BSND;
    tc->p.S1 = tnd ? B * next_n : next_n;
    tc->p.S2 = tnd ? total : longest;
    tc->has_seq_q = tc->has_seq_k = 1;
    tc_alloc(tc);
    for (int64_t b = 0, eq = 0, ek = 0; b < B; b++) {
        eq += next_n;
        ek += ctx[b];
        tc->seq_q[b] = tnd ? eq : next_n;
        tc->seq_k[b] = tnd ? ek : ctx[b];
    }
    fwd_gen_opts o;
    fwd_gen_opts_default(&o);
    o.grid = grid;
    o.tie_heavy = ties;
    fwd_gen_data(r, tc, &o);
}

/* The plan's jobs of the case's forward at the slice length in effect (lig_testing_set_fwd_split_keys). */
static int64_t forward_jobs(suite_case *sc, int64_t *stripes) {
    inst in;
    suite_forward.setup(sc, &in);
    int64_t jobs = -2;
    *stripes = 0;
    if (CHECK(inst_phase1(&in) == LIG_SUCCESS, "phase 1: %s", in.message)) {
        jobs = plan_jobs(in.executor);
        *stripes = plan_stripes(in.executor);
        lig_destroy_executor(in.executor);
        in.executor = NULL;
    }
    inst_teardown(&in);
    return jobs;
}

static int same_raw(const inst_result *a, const inst_result *b) {
    for (int i = 0; i < 3; i++)
        if (a->raw_bytes[i] != b->raw_bytes[i] || (a->raw_bytes[i] && memcmp(a->raw[i], b->raw[i], a->raw_bytes[i])))
            return 0;
    return 1;
}

/* The unsplit run, checked against the reference, then every split setting x thread count bitwise;
 * the first setting (the shortest slices) must split. */
static void forward_split_case(suite_case *sc, const int64_t *keys, int n_keys, const char *label) {
    lig_testing_set_fwd_split_keys(0);
    lig_set_num_threads(1);
    inst_result ref;
    suite_forward.run(sc, &ref);
    if (!CHECK(ref.st1 == LIG_SUCCESS && ref.st2 == LIG_SUCCESS, "%s, unsplit: %s", label, ref.message)) {
        inst_result_free(&ref);
        lig_testing_set_tuning(NULL);
        return;
    }
    suite_forward.check_result(sc, &ref, label);
    int64_t stripes;
    const int64_t unsplit_jobs = forward_jobs(sc, &stripes);
    CHECK(stripes > 0 && unsplit_jobs == stripes, "%s: unsplit plan has %lld jobs for %lld stripes", label,
          (long long)unsplit_jobs, (long long)stripes);
    for (int ki = 0; ki < n_keys; ki++) {
        lig_testing_set_fwd_split_keys(keys[ki]);
        const int64_t jobs = forward_jobs(sc, &stripes);
        CHECK(ki > 0 || jobs > stripes, "%s, slices of %lld keys: the plan did not split (%lld jobs, %lld stripes)", label,
              (long long)keys[ki], (long long)jobs, (long long)stripes);
        for (int ti = 0; ti < N_THREADS; ti++) {
            lig_set_num_threads(split_threads[ti]);
            inst_result res;
            suite_forward.run(sc, &res);
            if (CHECK(res.st1 == LIG_SUCCESS && res.st2 == LIG_SUCCESS, "%s: %s", label, res.message))
                CHECK(same_raw(&res, &ref), "%s: slices of %lld keys (%lld jobs), %d threads: other bytes than unsplit",
                      label, (long long)keys[ki], (long long)jobs, split_threads[ti]);
            inst_result_free(&res);
        }
    }
    inst_result_free(&ref);
    lig_testing_set_tuning(NULL);
    lig_set_num_threads(0);
}

LIG_TEST(fwd_split_decode) {
    static const lig_dtype dtypes[] = {LIG_FLOAT32, LIG_BFLOAT16, LIG_FLOAT16};
    static const int64_t keys[] = {128, 700};
    int cases = 0;
    fwd_check_stats_reset();
    for (int v = 0; v < 24; v++) {
        th_rng r = th_rng_make(0x5711u + (uint64_t)v);
        const int tnd = v % 2, B = v % 4 < 2 ? 1 : 3;
        const int64_t next_n = 1 + v % 4, G = v % 3 == 0 ? 16 : 4 + v % 3, N2 = v % 5 == 4 ? 2 : 1;
        int64_t ctx[3];
        for (int b = 0; b < 3; b++) ctx[b] = th_rng_range(&r, 1500, 4500);
        /* K below the range, near it, above it; bands now and then */
        const int64_t K = v % 3 == 0 ? 64 : v % 3 == 1 ? 1200 : 5000;
        const int64_t pre = v % 4 == 3 ? 900 + v : INT64_MAX;
        tcase tc;
        decode_tcase(&tc, &r, tnd, dtypes[v % 3], B, next_n, ctx, N2, G, 16 + 8 * (v % 3), K, pre, v % 2 == 0, v % 6 == 1);
        suite_case sc = {.tc = &tc, .with_values = v % 5 != 3, .val_dtype = v % 2 ? LIG_FLOAT32 : tc.dtype};
        char label[160];
        snprintf(label, sizeof label, "decode %s %s B=%d next_n=%lld G=%lld N2=%lld K=%lld band %s", tnd ? "TND" : "BSND",
                 v % 3 == 0 ? "fp32" : v % 3 == 1 ? "bf16" : "fp16", B, (long long)next_n, (long long)G, (long long)N2,
                 (long long)K, pre == INT64_MAX ? "none" : "900+");
        forward_split_case(&sc, keys, 2, label);
        tc_free(&tc);
        cases++;
    }
    /* the default slice length (4096 keys or 4 K): a longer context */
    {
        th_rng r = th_rng_make(0x5799u);
        const int64_t ctx[1] = {20000};
        tcase tc;
        decode_tcase(&tc, &r, 0, LIG_BFLOAT16, 1, 2, ctx, 1, 16, 64, 512, INT64_MAX, 0, 0);
        suite_case sc = {.tc = &tc, .with_values = 1, .val_dtype = LIG_FLOAT32};
        const int64_t dflt[] = {-1};
        lig_testing_set_fwd_split_keys(-1); /* the default length, whatever LIG_FWD_SPLIT_KEYS says */
        int64_t stripes;
        const int64_t jobs = forward_jobs(&sc, &stripes);
        CHECK(jobs == 4, "20000 keys, K = 512, default slices: %lld jobs, expected 4 (of 5000 keys, rounded to blocks)",
              (long long)jobs);
        forward_split_case(&sc, dflt, 1, "decode bf16 20000 keys, default slices");
        tc_free(&tc);
        cases++;
    }
    th_note("%d decode cases, each unsplit against the reference and split x {1,2,3,5} threads bitwise", cases);
    fwd_check_stats_note("split decode forward");
}

/* ---- ties and NaN ------------------------------------------------------------------- */

/* One row against 3000 keys, most scoring exactly 0 (ReLU of a negative dot), every 7th a positive
 * grid value; with nan = 1 every 11th other key holds +inf, whose two heads (weights +1 and -1)
 * give +inf - inf = NaN. Split (slices of 64 keys, 1 to 5 threads) must write the unsplit bytes,
 * and the order must be the contract's: positives descending (equal ones by key), then the zeros
 * by key, then (a NaN ranks as -inf) the NaN scores by key, with their NaN values. */
static void ties_case(int nan, int64_t K) {
    th_rng r = th_rng_make(0x7a1eu + (uint64_t)nan);
    const int64_t ctx[1] = {3000}, D = 8, G = 2, S = ctx[0];
    tcase tc;
    decode_tcase(&tc, &r, 0, LIG_FLOAT32, 1, 1, ctx, 1, G, D, K, INT64_MAX, 1, 0);
    for (int64_t d = 0; d < D; d++) {
        tc.q[d] = 0.125;
        tc.q[D + d] = 0.0625;
    }
    tc.w[0] = 1.0;
    tc.w[1] = nan ? -1.0 : 1.0;
    int64_t positive = 0, nans = 0;
    for (int64_t s = 0; s < S; s++) {
        const int pos = s % 7 == 3, bad = nan && s % 11 == 5 && !pos;
        positive += pos;
        nans += bad;
        for (int64_t d = 0; d < D; d++) tc.k[s * D + d] = bad ? INFINITY : pos ? 0.125 * (double)(1 + s % 5) : -0.25;
    }
    suite_case sc = {.tc = &tc, .with_values = 1, .val_dtype = LIG_FLOAT32};
    char label[64];
    snprintf(label, sizeof label, "ties%s, K = %lld", nan ? " and NaN" : "", (long long)K);
    lig_testing_set_fwd_split_keys(0);
    lig_set_num_threads(1);
    inst_result ref;
    suite_forward.run(&sc, &ref);
    if (CHECK(ref.st1 == LIG_SUCCESS && ref.st2 == LIG_SUCCESS, "%s: %s", label, ref.message)) {
        lig_testing_set_fwd_split_keys(64);
        for (int ti = 0; ti < N_THREADS; ti++) {
            lig_set_num_threads(split_threads[ti]);
            inst_result res;
            suite_forward.run(&sc, &res);
            CHECK(res.st2 == LIG_SUCCESS && same_raw(&res, &ref), "%s, %d threads: other bytes than unsplit", label,
                  split_threads[ti]);
            inst_result_free(&res);
        }
        const int64_t *idx = ref.idx;
        const double *val = ref.val;
        int64_t j = 0, last = -1;
        double prev = INFINITY;
        int ok = 1;
        for (; j < positive && ok; j++) {
            ok = idx[j] % 7 == 3 && val[j] > 0 && (val[j] < prev || (val[j] == prev && idx[j] > last));
            prev = val[j];
            last = idx[j];
        }
        for (last = -1; j < K && j < S - nans && ok; j++) {
            ok = val[j] == 0 && idx[j] > last && idx[j] % 7 != 3 && !(nan && idx[j] % 11 == 5);
            last = idx[j];
        }
        for (last = -1; j < K && ok; j++) {
            ok = isnan(val[j]) && idx[j] % 11 == 5 && idx[j] > last;
            last = idx[j];
        }
        CHECK(ok, "%s: slot %lld holds key %lld with value %g, out of the contract's order", label, (long long)(j - 1),
              (long long)idx[j > 0 ? j - 1 : 0], val[j > 0 ? j - 1 : 0]);
    }
    inst_result_free(&ref);
    tc_free(&tc);
    lig_testing_set_tuning(NULL);
    lig_set_num_threads(0);
}

LIG_TEST(fwd_split_ties_and_nan) {
    ties_case(0, 1500);
    ties_case(1, 1500);
    ties_case(1, 3000);
}

/* ---- lig_quant_indexer -------------------------------------------------------------- */

LIG_TEST(quant_fwd_split_decode) {
    static const int64_t keys[] = {256, 1000, -1};
    int cases = 0;
    qcheck_stats_reset();
    for (int v = 0; v < 12; v++) {
        qspec s;
        qspec_default(&s);
        const int64_t next_n = 1 + v % 4, ctxlen = v == 11 ? 12000 : 1500 + 400 * v;
        qspec_dims(&s, next_n, ctxlen, 1 + (v % 5 == 2), v % 2 ? 16 : 8, 32 + 32 * (v % 3), v % 3 == 0 ? 5000 : 256);
        s.B = v % 4 < 2 ? 1 : 3;
        s.layout = v % 3 == 2 ? REF_TND : REF_BSND;
        s.paged = v % 2 == 1;
        s.block_size = 16 + 48 * (v % 3);
        s.qk = v % 4 >= 2 ? LIG_INT8 : LIG_FLOAT8_E4M3FN;
        s.p_nan_code = s.qk == LIG_FLOAT8_E4M3FN ? 0.01 : 0;
        s.sparse_mode = 3;
        s.pre_tokens = v % 5 == 1 ? 800 : INT64_MAX;
        s.next_tokens = 0;
        s.lengths = 0;
        s.with_values = 1;
        th_rng r = th_rng_make(0x9d0cu + (uint64_t)v);
        qcase c;
        qcase_make(&r, &s, &c);
        char desc[200], label[260];
        qcase_describe(&c, desc, sizeof desc);
        snprintf(label, sizeof label, "quant decode %d (%s)", v, desc);
        int64_t *idx = th_xmalloc(sizeof(int64_t) * (size_t)(c.rows_q * c.p.N2 * c.p.K));
        double *val = th_xmalloc(sizeof(double) * (size_t)(c.rows_q * c.p.N2 * c.p.K));
        unsigned char *first = NULL;
        size_t first_bytes = 0;
        int ok_inputs;
        lig_testing_set_fwd_split_keys(0);
        lig_status st = qcase_run(&c, 1, idx, val, &ok_inputs, &first, &first_bytes);
        if (CHECK(st == LIG_SUCCESS && ok_inputs, "%s, unsplit: status %d", label, (int)st)) {
            qcase_check(&c, idx, val, label);
            for (int ki = 0; ki < 3; ki++) {
                lig_testing_set_fwd_split_keys(keys[ki]);
                qcall call;
                qcall_make(&c, &call);
                uint64_t ws;
                lig_executor *e = NULL;
                int64_t jobs = -2, stripes = 0;
                if (CHECK(qcall_phase1(&call, &ws, &e) == LIG_SUCCESS, "%s: phase 1: %s", label, lig_get_last_error())) {
                    jobs = plan_jobs(e);
                    stripes = plan_stripes(e);
                    lig_destroy_executor(e);
                }
                qcall_free(&call);
                /* the default splits only the long context; a context cut short by its drawn
                 * length may not split with the others either */
                const int must = s.layout == REF_BSND && s.B == 1 && s.pre_tokens == INT64_MAX &&
                                 (keys[ki] > 0 ? c.lk[0] >= 2 * keys[ki] : v == 11 && c.lk[0] >= 8192);
                CHECK(!must || jobs > stripes, "%s, slices of %lld: the plan did not split (%lld jobs, %lld stripes)",
                      label, (long long)keys[ki], (long long)jobs, (long long)stripes);
                for (int ti = 0; ti < N_THREADS; ti++) {
                    unsigned char *raw = NULL;
                    size_t bytes = 0;
                    st = qcase_run(&c, split_threads[ti], idx, val, &ok_inputs, &raw, &bytes);
                    CHECK(st == LIG_SUCCESS && ok_inputs && bytes == first_bytes && memcmp(raw, first, bytes) == 0,
                          "%s: slices of %lld keys (%lld jobs), %d threads: other bytes than unsplit", label,
                          (long long)keys[ki], (long long)jobs, split_threads[ti]);
                    free(raw);
                }
            }
            cases++;
        }
        free(first);
        free(idx);
        free(val);
        qcase_free(&c);
    }
    lig_testing_set_tuning(NULL);
    th_note("%d quantized decode cases, unsplit against the reference, split x {1,2,3,5} threads bitwise", cases);
    qcheck_stats_note("split quantized decode");
}

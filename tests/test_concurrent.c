/*
 * lig functions may be called from several application threads at once (README: a call that
 * finds the pool busy runs on its own thread, with the same results). Three threads run
 * forwards, KL steps and backwards (deterministic and not) concurrently, through the same
 * suite_op interface; afterwards every result is checked against the float64 reference, and
 * every deterministic backward must have the bytes of a single-threaded rerun of its case.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "gen.h"
#include "harness.h"
#include "lig.h"
#include "op_check.h"
#include "suite.h"
#include "tests.h"

#define CONC_THREADS 3
#define CONC_CALLS 18 /* per thread: forward, KL step, backward, in turn */

typedef struct conc_call {
    const suite_op *op;
    tcase tc;
    klcase kc;
    suite_case sc;
    inst_result res;
} conc_call;

typedef struct conc_job {
    conc_call calls[CONC_CALLS];
} conc_job;

static void *conc_main(void *arg)
{
    conc_job *j = arg;
    for (int i = 0; i < CONC_CALLS; i++) {
        j->calls[i].op->run(&j->calls[i].sc, &j->calls[i].res);
    }
    return NULL;
}

/* Forward number n of thread t. */
static void forward_call(conc_call *c, int t, int n)
{
    th_rng r = th_rng_make(73000u + 100u * (uint64_t)t + (uint64_t)n);
    fwd_gen_opts o;
    fwd_gen_opts_default(&o);
    o.tie_heavy = n % 4 == 0;
    tcase *tc = &c->tc;
    tc_init(tc);
    tc->dtype = suite_float_dtypes[(t + n) % 3];
    tc_set_dims(tc, 2, 2 * (1 + t % 2), 1 + t % 2, 16, 8);
    gen_layout(&r, tc, 0, 40, 60, 0, 0, 1);
    fwd_gen_data(&r, tc, &o);
    c->op = &suite_forward;
    c->sc.tc = tc;
    c->sc.with_values = 1;
    c->sc.val_dtype = LIG_FLOAT32;
}

/* KL step number n of thread t. */
static void kl_call(conc_call *c, int t, int n)
{
    th_rng r = th_rng_make(73000u + 100u * (uint64_t)t + (uint64_t)n);
    klcase *kc = &c->kc;
    kl_init(kc);
    kc->ndim = 2;
    kc->shape[0] = 300;
    kc->shape[1] = 16;
    kc->has_indices = n % 3 != 0;
    kc->v_dtype = suite_float_dtypes[(t + n) % 3];
    kl_alloc(kc);
    kl_gen_opts o;
    kl_gen_opts_default(&o);
    kl_gen_data(&r, kc, &o);
    c->op = &suite_kl;
    c->sc.kc = kc;
}

/* Backward number n of thread t: contended dK rows; deterministic ones on continuous data (their
 * summation order shows in the bytes), the others on grid data (a lost update shows). */
static void backward_call(conc_call *c, int t, int n)
{
    th_rng r = th_rng_make(74000u + 100u * (uint64_t)t + (uint64_t)n);
    const int deterministic = n % 2 == 0;
    const int64_t n2 = 1 + t % 2;
    gen_contended_case(&r, &c->tc, suite_float_dtypes[(t + n) % 3], !deterministic, 2 * n2, n2, n % 3 == 2);
    c->tc.deterministic = deterministic;
    c->tc.dw_dtype = n % 3 == 1 ? LIG_FLOAT32 : c->tc.dtype;
    c->op = &suite_backward;
    c->sc.tc = &c->tc;
}

static void prepare(conc_job *jobs)
{
    for (int t = 0; t < CONC_THREADS; t++) {
        for (int i = 0; i < CONC_CALLS; i++) {
            conc_call *c = &jobs[t].calls[i];
            memset(c, 0, sizeof *c);
            const int round = i / 3;
            switch (i % 3) {
            case 0: forward_call(c, t, 2 * round); break;
            case 1: kl_call(c, t, 2 * round + 1); break;
            default: backward_call(c, t, round); break;
            }
        }
    }
}

/* The deterministic backward's bytes against a rerun with one thread and nobody else calling. */
static void rerun_alone(conc_call *c, const char *label)
{
    lig_set_num_threads(1);
    inst_result again;
    c->op->run(&c->sc, &again);
    if (CHECK(again.st1 == LIG_SUCCESS && again.st2 == LIG_SUCCESS, "%s: single-threaded rerun failed: %s", label,
              again.message)) {
        for (int o = 0; o < c->op->n_outputs; o++) {
            CHECK(again.raw_bytes[o] == c->res.raw_bytes[o] &&
                      memcmp(again.raw[o], c->res.raw[o], again.raw_bytes[o]) == 0,
                  "%s: %s bytes differ from a single-threaded rerun", label, c->op->output_names[o]);
        }
    }
    inst_result_free(&again);
    lig_set_num_threads(2);
}

void test_concurrent_calls_all_operators(void)
{
    static conc_job jobs[CONC_THREADS];
    lig_set_num_threads(2);
    prepare(jobs);
    pthread_t th[CONC_THREADS];
    int started[CONC_THREADS];
    for (int t = 0; t < CONC_THREADS; t++) {
        started[t] = pthread_create(&th[t], NULL, conc_main, &jobs[t]) == 0;
        CHECK(started[t], "pthread_create failed");
    }
    for (int t = 0; t < CONC_THREADS; t++) {
        if (started[t]) {
            pthread_join(th[t], NULL);
        } else {
            conc_main(&jobs[t]);
        }
    }
    fwd_check_stats_reset();
    check_stats_reset();
    int reruns = 0;
    for (int t = 0; t < CONC_THREADS; t++) {
        for (int i = 0; i < CONC_CALLS; i++) {
            conc_call *c = &jobs[t].calls[i];
            char label[96];
            snprintf(label, sizeof label, "thread %d call %d (%s%s)", t, i, c->op->name,
                     c->op == &suite_backward ? (c->tc.deterministic ? ", deterministic" : ", non-deterministic")
                                              : "");
            int ok;
            if (inst_result_ran(&c->res, label, NULL, &ok)) {
                c->op->check_result(&c->sc, &c->res, label);
                if (c->op == &suite_backward && c->tc.deterministic) {
                    rerun_alone(c, label);
                    reruns++;
                }
            }
            inst_result_free(&c->res);
            if (c->op == &suite_kl) {
                kl_free(&c->kc);
            } else {
                tc_free(&c->tc);
            }
        }
    }
    suite_forward.stats_note("concurrent forwards", 1);
    suite_backward.stats_note("concurrent backwards", 1);
    th_note("%d deterministic backwards rerun alone", reruns);
    CHECK(reruns == CONC_THREADS * 3, "expected %d deterministic backwards, got %d", CONC_THREADS * 3, reruns);
    lig_set_num_threads(0);
}

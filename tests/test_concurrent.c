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

#include "backward_checks.h"
#include "case_generators.h"
#include "framework.h"
#include "lig.h"
#include "operator_calls.h"
#include "forward_kl_checks.h"
#include "suite.h"

#define CONC_THREADS 3
#define CONC_CALLS 18 /* per thread: forward, KL step, backward, in turn */

typedef struct conc_job {
    op_call calls[CONC_CALLS];
} conc_job;

static void *conc_main(void *arg)
{
    conc_job *j = arg;
    for (int i = 0; i < CONC_CALLS; i++) {
        j->calls[i].op->run(&j->calls[i].sc, &j->calls[i].res);
    }
    return NULL;
}

static void prepare(conc_job *jobs)
{
    for (int t = 0; t < CONC_THREADS; t++) {
        for (int i = 0; i < CONC_CALLS; i++) op_call_mixed(&jobs[t].calls[i], t, i);
    }
}

/* The deterministic backward's bytes against a rerun with one thread and nobody else calling. */
static void rerun_alone(op_call *c, const char *label)
{
    lig_set_num_threads(1);
    inst_result again;
    c->op->run(&c->sc, &again);
    op_call_same_bytes(c, &again, label);
    inst_result_free(&again);
    lig_set_num_threads(2);
}

LIG_TEST(concurrent_calls_all_operators)
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
            op_call *c = &jobs[t].calls[i];
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
            op_call_free(c);
        }
    }
    suite_forward.stats_note("concurrent forwards", 1);
    suite_backward.stats_note("concurrent backwards", 1);
    th_note("%d deterministic backwards rerun alone", reruns);
    CHECK(reruns == CONC_THREADS * 3, "expected %d deterministic backwards, got %d", CONC_THREADS * 3, reruns);
    lig_set_num_threads(0);
}

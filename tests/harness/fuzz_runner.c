#include "fuzz_runner.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework.h"
#include "problem_case.h"

typedef struct fuzz_run_state {
    const fuzz_spec *spec;
    fuzz_stats *stats; /* one an operator */
} fuzz_run_state;

int fuzz_defect_count(th_rng *r)
{
    return th_rng_chance(r, 0.45) ? 0 : (int)th_rng_range(r, 1, 2);
}

/* Returns 1 when the iteration behaved. */
static int fuzz_one(uint64_t seed, int64_t iter, void *arg)
{
    fuzz_run_state *run = arg;
    const int which = (int)(iter % run->spec->n_ops);
    const fuzz_operator *op = run->spec->ops[which];
    fuzz_stats *stats = &run->stats[which];
    th_rng r = th_rng_make(seed ^ ((uint64_t)iter * 0x9E3779B97F4A7C15ull));
    if (th_rng_chance(&r, 0.3)) {
        lig_set_num_threads((int)th_rng_range(&r, 1, 4));
    }
    void *state = th_xmalloc(op->state_size);
    memset(state, 0, op->state_size);
    fuzz_expect ex;
    memset(&ex, 0, sizeof ex);
    inst in;
    suite_case sc;
    memset(&sc, 0, sizeof sc);
    op->prepare(&r, state, &in, &sc, &ex);

    char desc[1024], label[1200];
    op->describe(state, &ex, desc, sizeof desc);
    snprintf(label, sizeof label, "%s iteration %" PRId64 " (LIG_FUZZ_SEED=%" PRIu64 " LIG_FUZZ_ITER=%" PRId64 ") %s",
             run->spec->test_name, iter, seed, iter, desc);
    const int before = th_current_failures();
    stats->iterations++;

    if (fuzz_check_phase1(&in, inst_phase1(&in), &ex, label, stats)) {
        if (ex.empty) {
            CHECK(in.workspace_size == 0, "%s: empty problem wants %" PRIu64 " workspace bytes", label,
                  in.workspace_size);
        }
        int may_fail = 0, must_fail = 0;
        const lig_status st = op->phase2(&r, state, &in, &ex, &may_fail, &must_fail);
        fuzz_check_phase2(&in, st, may_fail, must_fail, op->checker, &sc, label, stats);
    }
    inst_teardown(&in);
    op->free_state(state);
    free(state);
    return th_current_failures() == before;
}

void fuzz_run(const fuzz_spec *spec)
{
    fuzz_run_state run = {.spec = spec, .stats = th_xmalloc((size_t)spec->n_ops * sizeof(fuzz_stats))};
    memset(run.stats, 0, (size_t)spec->n_ops * sizeof(fuzz_stats));
    fuzz_drive(spec->share, spec->default_seed, spec->min_iterations, fuzz_one, &run);
    for (int i = 0; i < spec->n_ops; i++) {
        fuzz_stats_note(spec->ops[i]->name, &run.stats[i]);
    }
    free(run.stats);
}

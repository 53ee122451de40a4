/*
 * The fuzz tests' one iteration loop: each operator is a table of callbacks (prepare a random,
 * perhaps defective call; describe it; run its phase 2), and fuzz_run drives them in turn,
 * checking each phase against what the defects allow (fuzz_helpers.h).
 */
#ifndef LIG_TESTS_HARNESS_FUZZ_RUNNER_H
#define LIG_TESTS_HARNESS_FUZZ_RUNNER_H

#include <stddef.h>
#include <stdint.h>

#include "fuzz_helpers.h"
#include "lig.h"
#include "rng.h"
#include "suite.h"
#include "two_phase_call.h"

typedef struct fuzz_operator {
    const char *name;    /* its totals' note */
    size_t state_size;   /* the callbacks' case, handed to them zeroed */
    /* Draws the random case and its defects, materializes the call in `in` with them and points
     * `sc` at the case for the checker. */
    void (*prepare)(th_rng *r, void *state, inst *in, suite_case *sc, fuzz_expect *ex);
    /* The end of the failure label: the case and its defects. */
    void (*describe)(const void *state, const fuzz_expect *ex, char *out, size_t size);
    /* Phase 2 of a call phase 1 accepted; may_fail / must_fail say what its defects allow. */
    lig_status (*phase2)(th_rng *r, void *state, inst *in, const fuzz_expect *ex, int *may_fail, int *must_fail);
    /* What checks a successful phase 2. */
    const suite_op *checker;
    void (*free_state)(void *state);
} fuzz_operator;

typedef struct fuzz_spec {
    const char *test_name; /* the failure labels' first word */
    double share;          /* of LIG_FUZZ_SECONDS */
    uint64_t default_seed;
    int64_t min_iterations;
    const fuzz_operator *const *ops; /* iteration i fuzzes ops[i % n_ops] */
    int n_ops;
} fuzz_spec;

/* Reads LIG_FUZZ_SEED and LIG_FUZZ_ITER (fuzz_drive), runs the iterations and notes each
 * operator's totals. */
void fuzz_run(const fuzz_spec *spec);

/* How many defects an iteration gets: none about half the time, else one or two. */
int fuzz_defect_count(th_rng *r);

#endif /* LIG_TESTS_HARNESS_FUZZ_RUNNER_H */

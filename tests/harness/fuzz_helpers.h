/*
 * What the two fuzzers (test_fuzz.c: backward; test_fuzz_fwd.c: forward and KL step) share: the
 * seeded, time-budgeted iteration loop (driven by fuzz_runner.h), the expectation a call's defects
 * set, random pickers for the parts of a problem both draw alike, the length, tensor and pointer
 * defects, and the verdict on each phase.
 */
#ifndef LIG_TESTS_HARNESS_FUZZ_HELPERS_H
#define LIG_TESTS_HARNESS_FUZZ_HELPERS_H

#include <stddef.h>
#include <stdint.h>

#include "two_phase_call.h"
#include "lig.h"
#include "rng.h"
#include "suite.h"
#include "problem_case.h"

#define FUZZ_MAX_FAILING_ITERATIONS 10

/* One iteration; returns 1 when it behaved. */
typedef int (*fuzz_iteration_fn)(uint64_t seed, int64_t iter, void *stats);

/* Reads LIG_FUZZ_SEED (default_seed when unset) and LIG_FUZZ_ITER, notes the seed and the budget
 * (`share` of LIG_FUZZ_SECONDS), then runs LIG_FUZZ_ITER's iteration alone, or iterations
 * 0, 1, ... until at least min_iterations ran and the budget is spent, stopping early after
 * FUZZ_MAX_FAILING_ITERATIONS failing ones. Leaves the thread count at its default. */
void fuzz_drive(double share, uint64_t default_seed, int64_t min_iterations, fuzz_iteration_fn one, void *stats);

/* What the defects of one call make of it. */
typedef struct fuzz_expect {
    int null_err;      /* a required pointer is NULL: phase 1 PARAM_NULLPTR */
    int invalid1;      /* an invalid argument: phase 1 PARAM_INVALID */
    int invalid2;      /* a defect only phase 2 can see: PARAM_INVALID there */
    int maybe_refused; /* innermost stride 2 / broadcast inputs: phase 1 may refuse */
    int empty;         /* a zero extent: workspace 0 */
    char what[256];    /* the defects, for failure messages */
} fuzz_expect;

typedef struct fuzz_stats {
    int64_t iterations, successes, refusals, nullptr_errors, invalid1, invalid2;
} fuzz_stats;

/* Appends `s` to the ", "-separated list of expected defects. */
void fuzz_note_defect(fuzz_expect *ex, const char *s);
/* A defect phase 1 must refuse with PARAM_INVALID, noted as `s`. */
void fuzz_note_invalid(fuzz_expect *ex, const char *s);
/* A pre/next_tokens value: mostly unbounded, sometimes small, rarely huge. */
int64_t fuzz_pick_band(th_rng *r);
lig_dtype fuzz_pick_float(th_rng *r);
/* CONTIGUOUS, EXPLICIT, PADDED or PERMUTED. */
tc_strides fuzz_pick_plain_strides(th_rng *r);
/* For inputs: innermost stride 2 below u = p_inner, broadcast below p_broadcast (both may be
 * refused: ex->maybe_refused), a plain pattern otherwise. */
tc_strides fuzz_pick_in_strides(th_rng *r, double p_inner, double p_broadcast, fuzz_expect *ex);
/* sparse_mode 0 or 3, and a band (fuzz_pick_band) on each side. */
void fuzz_pick_mode_and_band(th_rng *r, tcase *tc);
/* The short index form half the time N2 allows it, the input strides (fuzz_pick_in_strides) and
 * a plain output pattern. */
void fuzz_pick_forms(th_rng *r, tcase *tc, double p_inner, double p_broadcast, fuzz_expect *ex);
/* B in 1..3, N2 in 1..3, N1 = N2 * (1..3), D in 1..17, except that B, N1 or D is 0 when `zero`
 * is 0, 1 or 2 (other values of zero are the caller's: K, S1, S2). */
void fuzz_pick_heads(th_rng *r, tcase *tc, int zero);
/* TND (40 %) with lengths up to s1 / s2 and 0-2 rows past the ends, or BSND S1 = s1, S2 = s2
 * with each length array present half the time; allocates the case. */
void fuzz_layout(th_rng *r, tcase *tc, int64_t s1, int64_t s2);

/* A length array made invalid for phase 1: a BSND length outside 0..S, TND ends decreasing or
 * past T, or (with probability p_missing in TND) an array missing. */
void fuzz_defect_seq(th_rng *r, tcase *tc, double p_missing, fuzz_expect *ex);
/* TND without one of its length arrays. */
void fuzz_defect_seq_missing(th_rng *r, tcase *tc, fuzz_expect *ex);

/* The tensor at `slot` replaced by `t` (a wrong dtype or shape): PARAM_INVALID in phase 1. */
void fuzz_defect_replace(inst *in, int slot, const lig_tensor *t, const char *what, fuzz_expect *ex);
/* One of the n required tensors at `slots` made NULL: PARAM_NULLPTR in phase 1. */
void fuzz_defect_null_tensor(th_rng *r, inst *in, const int *slots, int n, fuzz_expect *ex);

/* The workspace_size pointer (ws) or the executor pointer made NULL: PARAM_NULLPTR in phase 1. */
void fuzz_defect_null_pointer(inst *in, int ws, fuzz_expect *ex);

/* Phase 1's outcome against the expectation: a failure must carry a status the defects allow,
 * a message, no executor and no write; a defect phase 1 must see must not pass. Returns 1 when
 * phase 1 rightly succeeded (the caller goes on to phase 2). */
int fuzz_check_phase1(inst *in, lig_status st, const fuzz_expect *ex, const char *label, fuzz_stats *s);
/* Phase 2's outcome: a failure must be allowed (may_fail), PARAM_INVALID, with a message and no
 * write; with must_fail a success is wrong; a success otherwise is checked through `op` (gaps,
 * then the outputs against the reference). */
void fuzz_check_phase2(inst *in, lig_status st, int may_fail, int must_fail, const suite_op *op, suite_case *sc,
                       const char *label, fuzz_stats *s);
/* A note with the totals of one operator's iterations. */
void fuzz_stats_note(const char *name, const fuzz_stats *s);

#endif /* LIG_TESTS_HARNESS_FUZZ_HELPERS_H */

/*
 * One runner for the operator suites. The drivers that enumerate problems -- the layout x dtype x
 * sparse_mode x index dtype x N2 matrix, stride patterns, bands, thread counts, large shapes --
 * are written once and reach an operator only through suite_op; the backward, the forward and
 * the KL step are its users (suite_operators.c), and a test adds what is its own: the data of a case.
 */
#ifndef LIG_TESTS_HARNESS_SUITE_H
#define LIG_TESTS_HARNESS_SUITE_H

#include <stddef.h>
#include <stdint.h>

#include "two_phase_call.h"
#include "lig.h"
#include "forward_kl_runner.h"
#include "rng.h"
#include "problem_case.h"

extern const lig_dtype suite_float_dtypes[3]; /* FLOAT32, FLOAT16, BFLOAT16 */
extern const lig_dtype suite_index_dtypes[2]; /* INT32, INT64 */
extern const int64_t suite_modes[2];          /* 0, 3 */

/* A problem as an operator sees it. */
typedef struct suite_case {
    tcase *tc;           /* the backward's and the forward's problem */
    klcase *kc;          /* the KL step's */
    int with_values;     /* forward: pass sparse_values, of val_dtype */
    lig_dtype val_dtype;
} suite_case;

typedef struct suite_op {
    const char *name;
    int n_outputs;               /* outputs kept as raw bytes in inst_result.raw */
    const char *output_names[3];
    /* The whole protocol (run_case, fwd_run, kl_run). */
    void (*run)(suite_case *sc, inst_result *res);
    /* A successful run's outputs against the reference, and its gaps. */
    int (*check_result)(suite_case *sc, const inst_result *res, const char *label);
    /* The case in one line, for the labels of suite_check. */
    void (*describe)(const suite_case *sc, char *buf, size_t size);
    /* Materializes the case; checks the outputs (not the gaps) of an instance whose phase 2 succeeded. */
    void (*setup)(suite_case *sc, inst *in);
    int (*check_inst)(const inst *in, suite_case *sc, const char *label);
    /* Totals over the checks since the reset, noted; fails when the checks compared nothing but
     * zeros or fewer than min_work units of work (counted slots, selected keys) ran. */
    void (*stats_reset)(void);
    void (*stats_note)(const char *what, int64_t min_work);
} suite_op;

extern const suite_op suite_backward, suite_forward, suite_kl;

/* Runs and checks one case (op->run, then op->check_result), labelled "label [description]"; with
 * refused != NULL a clean PARAM_INVALID from phase 1 passes (*refused = 1). Returns 1 when it passed. */
int suite_check(const suite_op *op, suite_case *sc, const char *label, int *refused);

/* A test's own part of a driven case: the operator's options and the data of case v, on a case
 * whose shape is set, lengths drawn and arrays allocated. */
typedef void (*suite_data_fn)(th_rng *r, suite_case *sc, int v);

typedef struct suite_spec {
    const char *label;   /* case labels and the notes */
    uint64_t seed;       /* case v draws from th_rng_make(seed + v) (matrix: + 1000 * layout) */
    const int64_t *Ks;   /* matrix, bands: K cycled through the cases */
    int nK;
    int variants;        /* matrix: cases per (dtype, mode, index dtype, N2) */
    int64_t s1, s2;      /* strides (s2), continuous: rows of the BSND cases, largest lengths of TND */
    /* continuous: the dimensions and options the driver leaves to the test (N1, K, ...), set
     * before the lengths are drawn */
    void (*shape)(tcase *tc, int v);
    suite_data_fn data;
} suite_spec;

/* Every dtype x sparse_mode x index dtype x N2 in 1..3, `variants` cases each, with the secondary
 * choices of gen_matrix_shape cycled by the case index (K = Ks[(v / 2) % nK]). */
void suite_matrix(const suite_op *op, const suite_spec *s, ref_layout layout);

/* Every input stride pattern x four output patterns x dtype, BSND and TND, N2 1 or 2, odd D.
 * Innermost stride 2 and stride-0 broadcast inputs may be refused, never answered wrongly. */
void suite_strides(const suite_op *op, const suite_spec *s);

/* Both modes x pre_tokens x next_tokens in {0, 1, 2, 5, INT64_MAX - 1, INT64_MAX}: narrow bands,
 * bands past the sequence, overflow traps next to INT64_MAX. K = Ks[v % nK]. */
void suite_bands(const suite_op *op, const suite_spec *s);

/* Continuous data (tc->grid = 0): every dtype x layout x 3 shapes r = v % 3 with N2 = 1 + r,
 * D = 31 + 16 r, B = 2, mode 0 for r = 0 and 3 otherwise, both length arrays when r > 0, rows
 * past the TND ends; spec->shape sets N1, K and the test's options. */
void suite_continuous(const suite_op *op, const suite_spec *s);

/* Rows of the 128K-row tests: 131072, or 16384 with LIG_TEST_QUICK=1 (sanitizer runs). */
int64_t suite_long_rows(void);

/* Runs the case `reps` times with each thread count: the first result is checked against the
 * reference, every other one must have the same output bytes. */
void suite_bitwise_threads(const suite_op *op, suite_case *sc, const int *threads, int n_threads, int reps,
                           const char *label);

/* Phase 1 with pairs[i][0] threads (which sizes the per-thread scratch), phase 2 with pairs[i][1]:
 * every result checked against the reference and inside its views; with `bitwise`, output bytes
 * equal to those of pairs[0], which should not change the count. */
void suite_threads_change(const suite_op *op, suite_case *sc, const int (*pairs)[2], int n_pairs, int bitwise,
                          const char *label);

/* One large case, checked, timed and noted; fails unless at least a quarter as many units of
 * work as query rows ran (a vacuous pass). */
void suite_large(const suite_op *op, suite_case *sc, const char *label);

#endif /* LIG_TESTS_HARNESS_SUITE_H */

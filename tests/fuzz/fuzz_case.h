/*
 * What the lig targets (fuzz_lig_grad.c, fuzz_lig_fwd.c) share: the environment of a call
 * (threads, kernel set), tensor views decoded from the input (any strides: padded, permuted,
 * zero, overlapping, negative), a problem (dims, dtypes, layout, lengths, modes, bands, data),
 * the defects that apply to any operator, and the verdict: every check goes through the test
 * suite's CHECK (tests/harness/framework.h), and the first failed check of an input aborts, so that
 * libFuzzer reports the input.
 */
#ifndef LIG_FUZZ_CASE_H
#define LIG_FUZZ_CASE_H

#include <stdint.h>

#include "fuzz_input.h"
#include "fuzz_helpers.h"
#include "two_phase_call.h"
#include "suite.h"
#include "problem_case.h"

#define FZ_MAX_VIEWS 10

/* A tensor layout decoded from the input, applied to whichever shape the tensor gets. */
typedef struct fz_view {
    int mode;           /* 0 NULL strides, 1 padded row-major, 2 padded in a permuted order, 3 raw */
    int order[4];       /* mode 2: dimension order, innermost last */
    int64_t pad[4];     /* modes 1, 2: extra elements after each dimension */
    int64_t inner;      /* modes 1, 2: innermost stride (1 or 2) */
    int64_t raw[4];     /* mode 3: the strides themselves, -23..23 */
    int64_t offset;
} fz_view;

/* The views of one call, handed out in the order the runner creates its tensors. */
typedef struct fz_views {
    fz_view v[FZ_MAX_VIEWS];
    int n, next;
} fz_views;

/* Decodes n views and installs them as tbuf's TC_SOURCE (tests/harness/tensor_buffers.h). */
void fz_decode_views(fz_in *in, fz_views *vs, int n);
/* Decodes the thread count and kernel set of the call and applies them. */
void fz_decode_env(fz_in *in, char *desc, size_t size);
/* Back to the default threads and automatic kernel selection. */
void fz_reset_env(void);

/* A value of the dtype from the input: on the 1/8 grid in [-2, 2] (grid), or in [-1, 1]. */
double fz_value(fz_in *in, lig_dtype dtype, int grid);

/* Dims, dtypes, layout, lengths, mode, band of a backward (forward = 0) or forward problem,
 * allocated (tc_alloc) with q, k, w (and for the backward dy) filled from the input; strides
 * are TC_SOURCE. Indices are the caller's (they depend on the lengths). */
void fz_decode_tcase(fz_in *in, tcase *tc, int forward);
/* One index per slot of the backward: -1, a key of the batch (visible or not), or with `bad` now
 * and then one outside -1 .. Lk-1; garbage in invalid rows (never read). */
void fz_decode_indices(fz_in *in, tcase *tc, int bad);
/* A length array made invalid for phase 1 (BSND length out of range, TND ends decreasing or past
 * the end, a TND array missing). */
void fz_defect_seq(fz_in *in, tcase *tc, fuzz_expect *ex);

/* After setup: 1 when a view could not be described (lig_create_tensor returned NULL), which
 * must be for a negative stride (checked); the call is then not made. */
int fz_creation_failed(const inst *in);
/* Outputs whose strides make two elements share memory must be refused (ex->invalid1); outputs
 * that do not, but whose dimensions do not nest (each stride above the span of the smaller
 * ones, the library's conservative test, docs/contract.md 6.2), may be (ex->maybe_refused). */
void fz_expect_outputs(const inst *in, fuzz_expect *ex);

/* Defects that apply to every operator; `slots` lists the instance's tensors, `required` the
 * ones that must not be NULL, `allowed[i]` the dtypes (bit dtype) slot i accepts. */
typedef struct fz_op_desc {
    const int *slots;
    int n_slots;
    const int *required;
    int n_required;
    unsigned allowed[INST_MAX_BUFS];
    int has_layout; /* layout string, sparse_mode and the band are arguments */
} fz_op_desc;

enum { FZ_D_NULL_TENSOR = 0, FZ_D_DTYPE, FZ_D_SHAPE, FZ_D_ALIAS, FZ_D_POINTERS, FZ_D_LAYOUT, FZ_D_MODE, FZ_D_BAND,
       FZ_D_COMMON };
void fz_defect_common(fz_in *in, int kind, inst *oi, const fz_op_desc *op, fuzz_expect *ex);

/* Up to two defect kinds of an operator's n_kinds (-1: none, for a byte below 160), never the
 * same twice (two shape defects could cancel out). */
void fz_decode_kinds(fz_in *in, int n_kinds, int *kinds);

/* Phase-2 defects: a workspace too small, a stream on the CPU, no workspace. */
enum { FZ_P2_NONE = 0, FZ_P2_SHORT, FZ_P2_STREAM, FZ_P2_NULL };
/* The phase-2 defect among the two kinds, given the operator's numbers for the three. */
int fz_p2_of(const int *kinds, int short_ws, int stream, int null_ws);
/* ", short workspace" and so on, for labels; "" for none. */
const char *fz_p2_name(int p2);
/* Phase 1 then phase 2 (with the defect p2), each judged: phase 1 by fuzz_check_phase1, phase 2
 * by fuzz_check_phase2 against `op` (invalid2: a content defect phase 2 must report, moot when
 * `empty`), then the outcome noted. */
void fz_run(fz_in *in, inst *oi, const fuzz_expect *ex, int p2, int invalid2, const suite_op *op, suite_case *sc,
            const char *label);
/* 1 when the environment variable is "1": LIG_FUZZ_STATS (print the outcomes at exit),
 * LIG_FUZZ_TRACE (print what each input decoded to),
 * LIG_FUZZ_PERTURB (change one output after every successful call: the checks must then abort,
 * which make test-fuzz verifies). */
int fz_env_flag(const char *name);
/* The outcomes of the process's calls (printed at exit with LIG_FUZZ_STATS=1), for a target that
 * judges its calls itself; and whether LIG_FUZZ_PERTURB is on. */
fuzz_stats *fz_stats(void);
int fz_perturb(void);
/* Aborts (libFuzzer then saves the input) when a check of this input failed. */
void fz_verdict(int failures_before, const char *label);
/* The start of every target's LLVMFuzzerTestOneInput: in reads data (fz_init); returns the
 * failures so far, fz_verdict's failures_before. */
int fz_begin(fz_in *in, const uint8_t *data, size_t size);
/* The start of an operator's decoding: up to two of its n_kinds defect kinds (fz_decode_kinds),
 * then n_views views installed as the stride source (fz_decode_views; vs must outlive the setup). */
void fz_decode_defects_and_views(fz_in *in, int n_kinds, int *kinds, fz_views *vs, int n_views);

#endif /* LIG_FUZZ_CASE_H */

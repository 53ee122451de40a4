/*
 * What the error tests of every operation share (test_errors.c, test_errors_fwd.c): one
 * table-driven runner (each operator an errtest_operator, each test a table of errtest_case),
 * checks on the library's error messages, and the small base problem the failures are provoked on.
 */
#ifndef LIG_TESTS_HARNESS_ERROR_CASES_H
#define LIG_TESTS_HARNESS_ERROR_CASES_H

#include "forward_kl_runner.h"
#include "two_phase_call.h"
#include "lig.h"
#include "reference/indexer_ref.h"
#include "rng.h"
#include "problem_case.h"

/* Case-insensitive substring search. */
int contains_ci(const char *hay, const char *needle);
/* 1 when msg names one of the '|'-separated `names` as a whole identifier ("query" does not
 * match inside "d_query"). */
int names_any(const char *msg, const char *names);
/* Checks a failure message: not empty, names one of `names`, says what was expected and what
 * was received ("expected", "got"). */
void check_error_message(const char *label, const char *msg, const char *names);

/* The workspace phase 2 gets in an error case. */
typedef enum errtest_ws {
    ERRTEST_WS_EXACT = 0,
    ERRTEST_WS_SHORT,     /* one byte too small */
    ERRTEST_WS_ZERO,      /* NULL, size 0 */
    ERRTEST_WS_NULL_PTR,  /* NULL pointer with the right size */
    ERRTEST_WS_NULL_EXEC, /* NULL executor */
    ERRTEST_WS_COMMON     /* an operator's own modes are numbered from here */
} errtest_ws;

/* Phase 2 (in->launch) of an instance whose phase 1 succeeded, with the workspace `ws` (one of the
 * errtest_ws modes) says; a failure's message lands in in->message. A mode that needs a workspace
 * on a problem that needs none cannot provoke its error: that is a failed check naming the case
 * (phase 2 then runs normally) and sets *not_run, so that the caller gives no verdict. */
lig_status errtest_phase2(inst *in, int ws, const char *name, int *not_run);

/* The verdict on a provoked call in `phase` (1 or 2): status want (or want_alt when it is not
 * LIG_SUCCESS); a failure's message must pass check_error_message for `names` and contain each
 * non-NULL has[i] (has may be NULL); a failed phase 1 must leave no executor (then cleared). */
void errtest_verdict(const char *name, int phase, lig_status st, lig_status want, lig_status want_alt, inst *in,
                     const char *names, const char *const *has);

/* The verdict on a call made outside an inst (its phase 1, or phase 1 then 2): status want; a
 * failure's message `msg` must pass check_error_message for `names`; no executor may be left
 * (exec, destroyed here). LIG_TEST_SHOW_MESSAGES=1 prints every message, for reading them. */
void errtest_call_verdict(const char *name, lig_status st, lig_status want, const char *msg, const char *names,
                          lig_executor *exec);

/* errtest_call_verdict on the library's last message, which a failure's must also start with
 * "first:" (the parameter it names first). */
void errtest_named_verdict(const char *name, lig_status st, lig_status want, const char *first, lig_executor *exec);

/* The verdict on phase 1 of `op` (its public name) with CUDA tensors, for an operator the CUDA
 * backend does not have: LIG_ERR_PARAM_INVALID, no executor, and a message naming `query` and why
 * (the backend's missing slot, or a build without the CUDA backend). */
void errtest_refused_on_cuda(const char *op, lig_status st, const lig_executor *exec);

/* The base problem's dimensions: tc_init, N1 = 4, N2 = 2, D = 8, K = 3, B = 2, then `edit`
 * (may be NULL) before anything is generated. */
void errtest_base_dims(tcase *tc, void (*edit)(tcase *tc));
/* Its layout, allocated: BSND S1 = 3, S2 = 5, lengths q (3, 2) and k (5, 3) (drawn by gen_bsnd,
 * then set); TND T1 = 4, T2 = 6, ends q (2, 3) and k (4, 5). */
void errtest_base_layout(th_rng *r, tcase *tc, ref_layout layout);

/* A defect of the length arrays of the base problem, which phase 1 must refuse
 * (PARAM_INVALID, naming one of `names`), for every operator that takes them. */
typedef struct errtest_seq_defect {
    const char *name;
    ref_layout layout;
    void (*edit)(tcase *tc); /* after the data is generated */
    const char *names;
} errtest_seq_defect;

extern const errtest_seq_defect errtest_seq_defects[];
extern const size_t errtest_n_seq_defects;

/* A bad sparse_mode, pre_tokens or next_tokens, which phase 1 must refuse (PARAM_INVALID, naming
 * the parameter) for every operator that takes them. */
typedef enum errtest_scalar { ERRTEST_SPARSE_MODE = 0, ERRTEST_PRE_TOKENS, ERRTEST_NEXT_TOKENS } errtest_scalar;

typedef struct errtest_scalar_defect {
    const char *name;
    ref_layout layout;
    errtest_scalar which;
    int64_t value;
} errtest_scalar_defect;

extern const errtest_scalar_defect errtest_mode_band_defects[];
extern const size_t errtest_n_mode_band_defects;
/* The parameter's name: "sparse_mode", "pre_tokens", "next_tokens". */
const char *errtest_scalar_name(errtest_scalar which);

/* What a case breaks in the instance of its valid problem. */
typedef enum errtest_edit {
    ET_NONE = 0,
    ET_NULL_ARG,      /* arg[target] = NULL */
    ET_REPLACE,       /* arg[target] = new tensor (dtype, ndim/shape) */
    ET_ALIAS,         /* arg[target] = contiguous view into buffer `source`, shifted by `shift` elements */
    ET_SELF_OVERLAP,  /* arg[target] = view of its own buffer with stride 0 on dimension 1 */
    ET_LAYOUT,        /* layout = str */
    ET_HEAD_NUM,      /* head_num = value */
    ET_COUNT,         /* sparse_count = value */
    ET_MODE,          /* sparse_mode = value */
    ET_PRE,           /* pre_tokens = value */
    ET_NEXT,          /* next_tokens = value */
    ET_NULL_WS_SIZE,  /* workspace_size pointer NULL */
    ET_NULL_EXEC_PTR  /* executor pointer NULL */
} errtest_edit;

/* One error case: a valid base problem, one thing broken, and what must come of it. */
typedef struct errtest_case {
    const char *name;
    int op;                       /* which of the operator's problems (forward or KL step: op_kind) */
    ref_layout layout;
    void (*edit_dims)(tcase *tc); /* dimensions, before generation */
    void (*edit_data)(tcase *tc); /* after generation, before materialization */
    void (*edit_kc)(klcase *kc);  /* KL step: after generation */
    int no_values;                /* forward: no sparse_values */
    int no_indices;               /* KL step: no sparse_indices */
    errtest_edit kind;
    int target;
    int dtype;   /* ET_REPLACE: -1 keeps the target's dtype */
    int ndim;    /* ET_REPLACE: -1 keeps the target's shape */
    int64_t shape[6];
    int source;  /* ET_ALIAS */
    int64_t shift;
    int64_t value;
    const char *str;
    int phase;   /* 1 or 2: where the failure must surface */
    int ws;      /* errtest_ws, or a mode of the operator's own */
    lig_status want;
    lig_status want_alt;  /* also acceptable (0 = none) */
    const char *names;    /* acceptable parameter names, '|' separated */
    const char *has[2];   /* substrings the message must contain */
} errtest_case;

/* A case's problem, whichever kind the operator makes. */
typedef struct errtest_problem {
    tcase tc;
    klcase kc;
} errtest_problem;

/* One operator's side of the runner. */
typedef struct errtest_operator {
    /* Makes the case's valid problem and its instance. */
    void (*setup)(const errtest_case *c, errtest_problem *p, inst *in);
    /* After the shared edit, what the operator adds to it (NULL: nothing); alias is the view
     * ET_ALIAS placed. */
    void (*after_edit)(const errtest_case *c, const errtest_problem *p, inst *in, unsigned char *alias);
    /* Phase 2 for the case's ws mode (NULL: errtest_phase2); sets *not_run as errtest_phase2 does,
     * after a failed check that says why the case could not run. */
    lig_status (*phase2)(const errtest_case *c, inst *in, int *not_run);
    void (*teardown)(const errtest_case *c, errtest_problem *p, inst *in);
} errtest_operator;

/* Runs each case: setup, the edit, phase 1 (and phase 2 for phase-2 cases), the verdict, every
 * byte unchanged after a failure; a case that fails is named in a note. */
void errtest_run(const errtest_operator *op, const errtest_case *cases, size_t n);

/* The commonest phase-1 defect: a tensor replaced by one of another dtype (dtype >= 0) and/or rank
 * and shape (ndim >= 0), which phase 1 must refuse with PARAM_INVALID naming one of `names`. */
typedef struct errtest_replacement {
    const char *name;
    ref_layout layout;
    void (*edit_dims)(tcase *tc); /* NULL: the default problem's dimensions */
    int target;
    int dtype; /* -1 keeps the target's dtype */
    int ndim;  /* -1 keeps the target's shape */
    int64_t shape[6];
    const char *names;
} errtest_replacement;

/* errtest_run over the replacements, each as its ET_REPLACE case. */
void errtest_run_replacements(const errtest_operator *op, const errtest_replacement *defects, size_t n);

/* The length defects and the mode/band defects above, as phase-1 cases of `op`'s problem `which`. */
void errtest_run_seq_defects(const errtest_operator *op, int which);
void errtest_run_mode_band_defects(const errtest_operator *op, int which);
/* NULL layout, workspace_size and executor pointers (phase 1) and a NULL executor (phase 2), as
 * cases of `op`'s problem `which`. */
void errtest_run_pointer_defects(const errtest_operator *op, int which);
/* A workspace one byte short (BSND and TND), none at all, and NULL with the right size, as
 * phase-2 cases of `op`'s problem `which`. */
void errtest_run_workspace_defects(const errtest_operator *op, int which);

#endif /* LIG_TESTS_HARNESS_ERROR_CASES_H */

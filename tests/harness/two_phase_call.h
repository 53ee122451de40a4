/*
 * The plumbing shared by backward_runner.h (backward) and forward_kl_runner.h (forward, KL step): a set of
 * materialized tensors (tbuf) with the arguments phase 1 receives (tests may replace any of
 * them to provoke an error), the two-phase protocol with a garbage-filled workspace, the
 * "nothing written" / "gaps untouched" checks, extra descriptors and memory owned by the
 * instance, and the result of the whole protocol.
 */
#ifndef LIG_TESTS_HARNESS_TWO_PHASE_CALL_H
#define LIG_TESTS_HARNESS_TWO_PHASE_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensor_buffers.h"
#include "lig.h"
#include "problem_case.h"

#define INST_MAX_BUFS 10
#define INST_MAX_EXTRA 16

typedef struct inst inst;
/* The library call of phase 1 with the stored arguments. */
typedef lig_status (*inst_phase1_fn)(inst *in);
/* The library call of phase 2 (lig_indexer_grad, lig_indexer, lig_kl_loss_and_dy). */
typedef lig_status (*inst_launch_fn)(void *workspace, uint64_t workspace_size, lig_executor *executor,
                                     void *stream);

struct inst {
    int kind; /* op_kind in forward_kl_runner.h; 0 for the backward */
    int nbuf, first_output;
    tbuf buf[INST_MAX_BUFS];
    int present[INST_MAX_BUFS];           /* buffer exists (optional arrays may be absent) */
    const lig_tensor *arg[INST_MAX_BUFS]; /* what phase 1 receives; tests may replace */
    /* scalars: head_num / deterministic (backward), sparse_count (forward), the rest both */
    const char *layout;
    int64_t head_num, sparse_count, sparse_mode, pre_tokens, next_tokens;
    bool deterministic;
    inst_phase1_fn phase1;
    inst_launch_fn launch;
    /* protocol */
    uint64_t workspace_size;
    lig_executor *executor;
    uint64_t *workspace_size_arg;
    lig_executor **executor_arg;
    lig_tensor *extra[INST_MAX_EXTRA]; /* descriptors created by tests, destroyed at teardown */
    int n_extra;
    void *extra_mem[INST_MAX_EXTRA];   /* filled with TB_OUTPUT_FILL; must stay so */
    size_t extra_mem_bytes[INST_MAX_EXTRA];
    int n_extra_mem;
    char message[1024];                /* copy of lig_get_last_error() after the last failure */
};

/* Zeroes the instance and sets what every setup sets. */
void inst_init(inst *in, int kind, int nbuf, int first_output, inst_phase1_fn phase1, inst_launch_fn launch);
/* Shapes of the tcase's tensors (q, k, w, and the slot arrays dy / indices / values); return ndim. */
int inst_shape_q(const tcase *tc, int64_t *s);
int inst_shape_k(const tcase *tc, int64_t *s);
int inst_shape_w(const tcase *tc, int64_t *s);
int inst_shape_slots(const tcase *tc, int64_t *s);
/* actual_seq_qlen / actual_seq_kvlen buffers from the tcase (when it has them), marked present. */
void inst_make_seq(inst *in, const tcase *tc, int sq, int sk);
/* Writes tc's q, k, w into buffers q, k, w, then reads them back into tc so that the logical data
 * equals what the library sees (with stride-0 views, later writes replace earlier ones). */
void inst_load_qkw(inst *in, tcase *tc, int q, int k, int w);
/* Snapshots every present buffer and points its argument at it. */
void inst_snapshot_all(inst *in);

/* When set, called with true just before and with false just after each library call of the
 * protocol (phase 1, phase 2), on the calling thread: a test that changes the thread's state
 * for the library alone, not for the harness's own conversions. */
extern void (*inst_around_library)(bool entering);

/* Phase 1 with the stored arguments; on failure stores the message. */
lig_status inst_phase1(inst *in);
/* Phase 2 with a fresh 0xAB-filled workspace of workspace_size + delta bytes (delta < 0 makes it
 * too small). Consumes the executor. */
lig_status inst_phase2(inst *in, int64_t delta);
/* Every buffer byte-identical to its state before phase 1 (extra memory included). */
int inst_all_unchanged(const inst *in);
/* Inputs unchanged, and output bytes outside the views unchanged. */
int inst_gaps_ok(const inst *in);
void inst_teardown(inst *in);

/* A descriptor (or memory, filled with TB_OUTPUT_FILL) owned by the instance from now on. */
lig_tensor *inst_adopt(inst *in, lig_tensor *t);
void *inst_alloc(inst *in, size_t bytes);
/* A fresh contiguous tensor of the given dtype and shape, filled with TB_OUTPUT_FILL bytes, owned. */
lig_tensor *inst_new_tensor(inst *in, lig_dtype dtype, int ndim, const int64_t *shape);

/* A fresh owned tensor like buffer `which` (dtype, shape) but one longer on its last axis, filled
 * with TB_OUTPUT_FILL: a shape error, since every tensor's last axis is tied to another's or to a
 * count. */
lig_tensor *inst_new_widened(inst *in, int which);
/* Error-test edits of argument `target`. replace: a fresh owned tensor of `dtype` (< 0: the
 * buffer's) and shape (ndim < 0: the buffer's). alias: a view with the target's dtype and shape
 * placed in buffer `source`'s memory, `shift` target elements after its first element (returns
 * where the view starts). */
void inst_replace_arg(inst *in, int target, int dtype, int ndim, const int64_t *shape);
unsigned char *inst_alias_arg(inst *in, int target, int source, int64_t shift);

/* The whole protocol on one problem. Output arrays are filled by the runner that knows them. */
typedef struct inst_result {
    lig_status st1;                  /* phase 1 status */
    lig_status st2;                  /* phase 2 status (LIG_SUCCESS when phase 2 did not run) */
    int phase2_ran;
    uint64_t workspace_size;
    char message[1024];              /* last error after a failure */
    int unchanged;                   /* after a failure: all buffers unchanged */
    int gaps_ok;                     /* after success: inputs unchanged and output gaps untouched */
    int executor_null_after_failure; /* phase 1 failed and left the executor NULL */
    double *dq, *dk, *dw;            /* backward, after success, owned */
    int64_t *idx;                    /* forward, after success */
    double *val;                     /* forward (when with_values), after success */
    double loss;                     /* KL, after success */
    double *dy;                      /* KL, after success */
    unsigned char *raw[3];           /* output buffers' bytes after success (bitwise comparisons) */
    size_t raw_bytes[3];
} inst_result;

/* Phase 1 and phase 2 on a set-up instance, into a zeroed res. On failure records it in res, tears
 * the instance down and returns 0; on success records gaps_ok and returns 1 (the caller reads the
 * outputs, then calls inst_finish). */
int inst_run(inst *in, inst_result *res);
/* After a successful inst_run and the caller's reads: keeps the bytes of buffers which[0..n) (as
 * inst_keep_raw) and tears the instance down. */
void inst_finish(inst *in, inst_result *res, const int *which, int n);
/* After inst_run: 1 when both phases succeeded (the caller compares the outputs). Otherwise 0,
 * with the failure reported and *ok = 0 -- except a PARAM_INVALID from phase 1 when `refused`
 * is not NULL (layouts the library may refuse): then *refused = 1 and *ok says whether the
 * refusal was clean (a message, nothing written, no executor). */
int inst_result_ran(const inst_result *res, const char *label, int *refused, int *ok);
/* Copies the bytes of buffers which[0..n) (skipping negative or absent ones) into res->raw. */
void inst_keep_raw(const inst *in, inst_result *res, const int *which, int n);
void inst_result_free(inst_result *res);

#endif /* LIG_TESTS_HARNESS_TWO_PHASE_CALL_H */

/*
 * Running LightningIndexerGrad on a test case: materialize every tensor (tcase strides), call
 * phase 1 and phase 2 with the arguments stored in a run_inst (tests may replace any of them
 * to provoke an error), and read the outputs back as float64.
 */
#ifndef LIG_TESTS_RUNNER_H
#define LIG_TESTS_RUNNER_H

#include <stdbool.h>
#include <stdint.h>

#include "buffers.h"
#include "lig.h"
#include "tcase.h"

enum {
    RB_Q = 0, RB_K, RB_DY, RB_IDX, RB_W, RB_SQ, RB_SK, /* inputs */
    RB_DQ, RB_DK, RB_DW,                            /* outputs */
    RB_COUNT
};
#define RB_FIRST_OUTPUT RB_DQ

#define RUN_MAX_EXTRA 16

typedef struct run_inst {
    tbuf buf[RB_COUNT];
    int present[RB_COUNT];           /* buffer exists (seq arrays may be absent) */
    const lig_tensor *arg[RB_COUNT]; /* what phase 1 receives; tests may replace */
    int64_t head_num, sparse_mode, pre_tokens, next_tokens;
    const char *layout;
    bool deterministic;
    uint64_t workspace_size;
    lig_executor *executor;
    uint64_t *workspace_size_arg;
    lig_executor **executor_arg;
    lig_tensor *extra[RUN_MAX_EXTRA]; /* descriptors created by tests, destroyed at teardown */
    int n_extra;
    void *extra_mem[RUN_MAX_EXTRA];  /* filled with TB_OUTPUT_FILL; must stay so */
    size_t extra_mem_bytes[RUN_MAX_EXTRA];
    int n_extra_mem;
    char message[1024];               /* copy of lig_get_last_error() after the last failure */
} run_inst;

/* Materializes the case; inputs are then re-read from memory into tc so that the logical data
 * equals what the library sees (this matters for broadcast strides). */
void run_setup(tcase *tc, run_inst *ri);
/* Phase 1 with the stored arguments; on failure stores the message. */
lig_status run_phase1(run_inst *ri);
/* Phase 2 with a fresh garbage-filled workspace of workspace_size + delta bytes (delta < 0 makes it
 * too small). Consumes the executor. */
lig_status run_phase2(run_inst *ri, int64_t delta);
/* Every input and output buffer byte-identical to its state before phase 1 (memory of tensors
 * made by run_new_tensor included). */
int run_all_unchanged(const run_inst *ri);
/* Inputs unchanged and output bytes outside the views unchanged. */
int run_gaps_ok(const run_inst *ri);
/* Outputs as logical float64 arrays shaped like the reference's. */
void run_read_outputs(const run_inst *ri, double *dq, double *dk, double *dw);
void run_teardown(run_inst *ri);

/* A descriptor (or memory) owned by ri from now on. */
lig_tensor *run_adopt(run_inst *ri, lig_tensor *t);
void *run_alloc(run_inst *ri, size_t bytes);
/* A fresh contiguous tensor of the given dtype and shape, filled with TB_OUTPUT_FILL bytes,
 * owned by ri. */
lig_tensor *run_new_tensor(run_inst *ri, lig_dtype dtype, int ndim, const int64_t *shape);

/* The whole protocol for one case. */
typedef struct run_result {
    lig_status st1;           /* phase 1 status */
    lig_status st2;           /* phase 2 status (LIG_SUCCESS when phase 2 did not run) */
    int phase2_ran;
    uint64_t workspace_size;
    char message[1024];       /* last error after a failure */
    int unchanged;            /* all buffers unchanged (meaningful after a failure) */
    int gaps_ok;              /* inputs unchanged and output gaps untouched (after success) */
    int executor_null_after_failure; /* phase 1 failed and left the executor NULL */
    double *dq, *dk, *dw;     /* logical outputs after success, owned */
    unsigned char *raw[3];    /* output buffers' bytes after success (for bitwise comparisons) */
    size_t raw_bytes[3];
} run_result;

void run_case(tcase *tc, run_result *res);
void run_result_free(run_result *res);

#endif /* LIG_TESTS_RUNNER_H */

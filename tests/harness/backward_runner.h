/*
 * Running LightningIndexerGrad on a test case: materialize every tensor (tcase strides), call
 * phase 1 and phase 2 with the arguments stored in a run_inst (tests may replace any of them
 * to provoke an error), and read the outputs back as float64. The protocol itself (phases,
 * checks, owned extras) is two_phase_call.h's.
 */
#ifndef LIG_TESTS_HARNESS_BACKWARD_RUNNER_H
#define LIG_TESTS_HARNESS_BACKWARD_RUNNER_H

#include <stdbool.h>
#include <stdint.h>

#include "tensor_buffers.h"
#include "two_phase_call.h"
#include "lig.h"
#include "problem_case.h"

enum {
    RB_Q = 0, RB_K, RB_DY, RB_IDX, RB_W, RB_SQ, RB_SK, /* inputs */
    RB_DQ, RB_DK, RB_DW,                            /* outputs */
    RB_COUNT
};
#define RB_FIRST_OUTPUT RB_DQ

/* buf/arg indexed by RB_*; scalars head_num, layout, sparse_mode, pre/next_tokens, deterministic. */
typedef inst run_inst;

/* Materializes the case; inputs are then re-read from memory into tc so that the logical data
 * equals what the library sees (this matters for broadcast strides). Then inst_phase1 /
 * inst_phase2 / inst_all_unchanged / inst_gaps_ok / inst_teardown apply. */
void run_setup(tcase *tc, run_inst *ri);
/* Outputs as logical float64 arrays shaped like the reference's. */
void run_read_outputs(const run_inst *ri, double *dq, double *dk, double *dw);

/* The whole protocol for one case: dq, dk, dw and raw[0..3) (dq, dk, dw bytes) after success. */
typedef inst_result run_result;

void run_case(tcase *tc, run_result *res);

#endif /* LIG_TESTS_HARNESS_BACKWARD_RUNNER_H */

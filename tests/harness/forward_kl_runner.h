/*
 * Running the forward (lig_indexer) and the fused KL step (lig_kl_loss_and_dy) on test data,
 * in the style of backward_runner.h: every tensor is materialized with a tcase stride pattern (gaps
 * filled with NaN / absurd integers for inputs and a sentinel for outputs), phase 1 is called
 * with arguments stored in an op_inst (tests may replace any of them), phase 2 gets a fresh
 * garbage-filled workspace, and outputs are read back as float64 / int64.
 */
#ifndef LIG_TESTS_HARNESS_FORWARD_KL_RUNNER_H
#define LIG_TESTS_HARNESS_FORWARD_KL_RUNNER_H

#include <stdint.h>

#include "tensor_buffers.h"
#include "two_phase_call.h"
#include "lig.h"
#include "problem_case.h"

/* Forward buffers. */
enum { FW_Q = 0, FW_K, FW_W, FW_SQ, FW_SK, FW_IDX, FW_VAL, FW_COUNT };
#define FW_FIRST_OUTPUT FW_IDX
/* KL step buffers. */
enum { KL_VAL = 0, KL_IDX, KL_TGT, KL_LOSS, KL_DY, KL_COUNT };
#define KL_FIRST_OUTPUT KL_LOSS

typedef enum op_kind { OP_FORWARD = 0, OP_KL } op_kind;

/* A KL-step problem: `ndim` (1..4) dimensions, rows = product of all but the last, K = last.
 * Logical contiguous arrays [rows][K]. */
typedef struct klcase {
    int ndim;
    int64_t shape[4];
    lig_dtype v_dtype, t_dtype, dy_dtype, idx_dtype;
    int has_indices;
    int loss_ndim;          /* 0: shape [], 1: [1], 2: [1,1] */
    tc_strides in_strides;  /* values, indices, target */
    tc_strides out_strides; /* dy (loss is always a plain scalar) */
    double *values, *target;
    int64_t *idx;
} klcase;

int64_t kl_rows(const klcase *kc);
int64_t kl_K(const klcase *kc);
void kl_init(klcase *kc);
void kl_alloc(klcase *kc); /* zero-filled arrays for the current shape */
/* The shape of values, target and dy (ndim extents; before kl_alloc). */
void kl_set_shape(klcase *kc, int ndim, const int64_t *shape);
void kl_free(klcase *kc);
/* 1 when slot i (flat) counts: index >= 0 with indices, value != -inf without. */
int kl_counted(const klcase *kc, int64_t i);
void kl_describe(const klcase *kc, char *buf, size_t size);

/* buf/arg indexed by FW_* or KL_*; kind is an op_kind; forward scalars layout, sparse_count,
 * sparse_mode, pre/next_tokens. The protocol (inst_phase1, inst_phase2, inst_all_unchanged,
 * inst_gaps_ok, inst_teardown, inst_adopt, inst_alloc, inst_new_tensor) is two_phase_call.h's. */
typedef inst op_inst;

/* Forward: q/k/w/lengths from the tcase (tc->dtype, tc->in_strides; with TC_BROADCAST the
 * logical q/k/w are re-read from memory), sparse_indices [.., K] of tc->idx_dtype (short form
 * when tc->short_form), sparse_values of val_dtype when with_values, outputs with
 * tc->out_strides; sparse_count = tc->p.K. */
void fwd_setup(tcase *tc, int with_values, lig_dtype val_dtype, op_inst *oi);
/* KL step: values/indices/target with kc->in_strides, dy and loss with kc->out_strides. With
 * TC_BROADCAST the logical values/indices/target are re-read from memory. */
void kl_setup(klcase *kc, op_inst *oi);

/* Forward outputs as logical [rows][N2][K] arrays; val may be NULL. */
void fwd_read(const op_inst *oi, int64_t *idx, double *val);
/* KL outputs: loss and dy [rows][K]. */
void kl_read(const op_inst *oi, double *loss, double *dy);

/* The whole protocol on one problem: forward idx (and val), raw[0] idx bytes, raw[1] values
 * bytes; KL loss and dy, raw[0] loss bytes, raw[1] dy bytes. */
typedef inst_result op_result;

void fwd_run(tcase *tc, int with_values, lig_dtype val_dtype, op_result *res);
void kl_run(klcase *kc, op_result *res);

#endif /* LIG_TESTS_HARNESS_FORWARD_KL_RUNNER_H */

/*
 * Running the forward (lig_indexer) and the fused KL step (lig_indexer_kl_grad) on test data,
 * in the style of runner.h: every tensor is materialized with a tcase stride pattern (gaps
 * filled with NaN / absurd integers for inputs and a sentinel for outputs), phase 1 is called
 * with arguments stored in an op_inst (tests may replace any of them), phase 2 gets a fresh
 * garbage-filled workspace, and outputs are read back as float64 / int64.
 */
#ifndef LIG_TESTS_OP_RUNNER_H
#define LIG_TESTS_OP_RUNNER_H

#include <stdint.h>

#include "buffers.h"
#include "lig.h"
#include "tcase.h"

/* Forward buffers. */
enum { FW_Q = 0, FW_K, FW_W, FW_SQ, FW_SK, FW_IDX, FW_VAL, FW_COUNT };
#define FW_FIRST_OUTPUT FW_IDX
/* KL step buffers. */
enum { KL_VAL = 0, KL_IDX, KL_TGT, KL_LOSS, KL_DY, KL_COUNT };
#define KL_FIRST_OUTPUT KL_LOSS

#define OP_MAX_BUFS 8
#define OP_MAX_EXTRA 16

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
void kl_free(klcase *kc);
/* 1 when slot i (flat) counts: index >= 0 with indices, value != -inf without. */
int kl_counted(const klcase *kc, int64_t i);
void kl_describe(const klcase *kc, char *buf, size_t size);

typedef struct op_inst {
    op_kind kind;
    int nbuf, first_output;
    tbuf buf[OP_MAX_BUFS];
    int present[OP_MAX_BUFS];
    const lig_tensor *arg[OP_MAX_BUFS];
    /* forward scalars */
    const char *layout;
    int64_t sparse_count, sparse_mode, pre_tokens, next_tokens;
    /* protocol */
    uint64_t workspace_size;
    lig_executor *executor;
    uint64_t *workspace_size_arg;
    lig_executor **executor_arg;
    lig_tensor *extra[OP_MAX_EXTRA];
    int n_extra;
    void *extra_mem[OP_MAX_EXTRA];
    size_t extra_mem_bytes[OP_MAX_EXTRA];
    int n_extra_mem;
    char message[1024];
} op_inst;

/* Forward: q/k/w/lengths from the tcase (tc->dtype, tc->in_strides; with TC_BROADCAST the
 * logical q/k/w are re-read from memory), sparse_indices [.., K] of tc->idx_dtype (short form
 * when tc->short_form), sparse_values of val_dtype when with_values, outputs with
 * tc->out_strides; sparse_count = tc->p.K. */
void fwd_setup(tcase *tc, int with_values, lig_dtype val_dtype, op_inst *oi);
/* KL step: values/indices/target with kc->in_strides, dy and loss with kc->out_strides. With
 * TC_BROADCAST the logical values/indices/target are re-read from memory. */
void kl_setup(klcase *kc, op_inst *oi);

lig_status op_phase1(op_inst *oi);
/* Phase 2 with a 0xAB-filled workspace of workspace_size + delta bytes; consumes the executor. */
lig_status op_phase2(op_inst *oi, int64_t delta);
/* Every buffer byte-identical to its state before phase 1 (extra memory included). */
int op_all_unchanged(const op_inst *oi);
/* Inputs unchanged, and output bytes outside the views unchanged. */
int op_gaps_ok(const op_inst *oi);
void op_teardown(op_inst *oi);

lig_tensor *op_adopt(op_inst *oi, lig_tensor *t);
void *op_alloc(op_inst *oi, size_t bytes); /* filled with TB_OUTPUT_FILL */
lig_tensor *op_new_tensor(op_inst *oi, lig_dtype dtype, int ndim, const int64_t *shape);

/* Forward outputs as logical [rows][N2][K] arrays; val may be NULL. */
void fwd_read(const op_inst *oi, int64_t *idx, double *val);
/* KL outputs: loss and dy [rows][K]. */
void kl_read(const op_inst *oi, double *loss, double *dy);

/* The whole protocol on one problem. */
typedef struct op_result {
    lig_status st1, st2;
    int phase2_ran;
    uint64_t workspace_size;
    char message[1024];
    int unchanged;                 /* after a failure: nothing written */
    int gaps_ok;                   /* after success */
    int executor_null_after_failure;
    int64_t *idx;                  /* forward, after success */
    double *val;                   /* forward (when with_values), after success */
    double loss;                   /* KL, after success */
    double *dy;                    /* KL, after success */
    unsigned char *raw[2];         /* output buffers' bytes after success */
    size_t raw_bytes[2];
} op_result;

void fwd_run(tcase *tc, int with_values, lig_dtype val_dtype, op_result *res);
void kl_run(klcase *kc, op_result *res);
void op_result_free(op_result *res);

#endif /* LIG_TESTS_OP_RUNNER_H */

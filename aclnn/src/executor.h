/*
 * aclOpExecutor: lig's executor plus the lig tensors it was planned with (kept alive until it
 * runs) and the byte ranges of its arguments, re-checked before it runs.
 */
#ifndef LIG_ACLNN_EXECUTOR_H
#define LIG_ACLNN_EXECUTOR_H

#include <stdint.h>

#include <lig.h>

#include "../include/aclnn/aclnn_base.h"
#include "staging.h"
#include "tensor.h"

#define FE_EXEC_MAX_ARGS 16
#define FE_EXEC_MAX_STAGES 3
#define FE_EXEC_MAX_OWNED 2 /* copies of aclIntArray arguments */

typedef enum fe_op {
    FE_OP_INDEXER_GRAD = 1,
    FE_OP_INDEXER,
    FE_OP_SPARSE_KL_LOSS,
    FE_OP_QUANT_INDEXER,
    FE_OP_INDEXER_V2,
    FE_OP_QUANT_INDEXER_V2,
    FE_OP_INDEXER_V2_METADATA, /* no lig operator: the post step is the whole run */
    FE_OP_QUANT_INDEXER_V2_METADATA
} fe_op;

/* A step run after lig's phase 2 succeeded (what CANN's operator does that lig's does not, e.g.
 * adding outputIdxOffset); `ctx` is malloc'ed and freed with the executor. */
typedef struct fe_post {
    void (*run)(const void *ctx);
    void *ctx;
} fe_post;

struct aclOpExecutor {
    fe_op op;
    lig_executor *lig;
    uint64_t workspace_size;
    int nargs;
    fe_bound args[FE_EXEC_MAX_ARGS];
    int nstages;
    fe_stage stages[FE_EXEC_MAX_STAGES];
    int nowned;
    int64_t *owned[FE_EXEC_MAX_OWNED];
    fe_post post;
};

/* An argument list being bound for phase 1; released unless handed to an executor. */
typedef struct fe_args {
    int n;
    fe_bound b[FE_EXEC_MAX_ARGS];
    int nstages;
    fe_stage stages[FE_EXEC_MAX_STAGES];
    int nowned;
    int64_t *owned[FE_EXEC_MAX_OWNED];
    fe_post post;
} fe_args;

/* Binds `tensor` (NULL allowed when `optional`) and returns its lig tensor in *lt (NULL if absent). */
aclnnStatus fe_args_bind(fe_args *args, const aclTensor *tensor, const char *name, const char *api, bool optional,
                         lig_tensor **lt);
/* One tensor argument for fe_args_bind_list. */
typedef struct fe_arg_spec {
    const aclTensor *tensor;
    const char *name;
    bool optional;
    lig_tensor **lt;
} fe_arg_spec;
/* fe_args_bind for each of `n` arguments in order; the first failure's status. */
aclnnStatus fe_args_bind_list(fe_args *args, const fe_arg_spec *spec, int n, const char *api);
/* Binds `array` (NULL allowed: *lt = NULL), a live aclIntArray, as an INT64 [size] lig tensor over a
 * copy of its values that the argument list (then the executor) owns: CANN reads such arrays in
 * phase 1, and the caller may destroy the array before phase 2. */
aclnnStatus fe_args_bind_int_array(fe_args *args, const aclIntArray *array, const char *name, const char *api,
                                   lig_tensor **lt);
void fe_args_release(fe_args *args);
/* Replaces the bound lig tensor *lt (one of args') by another view of memory the same argument
 * covers (a reshape the operator needs; the byte bounds stay the argument's): `data` with `dtype`,
 * `ndim` extents and element strides. */
aclnnStatus fe_args_reshape(fe_args *args, lig_tensor **lt, void *data, lig_dtype dtype, int64_t ndim,
                            const int64_t *shape, const int64_t *strides, const char *name, const char *api);
/* Hands `buf` (malloc'ed) to the argument list, which frees it; false (and `buf` freed) when it
 * holds FE_EXEC_MAX_OWNED already. */
bool fe_args_own(fe_args *args, int64_t *buf);
/* A contiguous INT64 host tensor over `data` (which the list owns or outlives it), no caller bytes. */
aclnnStatus fe_args_host_int64(fe_args *args, int64_t *data, int64_t ndim, const int64_t *shape, const char *name,
                               const char *api, lig_tensor **lt);
/* Stages the already-bound `tensor` (see staging.h) and returns the FLOAT32 lig tensor over its buffer. */
aclnnStatus fe_args_stage(fe_args *args, const aclTensor *tensor, const char *name, const char *api, bool output,
                          lig_tensor **lt);

/* The end of every operator's phase 1, once lig's phase 1 returned `planned` (with `lig` and
 * `workspace_size`): on success wraps lig's executor (taking ownership of it and of `args`),
 * registers the result and sets both outputs; on failure releases what it holds and sets the
 * status. */
aclnnStatus fe_executor_plan(fe_op op, lig_status planned, lig_executor *lig, uint64_t workspace_size, fe_args *args,
                             const char *api, uint64_t *workspace_size_out, aclOpExecutor **executor_out);

/* Phase 2: validates the executor, stream and workspace, runs lig, and frees the executor
 * whether or not it ran. */
aclnnStatus fe_executor_run(fe_op op, void *workspace, uint64_t workspace_size, aclOpExecutor *executor,
                            aclrtStream stream, const char *api);

/* Frees an executor that the registry no longer holds. */
void fe_executor_release(aclOpExecutor *executor);

#endif /* LIG_ACLNN_EXECUTOR_H */

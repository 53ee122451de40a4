#include "executor.h"

#include <stdint.h>
#include <stdlib.h>

#include "checked.h"
#include "errmsg.h"
#include "registry.h"
#include "runtime.h"

aclnnStatus fe_args_bind(fe_args *args, const aclTensor *tensor, const char *name, const char *api, bool optional,
                         lig_tensor **lt) {
    *lt = NULL;
    if (!tensor) {
        if (optional) return ACLNN_SUCCESS;
        return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api, "%s: expected a tensor, got nullptr", name);
    }
    if (args->n == FE_EXEC_MAX_ARGS) return fe_fail(ACLNN_ERR_INNER, api, "%s: too many tensor arguments", name);
    aclnnStatus st = fe_tensor_bind(tensor, name, api, &args->b[args->n]);
    if (st != ACLNN_SUCCESS) return st;
    *lt = args->b[args->n++].lt;
    return ACLNN_SUCCESS;
}

aclnnStatus fe_args_bind_list(fe_args *args, const fe_arg_spec *spec, int n, const char *api) {
    for (int i = 0; i < n; i++) {
        aclnnStatus st = fe_args_bind(args, spec[i].tensor, spec[i].name, api, spec[i].optional, spec[i].lt);
        if (st != ACLNN_SUCCESS) return st;
    }
    return ACLNN_SUCCESS;
}

aclnnStatus fe_args_bind_int_array(fe_args *args, const aclIntArray *array, const char *name, const char *api,
                                   lig_tensor **lt) {
    *lt = NULL;
    if (!array) return ACLNN_SUCCESS;
    if (!fe_reg_has(array, FE_KIND_INT_ARRAY))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "%s: %p is not a live array from aclCreateIntArray", name,
                       (const void *)array);
    if (args->n == FE_EXEC_MAX_ARGS || args->nowned == FE_EXEC_MAX_OWNED)
        return fe_fail(ACLNN_ERR_INNER, api, "%s: too many array arguments", name);
    if (array->size > (uint64_t)INT64_MAX / sizeof(int64_t) || array->size > SIZE_MAX / sizeof(int64_t) - 1)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "%s: expected an array that fits in memory, got %llu values",
                       name, (unsigned long long)array->size);
    int64_t *copy = malloc((size_t)(array->size + 1) * sizeof(int64_t));
    if (!copy) return fe_fail(ACLNN_ERR_RUNTIME_ERROR, api, "%s: out of memory for a copy of %llu values", name,
                              (unsigned long long)array->size);
    for (uint64_t i = 0; i < array->size; i++) copy[i] = array->values[i];
    args->owned[args->nowned++] = copy;
    const int64_t shape[1] = {(int64_t)array->size};
    *lt = lig_create_tensor(copy, LIG_INT64, 1, shape, NULL);
    if (!*lt) return fe_fail_lig_param(LIG_ERR_PARAM_INVALID, api, name);
    args->b[args->n++] = (fe_bound){.lt = *lt, .lo = 0, .hi = 0, .name = name}; /* no caller bytes to re-check */
    return ACLNN_SUCCESS;
}

void fe_args_release(fe_args *args) {
    for (int i = 0; i < args->n; i++) lig_destroy_tensor(args->b[i].lt);
    for (int i = 0; i < args->nstages; i++) fe_stage_release(&args->stages[i]);
    for (int i = 0; i < args->nowned; i++) free(args->owned[i]);
    free(args->post.ctx);
    args->n = args->nstages = args->nowned = 0;
    args->post = (fe_post){0};
}

aclnnStatus fe_args_reshape(fe_args *args, lig_tensor **lt, void *data, lig_dtype dtype, int64_t ndim,
                            const int64_t *shape, const int64_t *strides, const char *name, const char *api) {
    for (int i = 0; i < args->n; i++) {
        if (args->b[i].lt != *lt) continue;
        lig_tensor *view = lig_create_tensor(data, dtype, ndim, shape, strides);
        if (!view) return fe_fail_lig_param(LIG_ERR_PARAM_INVALID, api, name);
        lig_destroy_tensor(args->b[i].lt);
        args->b[i].lt = *lt = view;
        return ACLNN_SUCCESS;
    }
    return fe_fail(ACLNN_ERR_INNER, api, "%s: not a bound argument", name);
}

bool fe_args_own(fe_args *args, int64_t *buf) {
    if (args->nowned == FE_EXEC_MAX_OWNED) {
        free(buf);
        return false;
    }
    args->owned[args->nowned++] = buf;
    return true;
}

aclnnStatus fe_args_host_int64(fe_args *args, int64_t *data, int64_t ndim, const int64_t *shape, const char *name,
                               const char *api, lig_tensor **lt) {
    if (args->n == FE_EXEC_MAX_ARGS) return fe_fail(ACLNN_ERR_INNER, api, "%s: too many tensor arguments", name);
    *lt = lig_create_tensor(data, LIG_INT64, ndim, shape, NULL);
    if (!*lt) return fe_fail_lig_param(LIG_ERR_PARAM_INVALID, api, name);
    args->b[args->n++] = (fe_bound){.lt = *lt, .lo = 0, .hi = 0, .name = name};
    return ACLNN_SUCCESS;
}

aclnnStatus fe_args_stage(fe_args *args, const aclTensor *tensor, const char *name, const char *api, bool output,
                          lig_tensor **lt) {
    if (args->n == FE_EXEC_MAX_ARGS || args->nstages == FE_EXEC_MAX_STAGES)
        return fe_fail(ACLNN_ERR_INNER, api, "%s: too many staged arguments", name);
    /* a broadcast view (zero strides) may have far more elements than its storage: its FLOAT32
     * copy is checked before anything is allocated, and must fit in the memory malloc can give */
    int64_t bytes = 0;
    if (!fe_mul_ok(tensor->numel, (int64_t)sizeof(float), &bytes) || (uint64_t)bytes > SIZE_MAX / 2)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                       "%s: expected a view whose FLOAT32 copy fits in memory (at most SIZE_MAX / 2 bytes), got %lld "
                       "elements",
                       name, (long long)tensor->numel);
    fe_stage *s = &args->stages[args->nstages];
    if (!fe_stage_init(s, tensor, output)) {
        fe_stage_release(s);
        return fe_fail(ACLNN_ERR_RUNTIME_ERROR, api, "%s: out of memory for a FLOAT32 copy of %lld elements", name,
                       (long long)tensor->numel);
    }
    args->nstages++;
    *lt = lig_create_tensor(s->buf, LIG_FLOAT32, s->ndim, s->shape, NULL);
    if (!*lt) return fe_fail_lig_param(LIG_ERR_PARAM_INVALID, api, name);
    args->b[args->n++] = (fe_bound){.lt = *lt, .lo = 0, .hi = 0, .name = name};
    return ACLNN_SUCCESS;
}

static aclnnStatus create(fe_op op, lig_executor *lig, uint64_t workspace_size, fe_args *args, const char *api,
                          aclOpExecutor **out) {
    aclOpExecutor *e = malloc(sizeof *e);
    if (!e || !fe_reg_add(e, 0, FE_KIND_EXECUTOR)) {
        free(e);
        if (lig) lig_destroy_executor(lig);
        fe_args_release(args);
        return fe_fail(ACLNN_ERR_INNER_CREATE_EXECUTOR, api, "out of memory for an executor");
    }
    e->op = op;
    e->lig = lig;
    e->workspace_size = workspace_size;
    e->nargs = args->n;
    for (int i = 0; i < args->n; i++) e->args[i] = args->b[i];
    e->nstages = args->nstages;
    for (int i = 0; i < args->nstages; i++) e->stages[i] = args->stages[i];
    e->nowned = args->nowned;
    for (int i = 0; i < args->nowned; i++) e->owned[i] = args->owned[i];
    e->post = args->post;
    args->n = args->nstages = args->nowned = 0;
    args->post = (fe_post){0};
    *out = e;
    return ACLNN_SUCCESS;
}

aclnnStatus fe_executor_plan(fe_op op, lig_status planned, lig_executor *lig, uint64_t workspace_size, fe_args *args,
                             const char *api, uint64_t *workspace_size_out, aclOpExecutor **executor_out) {
    if (planned != LIG_SUCCESS) {
        fe_args_release(args);
        return fe_fail_lig(planned, api);
    }
    aclOpExecutor *e = NULL; /* create sets it on success; gcc cannot see that once it inlines create */
    aclnnStatus st = create(op, lig, workspace_size, args, api, &e);
    if (st != ACLNN_SUCCESS) return st;
    *workspace_size_out = workspace_size;
    *executor_out = e;
    return ACLNN_SUCCESS;
}

void fe_executor_release(aclOpExecutor *e) {
    if (e->lig) lig_destroy_executor(e->lig);
    for (int i = 0; i < e->nargs; i++) lig_destroy_tensor(e->args[i].lt);
    for (int i = 0; i < e->nstages; i++) fe_stage_release(&e->stages[i]);
    for (int i = 0; i < e->nowned; i++) free(e->owned[i]);
    free(e->post.ctx);
    free(e);
}

static const char *op_name(fe_op op) {
    switch (op) {
    case FE_OP_INDEXER_GRAD: return "aclnnLightningIndexerGradGetWorkspaceSize";
    case FE_OP_INDEXER: return "aclnnLightningIndexerGetWorkspaceSize";
    case FE_OP_SPARSE_KL_LOSS: return "aclnnSparseLightningIndexerGradKLLossGetWorkspaceSize";
    case FE_OP_QUANT_INDEXER: return "aclnnQuantLightningIndexerGetWorkspaceSize";
    case FE_OP_INDEXER_V2: return "aclnnLightningIndexerV2GetWorkspaceSize";
    case FE_OP_QUANT_INDEXER_V2: return "aclnnQuantLightningIndexerV2GetWorkspaceSize";
    case FE_OP_INDEXER_V2_METADATA: return "aclnnLightningIndexerV2MetadataGetWorkspaceSize";
    case FE_OP_QUANT_INDEXER_V2_METADATA: return "aclnnQuantLightningIndexerV2MetadataGetWorkspaceSize";
    }
    return "an unknown operator";
}

/* lig's phase 2 of the operator the executor was planned for. */
static lig_status run_lig(fe_op op, void *workspace, uint64_t workspace_size, lig_executor *lx) {
    switch (op) {
    case FE_OP_INDEXER_GRAD: return lig_indexer_grad(workspace, workspace_size, lx, NULL);
    case FE_OP_INDEXER:
    case FE_OP_INDEXER_V2: return lig_indexer(workspace, workspace_size, lx, NULL);
    case FE_OP_SPARSE_KL_LOSS: return lig_sparse_indexer_grad_kl_loss(workspace, workspace_size, lx, NULL);
    case FE_OP_QUANT_INDEXER:
    case FE_OP_QUANT_INDEXER_V2: return lig_quant_indexer(workspace, workspace_size, lx, NULL);
    case FE_OP_INDEXER_V2_METADATA:
    case FE_OP_QUANT_INDEXER_V2_METADATA: return LIG_SUCCESS; /* planned without lig */
    }
    lig_destroy_executor(lx);
    return LIG_ERR_INNER;
}

/* Everything phase 2 checks before lig runs; the executor is already out of the registry. */
static aclnnStatus check_run(fe_op op, const aclOpExecutor *e, void *workspace, uint64_t workspace_size,
                             aclrtStream stream, const char *api) {
    if (e->op != op)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api, "executor: it was made by %s, not for this operator",
                       op_name(e->op));
    if (!fe_stream_is_valid(stream))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                       "stream: %p is not NULL or a live stream from aclrtCreateStream; nothing was computed", stream);
    if (workspace_size < e->workspace_size)
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                       "workspaceSize: expected at least %llu bytes (the size phase 1 returned), got %llu",
                       (unsigned long long)e->workspace_size, (unsigned long long)workspace_size);
    if (workspace_size > 0) {
        fe_entry m;
        if (!workspace || !fe_reg_find_mem(workspace, &m))
            return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                           "workspace: expected %llu bytes of memory from aclrtMalloc, got %p, which is not in "
                           "such memory",
                           (unsigned long long)workspace_size, workspace);
        uint64_t avail = (uint64_t)(m.size - ((uintptr_t)workspace - m.addr));
        if (workspace_size > avail)
            return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                           "workspaceSize: %llu bytes at %p run past the end of their allocation (%zu bytes at %p)",
                           (unsigned long long)workspace_size, workspace, m.size, (void *)m.addr);
    }
    for (int i = 0; i < e->nargs; i++)
        if (!fe_bound_still_valid(&e->args[i]))
            return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                           "%s: its memory was freed (or shrank) after phase 1; nothing was computed",
                           e->args[i].name);
    return ACLNN_SUCCESS;
}

aclnnStatus fe_executor_run(fe_op op, void *workspace, uint64_t workspace_size, aclOpExecutor *e, aclrtStream stream,
                            const char *api) {
    if (!e) return fe_fail(ACLNN_ERR_PARAM_NULLPTR, api, "executor: expected the executor phase 1 returned, got nullptr");
    if (!fe_reg_remove(e, FE_KIND_EXECUTOR))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, api,
                       "executor: %p is not a live executor (never made by phase 1, or it already ran)", (void *)e);
    aclnnStatus st = check_run(op, e, workspace, workspace_size, stream, api);
    if (st == ACLNN_SUCCESS) {
        for (int i = 0; i < e->nstages; i++)
            if (!e->stages[i].output) fe_stage_widen(&e->stages[i]);
        lig_executor *lx = e->lig;
        e->lig = NULL; /* lig's phase 2 consumes it, success or not */
        lig_status ls = run_lig(op, workspace, workspace_size, lx);
        if (ls != LIG_SUCCESS) st = fe_fail_lig(ls, api);
        for (int i = 0; i < e->nstages && st == ACLNN_SUCCESS; i++)
            if (e->stages[i].output) fe_stage_narrow(&e->stages[i]);
        if (st == ACLNN_SUCCESS && e->post.run) e->post.run(e->post.ctx);
    }
    fe_executor_release(e);
    return st;
}

aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor) {
    if (!executor) return ACLNN_SUCCESS;
    if (!fe_reg_remove(executor, FE_KIND_EXECUTOR))
        return fe_fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyAclOpExecutor",
                       "executor: %p is not a live executor (never made, or it already ran)", (void *)executor);
    fe_executor_release(executor);
    return ACLNN_SUCCESS;
}

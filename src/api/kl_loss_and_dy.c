/* lig_kl_loss_and_dy: phase 1 validates and has the backend plan the step; phase 2 runs it.
 * The step: the KL loss between a target distribution p and softmax(I)
 * over the selected slots, and its gradient dy = softmax(I) * sum(p) - p. */
#include <stdlib.h>
#include <string.h>

#include "api/executor.h"
#include "api/argument_checks.h"
#include "core/error.h"
#include "core/size.h"
#include "core/tensor.h"

static lig_slot_view slot_view(const lig_tensor *t) {
    lig_slot_view v = {.data = t->data, .dtype = t->dtype, .esize = (int64_t)lig_dtype_size(t->dtype)};
    memcpy(v.strides, t->strides, sizeof v.strides);
    return v;
}

lig_status lig_kl_loss_and_dy_get_workspace_size(const lig_tensor *sparse_values, const lig_tensor *sparse_indices,
                                                  const lig_tensor *target, const lig_tensor *loss,
                                                  const lig_tensor *dy, uint64_t *workspace_size,
                                                  lig_executor **executor) {
    const lig_argument list[] = {
        LIG_ARGUMENT(sparse_values, LIG_ARG_INPUT), LIG_ARGUMENT(sparse_indices, LIG_ARG_OPTIONAL_INPUT),
        LIG_ARGUMENT(target, LIG_ARG_INPUT), LIG_ARGUMENT(loss, LIG_ARG_OUTPUT), LIG_ARGUMENT(dy, LIG_ARG_OUTPUT)};
    const lig_arguments args = LIG_ARGUMENTS_OF(list);
    lig_status st = lig_check_phase1_pointers(&args, false, NULL, workspace_size, executor);
    if (st != LIG_SUCCESS) return st;

    if (sparse_values->ndim < 1) {
        char got[LIG_SHAPE_BUF];
        return lig_fail(LIG_ERR_PARAM_INVALID, "sparse_values: expected rank >= 1 ([..., K]), got rank 0 shape %s",
                        lig_format_shape(got, sizeof got, 0, sparse_values->shape));
    }
    if ((st = lig_check_float_dtype(sparse_values, "sparse_values")) != LIG_SUCCESS) return st;
    if ((st = lig_check_float_dtype(target, "target")) != LIG_SUCCESS) return st;
    if ((st = lig_check_float_dtype(dy, "dy")) != LIG_SUCCESS) return st;
    if (sparse_indices && (st = lig_check_index_dtype(sparse_indices, "sparse_indices")) != LIG_SUCCESS) return st;
    const int64_t nd = sparse_values->ndim;
    const int64_t *shape = sparse_values->shape;
    if ((st = lig_check_shape(target, "target", nd, shape, "like sparse_values")) != LIG_SUCCESS) return st;
    if ((st = lig_check_shape(dy, "dy", nd, shape, "like sparse_values")) != LIG_SUCCESS) return st;
    if (sparse_indices &&
        (st = lig_check_shape(sparse_indices, "sparse_indices", nd, shape, "like sparse_values")) != LIG_SUCCESS)
        return st;
    if ((st = lig_check_loss_scalar(loss)) != LIG_SUCCESS) return st;
    lig_placement placed;
    if ((st = lig_check_placement(&args, &placed)) != LIG_SUCCESS) return st;

    /* with K = 0 the rows are not bounded by the tensor's element count */
    uint64_t rows = 1;
    for (int64_t d = 0; d + 1 < nd; d++) rows = lig_size_mul(rows, (uint64_t)shape[d]);
    char got[LIG_SHAPE_BUF];
    if ((st = lig_size_check(rows, "sparse_values", "the number of rows (the product of all extents but the last)",
                             lig_format_shape(got, sizeof got, nd, shape))) != LIG_SUCCESS)
        return st;
    lig_kl_dy_problem *pb = calloc(1, sizeof *pb);
    if (!pb) return lig_fail(LIG_ERR_RUNTIME, "executor: expected memory for a plan, got none");
    pb->ndim = nd;
    memcpy(pb->shape, shape, sizeof pb->shape);
    pb->K = shape[nd - 1];
    pb->rows = (int64_t)rows;
    pb->values = slot_view(sparse_values);
    pb->target = slot_view(target);
    pb->dy = slot_view(dy);
    pb->has_indices = sparse_indices != NULL;
    if (sparse_indices) pb->indices = slot_view(sparse_indices);
    pb->loss = loss->data;

    return lig_executor_plan(LIG_OP_KL_LOSS_AND_DY, placed, pb, free, workspace_size, executor);
}

lig_status lig_kl_loss_and_dy(void *workspace, uint64_t workspace_size, lig_executor *executor, void *stream) {
    return lig_executor_run(executor, LIG_OP_KL_LOSS_AND_DY, workspace, workspace_size, stream);
}

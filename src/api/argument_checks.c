#include "api/argument_checks.h"

#include <string.h>

#include "core/error.h"
#include "core/tensor.h"

static bool is_required(lig_argument_role role) { return role == LIG_ARG_INPUT || role == LIG_ARG_OUTPUT; }
static bool is_output(lig_argument_role role) { return role == LIG_ARG_OUTPUT || role == LIG_ARG_OPTIONAL_OUTPUT; }

lig_status lig_check_phase1_pointers(const lig_arguments *args, bool check_layout, const char *layout,
                                     const uint64_t *workspace_size, lig_executor *const *executor) {
    for (size_t i = 0; i < args->n; i++)
        if (is_required(args->list[i].role) && !args->list[i].tensor)
            return lig_fail(LIG_ERR_PARAM_NULLPTR, "%s: expected a tensor, got NULL", args->list[i].name);
    if (check_layout && !layout)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "layout: expected \"BSND\" or \"TND\", got NULL");
    if (!workspace_size)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "workspace_size: expected a pointer to receive the size, got NULL");
    if (!executor) return lig_fail(LIG_ERR_PARAM_NULLPTR, "executor: expected a pointer to receive the plan, got NULL");
    return LIG_SUCCESS;
}

lig_status lig_check_layout(const char *layout, bool *tnd) {
    if (strcmp(layout, "BSND") == 0) {
        *tnd = false;
        return LIG_SUCCESS;
    }
    if (strcmp(layout, "TND") == 0) {
        *tnd = true;
        return LIG_SUCCESS;
    }
    return lig_fail(LIG_ERR_PARAM_INVALID, "layout: expected \"BSND\" or \"TND\", got \"%.32s\"", layout);
}

lig_status lig_check_rank(const lig_tensor *t, const char *name, int64_t rank, const char *form) {
    if (t->ndim == rank) return LIG_SUCCESS;
    char got[LIG_SHAPE_BUF];
    return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected rank %lld (%s), got rank %lld shape %s", name,
                    (long long)rank, form, (long long)t->ndim, lig_format_shape(got, sizeof got, t->ndim, t->shape));
}

lig_status lig_check_float_dtype(const lig_tensor *t, const char *name) {
    if (lig_dtype_is_float(t->dtype)) return LIG_SUCCESS;
    return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected dtype FLOAT32, FLOAT16 or BFLOAT16, got %s", name,
                    lig_dtype_name(t->dtype));
}

lig_status lig_check_loss_scalar(const lig_tensor *loss) {
    if (loss->dtype != LIG_FLOAT32)
        return lig_fail(LIG_ERR_PARAM_INVALID, "loss: expected dtype FLOAT32, got %s", lig_dtype_name(loss->dtype));
    if (lig_tensor_numel(loss) != 1) {
        char got[LIG_SHAPE_BUF];
        return lig_fail(LIG_ERR_PARAM_INVALID, "loss: expected one element (shape [] or [1]), got shape %s",
                        lig_format_shape(got, sizeof got, loss->ndim, loss->shape));
    }
    return LIG_SUCCESS;
}

lig_status lig_check_index_dtype(const lig_tensor *t, const char *name) {
    if (lig_dtype_is_index(t->dtype)) return LIG_SUCCESS;
    return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected dtype INT32 or INT64, got %s", name,
                    lig_dtype_name(t->dtype));
}

lig_status lig_check_same_dtype(const lig_tensor *t, const char *name, const lig_tensor *ref, const char *ref_name) {
    if (t->dtype == ref->dtype) return LIG_SUCCESS;
    return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected dtype %s (like %s), got %s", name,
                    lig_dtype_name(ref->dtype), ref_name, lig_dtype_name(t->dtype));
}

lig_status lig_check_shape(const lig_tensor *t, const char *name, int64_t ndim, const int64_t *expect,
                           const char *why) {
    bool same = t->ndim == ndim;
    for (int64_t i = 0; same && i < ndim; i++) same = t->shape[i] == expect[i];
    if (same) return LIG_SUCCESS;
    char want[LIG_SHAPE_BUF], got[LIG_SHAPE_BUF];
    return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected shape %s (%s), got %s", name,
                    lig_format_shape(want, sizeof want, ndim, expect), why,
                    lig_format_shape(got, sizeof got, t->ndim, t->shape));
}

lig_status lig_check_mask_args(int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens) {
    if (sparse_mode != 0 && sparse_mode != 3)
        return lig_fail(LIG_ERR_PARAM_INVALID, "sparse_mode: expected 0 (band) or 3 (right-down causal), got %lld",
                        (long long)sparse_mode);
    if (pre_tokens < 0)
        return lig_fail(LIG_ERR_PARAM_INVALID, "pre_tokens: expected a value >= 0 (INT64_MAX for no band), got %lld",
                        (long long)pre_tokens);
    if (next_tokens < 0)
        return lig_fail(LIG_ERR_PARAM_INVALID, "next_tokens: expected a value >= 0 (INT64_MAX for no band), got %lld",
                        (long long)next_tokens);
    return LIG_SUCCESS;
}

static bool ranges_intersect(const lig_tensor *a, const lig_tensor *b) {
    uintptr_t alo, ahi, blo, bhi;
    lig_tensor_byte_range(a, &alo, &ahi);
    lig_tensor_byte_range(b, &blo, &bhi);
    return alo < ahi && blo < bhi && alo < bhi && blo < ahi;
}

static lig_status check_outputs_disjoint(const lig_arguments *args) {
    for (size_t i = 0; i < args->n; i++) {
        const lig_argument *out = &args->list[i];
        if (!out->tensor || !is_output(out->role)) continue;
        if (lig_tensor_self_overlaps(out->tensor))
            return lig_fail(LIG_ERR_PARAM_INVALID,
                            "%s: expected strides that give every element its own memory, got overlapping strides",
                            out->name);
        for (size_t j = 0; j < args->n; j++) {
            const lig_argument *in = &args->list[j];
            if (in->tensor && !is_output(in->role) && ranges_intersect(out->tensor, in->tensor))
                return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected memory disjoint from the input %s, got an overlap",
                                out->name, in->name);
        }
        for (size_t j = 0; j < i; j++) {
            const lig_argument *earlier = &args->list[j];
            if (earlier->tensor && is_output(earlier->role) && ranges_intersect(out->tensor, earlier->tensor))
                return lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected memory disjoint from the output %s, got an overlap",
                                out->name, earlier->name);
        }
    }
    return LIG_SUCCESS;
}

static lig_status check_backend(const lig_arguments *args, lig_placement *placement) {
    const lig_argument *first = NULL;
    for (size_t i = 0; i < args->n; i++) {
        const lig_argument *a = &args->list[i];
        const lig_tensor *t = a->tensor;
        if (!t || a->role == LIG_ARG_HOST_LENGTHS) continue;
        if (!first) {
            first = a;
            continue;
        }
        const lig_tensor *f = first->tensor;
        if (t->device != f->device || t->device_index != f->device_index)
            return lig_fail(LIG_ERR_PARAM_INVALID,
                            "%s: expected a tensor on the device of %s (%s device %d), got a tensor on %s device %d",
                            a->name, first->name, lig_device_name(f->device), f->device_index,
                            lig_device_name(t->device), t->device_index);
    }
    placement->backend = lig_backend_for(first ? first->tensor->device : LIG_DEVICE_HOST, first ? first->name : "query");
    placement->device_index = first ? first->tensor->device_index : 0;
    placement->tensor_name = first ? first->name : "query";
    return placement->backend ? LIG_SUCCESS : LIG_ERR_PARAM_INVALID;
}

static lig_status check_lengths_on_host(const lig_arguments *args) {
    for (size_t i = 0; i < args->n; i++) {
        const lig_argument *a = &args->list[i];
        if (a->role == LIG_ARG_HOST_LENGTHS && a->tensor && a->tensor->device != LIG_DEVICE_HOST)
            return lig_fail(LIG_ERR_PARAM_INVALID,
                            "%s: expected a host tensor (phase 1 reads the sequence lengths), got a tensor on %s device %d",
                            a->name, lig_device_name(a->tensor->device), a->tensor->device_index);
    }
    return LIG_SUCCESS;
}

lig_status lig_check_placement(const lig_arguments *args, lig_placement *placement) {
    lig_status st;
    if ((st = check_outputs_disjoint(args)) != LIG_SUCCESS) return st;
    if ((st = check_backend(args, placement)) != LIG_SUCCESS) return st;
    return check_lengths_on_host(args);
}

/* Phase-1 pieces of the operators over compressed keys (compressed_arguments.h). */
#include "api/compressed_arguments.h"

#include "api/argument_checks.h"
#include "api/problem_arguments.h"
#include "core/compressed_keys.h"
#include "core/error.h"
#include "core/tensor.h"

lig_status lig_check_compressed_qkw(const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights,
                                    const char *layout, lig_problem *pr) {
    lig_status st;
    if ((st = lig_check_float_dtype(query, "query")) != LIG_SUCCESS) return st;
    if (weights->dtype != query->dtype && weights->dtype != LIG_FLOAT32)
        return lig_fail(LIG_ERR_PARAM_INVALID, "weights: expected dtype %s (like query) or FLOAT32, got %s",
                        lig_dtype_name(query->dtype), lig_dtype_name(weights->dtype));
    lig_tensor weights_as_query = *weights; /* the shared checks compare the dtypes: checked above */
    weights_as_query.dtype = query->dtype;
    return lig_problem_check_qkw(query, key, &weights_as_query, layout, pr);
}

lig_status lig_check_softmax_lse(const lig_problem *pr, const lig_tensor *lse) {
    if (lse->dtype != LIG_FLOAT32)
        return lig_fail(LIG_ERR_PARAM_INVALID, "softmax_lse: expected dtype FLOAT32, got %s", lig_dtype_name(lse->dtype));
    int64_t expect[3], n = 0;
    if (!pr->tnd) expect[n++] = pr->B;
    expect[n++] = pr->N2;
    expect[n++] = pr->S1;
    return lig_check_shape(lse, "softmax_lse", n, expect, pr->tnd ? "[N2,T1] like query and key" : "[B,N2,S1] like query and key");
}

lig_view4 lig_softmax_lse_view(const lig_problem *pr, const lig_tensor *t) {
    lig_view4 v = {.data = t->data, .dtype = t->dtype, .esize = lig_dtype_size(t->dtype)};
    const int at = pr->tnd ? 0 : 1; /* the N2 axis */
    v.batch = pr->tnd ? 0 : t->strides[0];
    v.head = t->strides[at];
    v.row = t->strides[at + 1];
    return v;
}

lig_status lig_compressed_phase1_begin(const lig_arguments *args, const char *layout, uint64_t *workspace_size,
                                       lig_executor **executor, const lig_tensor *query, const lig_tensor *key,
                                       const lig_tensor *weights, lig_problem *pr) {
    lig_status st = lig_check_phase1_pointers(args, true, layout, workspace_size, executor);
    if (st != LIG_SUCCESS) return st;
    if ((st = lig_check_compressed_qkw(query, key, weights, layout, pr)) != LIG_SUCCESS) return st;
    pr->K = 0;
    return LIG_SUCCESS;
}

lig_status lig_compressed_phase1_rule(const lig_arguments *args, int64_t mask_mode, int64_t cmp_ratio,
                                      lig_placement *placed) {
    const lig_compressed_keys scalars = {.mask_mode = mask_mode, .ratio = cmp_ratio};
    lig_status st = lig_compressed_keys_check(&scalars, 0);
    if (st != LIG_SUCCESS) return st;
    return lig_check_placement(args, placed);
}

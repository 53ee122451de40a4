#include "api/forward_plan.h"

#include <stdlib.h>
#include <string.h>

#include "api/argument_checks.h"
#include "api/problem_arguments.h"
#include "core/error.h"
#include "core/tensor.h"

static void free_problem(void *p) {
    lig_fwd_problem *pb = p;
    lig_problem_free(&pb->pr);
    free(pb->piece_start);
    free(pb);
}

/* sparse_values: the query's dtype or FLOAT32; for the quantized forward (whose query is no
 * float) any float dtype. */
static lig_status check_values(const lig_fwd_args *a) {
    const lig_tensor *v = a->sparse_values;
    if (a->quant) return lig_check_float_dtype(v, "sparse_values");
    if (v->dtype != a->query->dtype && v->dtype != LIG_FLOAT32)
        return lig_fail(LIG_ERR_PARAM_INVALID, "sparse_values: expected dtype %s (like query) or FLOAT32, got %s",
                        lig_dtype_name(a->query->dtype), lig_dtype_name(v->dtype));
    return LIG_SUCCESS;
}

/* The three forwards' table of tensor arguments (argument_checks.h), made from `a` in one place:
 * the key is named by key_name, the paged indexer's block_table and the quantized forward's key
 * scales are required, every other optional tensor may be NULL. */
enum { FWD_ARGUMENTS = 10 };

static lig_arguments fwd_arguments(const lig_fwd_args *a, lig_argument list[FWD_ARGUMENTS]) {
    const lig_argument table[FWD_ARGUMENTS] = {
        {a->query, "query", LIG_ARG_INPUT},
        {a->key, a->key_name, LIG_ARG_INPUT},
        {a->weights, "weights", LIG_ARG_INPUT},
        {a->block_table, "block_table", a->block_table_required ? LIG_ARG_INPUT : LIG_ARG_OPTIONAL_INPUT},
        {a->actual_seq_lengths_query, "actual_seq_lengths_query", LIG_ARG_HOST_LENGTHS},
        {a->actual_seq_lengths_key, "actual_seq_lengths_key", LIG_ARG_HOST_LENGTHS},
        {a->query_dequant_scale, "query_dequant_scale", LIG_ARG_OPTIONAL_INPUT},
        {a->key_dequant_scale, "key_dequant_scale", a->quant ? LIG_ARG_INPUT : LIG_ARG_OPTIONAL_INPUT},
        {a->sparse_indices, "sparse_indices", LIG_ARG_OUTPUT},
        {a->sparse_values, "sparse_values", LIG_ARG_OPTIONAL_OUTPUT},
    };
    memcpy(list, table, sizeof table);
    return (lig_arguments){list, FWD_ARGUMENTS};
}

lig_status lig_fwd_check_pointers(const lig_fwd_args *a, bool check_layout, const char *layout,
                                  const uint64_t *workspace_size, lig_executor *const *executor) {
    lig_argument list[FWD_ARGUMENTS];
    const lig_arguments args = fwd_arguments(a, list);
    return lig_check_phase1_pointers(&args, check_layout, layout, workspace_size, executor);
}

lig_status lig_fwd_check_outputs(lig_problem *pr, const lig_fwd_args *a, bool *short_form) {
    lig_status st;
    if (a->sparse_count < 1)
        return lig_fail(LIG_ERR_PARAM_INVALID, "sparse_count: expected a value >= 1, got %lld",
                        (long long)a->sparse_count);
    if ((st = lig_check_index_dtype(a->sparse_indices, "sparse_indices")) != LIG_SUCCESS) return st;
    if ((st = lig_problem_check_slots(pr, a->sparse_indices, "sparse_indices", a->sparse_count,
                                      "rows like query, N2 like key, K = sparse_count", short_form)) != LIG_SUCCESS)
        return st;
    pr->K = a->sparse_count;
    if (!a->sparse_values) return LIG_SUCCESS;
    if ((st = check_values(a)) != LIG_SUCCESS) return st;
    return lig_check_shape(a->sparse_values, "sparse_values", a->sparse_indices->ndim, a->sparse_indices->shape,
                           "like sparse_indices");
}

lig_status lig_fwd_check_index_range(const lig_tensor *sparse_indices, int64_t S2) {
    if (sparse_indices->dtype == LIG_INT32 && S2 > (int64_t)INT32_MAX + 1)
        return lig_fail(LIG_ERR_PARAM_INVALID,
                        "sparse_indices: expected dtype INT64 for key lengths above 2^31 (S2 = %lld), got INT32",
                        (long long)S2);
    return LIG_SUCCESS;
}

lig_status lig_plan_forward(lig_op op, lig_problem pr, const lig_fwd_args *a, uint64_t *workspace_size,
                            lig_executor **executor) {
    lig_status st;
    bool short_form;
    if ((st = lig_fwd_check_outputs(&pr, a, &short_form)) != LIG_SUCCESS) return st;
    if ((st = lig_check_mask_args(a->sparse_mode, a->pre_tokens, a->next_tokens)) != LIG_SUCCESS) return st;

    lig_argument list[FWD_ARGUMENTS];
    const lig_arguments args = fwd_arguments(a, list);
    lig_placement placed;
    if ((st = lig_check_placement(&args, &placed)) != LIG_SUCCESS) return st;

    st = lig_problem_resolve(&pr, a->sparse_mode, a->pre_tokens, a->next_tokens, a->actual_seq_lengths_query,
                             a->actual_seq_lengths_key);
    if (st != LIG_SUCCESS) return st;
    const lig_tensor *table = a->block_table;
    if (table && table->shape[0] != pr.B) {
        const int64_t expect[2] = {pr.B, table->shape[1]};
        lig_problem_free(&pr);
        return lig_check_shape(table, "block_table", 2, expect, "B like actual_seq_lengths_query");
    }
    if ((st = lig_fwd_check_index_range(a->sparse_indices, pr.S2)) != LIG_SUCCESS) {
        lig_problem_free(&pr);
        return st;
    }
    lig_fwd_problem *pb = lig_fwd_problem_make(pr, a, short_form);
    if (!pb) return lig_fail(LIG_ERR_RUNTIME, "executor: expected memory for a plan, got none");
    return lig_fwd_plan_publish(op, placed, pb, workspace_size, executor);
}

lig_fwd_problem *lig_fwd_problem_make(lig_problem pr, const lig_fwd_args *a, bool short_form) {
    lig_fwd_problem *pb = calloc(1, sizeof *pb);
    if (!pb) {
        lig_problem_free(&pr);
        return NULL;
    }
    const lig_tensor *table = a->block_table;
    pb->pr = pr;
    pb->q = lig_problem_view(&pr, a->query, true, true);
    pb->k = table ? lig_problem_cache_view(a->key) : lig_problem_view(&pr, a->key, true, true);
    pb->w = lig_problem_view(&pr, a->weights, true, false);
    pb->no_topk = a->sparse_indices == NULL;
    if (a->sparse_indices) pb->idx = lig_problem_view(&pr, a->sparse_indices, !short_form, true);
    pb->has_values = a->sparse_values != NULL;
    if (a->sparse_values) pb->val = lig_problem_view(&pr, a->sparse_values, !short_form, true);
    if (table)
        pb->table = (lig_block_table){.data = table->data, .dtype = table->dtype, .esize = lig_dtype_size(table->dtype),
                                      .batch = table->strides[0], .step = table->strides[1], .blocks = table->shape[1]};
    pb->quant = a->quant;
    if (a->quant) {
        pb->sk = table ? lig_problem_cache_scale_view(a->key_dequant_scale)
                       : lig_problem_view(&pr, a->key_dequant_scale, true, false);
        pb->has_sq = a->query_dequant_scale != NULL;
        if (pb->has_sq) pb->sq = lig_problem_view(&pr, a->query_dequant_scale, true, false);
    }
    return pb;
}

lig_status lig_fwd_plan_publish(lig_op op, lig_placement placed, lig_fwd_problem *pb, uint64_t *workspace_size,
                                lig_executor **executor) {
    lig_backend_plan plan = {0};
    const lig_status st = placed.backend->plan_indexer(pb, &plan);
    return lig_executor_publish(op, placed, pb, free_problem, st, &plan, workspace_size, executor);
}

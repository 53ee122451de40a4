/* LightningIndexer: phase 1 validates (docs/contract.md sections 2.1, 3-6) and has the backend plan the
 * problem; phase 2 runs the plan. Keys come from a key tensor (BSND or TND, like the query)
 * or from a paged key cache read through a block table. */
#include <stdlib.h>

#include "api/executor.h"
#include "api/problem_arguments.h"
#include "api/argument_checks.h"
#include "core/error.h"
#include "core/tensor.h"

static void free_problem(void *p) {
    lig_fwd_problem *pb = p;
    lig_problem_free(&pb->pr);
    free(pb);
}

/* The checks after the query/key/weights ones, the problem and the plan, for both forms.
 * `key` is the key tensor or the cache, `block_table` NULL unless paged. */
static lig_status plan_forward(lig_problem pr, const lig_tensor *query, const lig_tensor *key,
                               const lig_tensor *block_table, const lig_tensor *weights,
                               const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key,
                               int64_t sparse_count, int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
                               const lig_tensor *sparse_indices, const lig_tensor *sparse_values,
                               uint64_t *workspace_size, lig_executor **executor) {
    lig_status st;
    const char *key_name = block_table ? "key_cache" : "key";
    if (sparse_count < 1)
        return lig_fail(LIG_ERR_PARAM_INVALID, "sparse_count: expected a value >= 1, got %lld", (long long)sparse_count);
    if ((st = lig_check_index_dtype(sparse_indices, "sparse_indices")) != LIG_SUCCESS) return st;
    bool short_form;
    if ((st = lig_problem_check_slots(&pr, sparse_indices, "sparse_indices", sparse_count,
                                      "rows like query, N2 like key, K = sparse_count", &short_form)) != LIG_SUCCESS)
        return st;
    pr.K = sparse_count;
    if (sparse_values) {
        if (sparse_values->dtype != query->dtype && sparse_values->dtype != LIG_FLOAT32)
            return lig_fail(LIG_ERR_PARAM_INVALID, "sparse_values: expected dtype %s (like query) or FLOAT32, got %s",
                            lig_dtype_name(query->dtype), lig_dtype_name(sparse_values->dtype));
        if ((st = lig_check_shape(sparse_values, "sparse_values", sparse_indices->ndim, sparse_indices->shape,
                                  "like sparse_indices")) != LIG_SUCCESS)
            return st;
    }
    if ((st = lig_check_mask_args(sparse_mode, pre_tokens, next_tokens)) != LIG_SUCCESS) return st;

    const lig_named_tensor inputs[] = {
        {query, "query"}, {key, key_name}, {weights, "weights"}, {block_table, "block_table"},
        {actual_seq_lengths_query, "actual_seq_lengths_query"}, {actual_seq_lengths_key, "actual_seq_lengths_key"},
    };
    const lig_named_tensor outputs[] = {{sparse_indices, "sparse_indices"}, {sparse_values, "sparse_values"}};
    if ((st = lig_check_outputs_disjoint(outputs, 2, inputs, 6)) != LIG_SUCCESS) return st;

    /* every tensor but the host-side length arrays lives on the device that runs the plan */
    const lig_named_tensor on_device[] = {{query, "query"}, {key, key_name}, {weights, "weights"},
                                          {block_table, "block_table"}, {sparse_indices, "sparse_indices"},
                                          {sparse_values, "sparse_values"}};
    lig_placement placed;
    if ((st = lig_check_backend(on_device, 6, &placed)) != LIG_SUCCESS) return st;
    if ((st = lig_check_lengths_on_host(actual_seq_lengths_query, actual_seq_lengths_key)) != LIG_SUCCESS) return st;

    st = lig_problem_resolve(&pr, sparse_mode, pre_tokens, next_tokens, actual_seq_lengths_query,
                             actual_seq_lengths_key);
    if (st != LIG_SUCCESS) return st;
    if (block_table && block_table->shape[0] != pr.B) {
        const int64_t expect[2] = {pr.B, block_table->shape[1]};
        lig_problem_free(&pr);
        return lig_check_shape(block_table, "block_table", 2, expect, "B like actual_seq_lengths_query");
    }
    if (sparse_indices->dtype == LIG_INT32 && pr.S2 > (int64_t)INT32_MAX + 1) {
        lig_problem_free(&pr);
        return lig_fail(LIG_ERR_PARAM_INVALID,
                        "sparse_indices: expected dtype INT64 for key lengths above 2^31 (S2 = %lld), got INT32",
                        (long long)pr.S2);
    }
    lig_fwd_problem *pb = calloc(1, sizeof *pb);
    if (!pb) {
        lig_problem_free(&pr);
        return lig_fail(LIG_ERR_RUNTIME, "executor: expected memory for a plan, got none");
    }
    pb->pr = pr;
    pb->q = lig_problem_view(&pr, query, true, true);
    pb->k = block_table ? lig_problem_cache_view(key) : lig_problem_view(&pr, key, true, true);
    pb->w = lig_problem_view(&pr, weights, true, false);
    pb->idx = lig_problem_view(&pr, sparse_indices, !short_form, true);
    pb->has_values = sparse_values != NULL;
    if (sparse_values) pb->val = lig_problem_view(&pr, sparse_values, !short_form, true);
    if (block_table)
        pb->table = (lig_block_table){.data = block_table->data, .dtype = block_table->dtype,
                                      .esize = lig_dtype_size(block_table->dtype), .batch = block_table->strides[0],
                                      .step = block_table->strides[1], .blocks = block_table->shape[1]};

    lig_backend_plan plan = {0};
    st = placed.backend->plan_indexer(pb, &plan);
    return lig_executor_publish(LIG_OP_INDEXER, placed, pb, free_problem, st, &plan, workspace_size, executor);
}

lig_status lig_indexer_get_workspace_size(const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights,
                                          const lig_tensor *actual_seq_lengths_query,
                                          const lig_tensor *actual_seq_lengths_key, const char *layout,
                                          int64_t sparse_count, int64_t sparse_mode, int64_t pre_tokens,
                                          int64_t next_tokens, const lig_tensor *sparse_indices,
                                          const lig_tensor *sparse_values, uint64_t *workspace_size,
                                          lig_executor **executor) {
    lig_status st;
    const lig_named_tensor required[] = {
        {query, "query"}, {key, "key"}, {weights, "weights"}, {sparse_indices, "sparse_indices"}};
    if ((st = lig_check_phase1_pointers(required, sizeof required / sizeof required[0], true, layout, workspace_size,
                                        executor)) != LIG_SUCCESS)
        return st;
    lig_problem pr;
    if ((st = lig_problem_check_qkw(query, key, weights, layout, &pr)) != LIG_SUCCESS) return st;
    return plan_forward(pr, query, key, NULL, weights, actual_seq_lengths_query, actual_seq_lengths_key, sparse_count,
                        sparse_mode, pre_tokens, next_tokens, sparse_indices, sparse_values, workspace_size, executor);
}

lig_status lig_indexer_paged_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key_cache, const lig_tensor *block_table, const lig_tensor *weights,
    const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key, const char *layout,
    int64_t sparse_count, int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
    const lig_tensor *sparse_indices, const lig_tensor *sparse_values, uint64_t *workspace_size,
    lig_executor **executor) {
    lig_status st;
    const lig_named_tensor required[] = {{query, "query"},
                                         {key_cache, "key_cache"},
                                         {block_table, "block_table"},
                                         {weights, "weights"},
                                         {sparse_indices, "sparse_indices"}};
    if ((st = lig_check_phase1_pointers(required, sizeof required / sizeof required[0], true, layout, workspace_size,
                                        executor)) != LIG_SUCCESS)
        return st;
    lig_problem pr;
    if ((st = lig_problem_check_paged_qkw(query, key_cache, block_table, weights, layout, &pr)) != LIG_SUCCESS)
        return st;
    return plan_forward(pr, query, key_cache, block_table, weights, actual_seq_lengths_query, actual_seq_lengths_key,
                        sparse_count, sparse_mode, pre_tokens, next_tokens, sparse_indices, sparse_values,
                        workspace_size, executor);
}

lig_status lig_indexer(void *workspace, uint64_t workspace_size, lig_executor *executor, void *stream) {
    return lig_executor_run(executor, LIG_OP_INDEXER, workspace, workspace_size, stream);
}

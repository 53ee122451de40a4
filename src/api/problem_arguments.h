/* Phase-1 checks the forward and the backward share: layout, query/key/weights, the
 * slot-shaped tensors ([B,S1,N2,K] or [B,S1,K]), masks and sequence lengths. */
#ifndef LIG_API_PROBLEM_ARGUMENTS_H
#define LIG_API_PROBLEM_ARGUMENTS_H

#include "core/compressed_keys.h"
#include "core/problem.h"

/* Validates layout, ranks, dtypes (one float type) and shapes of query, key and weights and
 * fills the geometry of *p (K, B for TND and the rows are filled later). */
lig_status lig_problem_check_qkw(const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights,
                                 const char *layout, lig_problem *p);
/* The same, naming the tensors query_index and key_index (the fused KL loss's indexer inputs). */
lig_status lig_problem_check_index_qkw(const lig_tensor *query_index, const lig_tensor *key_index,
                                       const lig_tensor *weights, const char *layout, lig_problem *p);

/* The forwards' query, key and weights in the layout already checked (tnd): as above, or, `quant`
 * (the quantized forwards), query and key both FLOAT8_E4M3FN or both INT8, weights FLOAT32,
 * FLOAT16 or BFLOAT16. */
lig_status lig_problem_check_fwd_qkw(const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights, bool tnd,
                                     bool quant, lig_problem *p);

/* The same for a paged key cache [num_blocks, block_size, N2, D] (named key_cache, or key when
 * `quant`) read through block_table [B, max_blocks_per_seq] (INT32 or INT64): fills p with S2 =
 * max_blocks_per_seq * block_size (the most keys a batch can have). The table's
 * rows are checked once the batches are known (forward_checks.c). */
lig_status lig_problem_check_paged_qkw(const lig_tensor *query, const lig_tensor *key_cache,
                                       const lig_tensor *block_table, const lig_tensor *weights, bool tnd, bool quant,
                                       lig_problem *p);

/* Checks a slot tensor's rank and shape: [B,S1,N2,K] | [T1,N2,K], or without N2 when
 * N2 == 1. K < 0 takes K from the tensor (stored in p->K); otherwise K must match. */
lig_status lig_problem_check_slots(lig_problem *p, const lig_tensor *t, const char *name, int64_t K,
                                   const char *why, bool *short_form);

/* The indexer tensors of a backward-shaped problem: LightningIndexerGrad's, and the indexer part of
 * the KL loss (query_index, key_index and their gradients). */
typedef struct lig_grad_tensors {
    const lig_tensor *query, *key, *weights, *sparse_indices, *d_query, *d_key, *d_weights;
} lig_grad_tensors;

/* The end of a backward-shaped phase 1, every argument checked: resolves the mask and the sequence
 * lengths into pr (lig_problem_resolve) and fills g with it, `deterministic` and the views of t
 * (sparse_indices in the short form when short_form); g->dy is the caller's. On failure nothing in
 * g needs freeing. */
lig_status lig_grad_problem_fill(lig_grad_problem *g, lig_problem pr, const lig_grad_tensors *t, bool short_form,
                                 bool deterministic, int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
                                 const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key);

/* The end of a compressed-key phase 1 (contract 4.1), every other argument checked: checks the
 * rule's mask_mode and cmp_ratio, resolves the sequence lengths into *pr with no band (every entry of a batch exists for every valid row; the
 * rule narrows it), reads `res` (may be NULL: all 0; INT32 or INT64 [B] on the host, named
 * cmp_residual_k) into rule->residual (allocated) and checks each batch's rule (messages name the
 * parameter and the batch). On failure nothing needs freeing; on success free pr with
 * lig_problem_free and rule->residual with free. */
lig_status lig_problem_resolve_compressed(lig_problem *pr, const lig_tensor *actual_seq_lengths_query,
                                          const lig_tensor *actual_seq_lengths_key, const lig_tensor *res,
                                          int64_t mask_mode, int64_t ratio, lig_compressed_rule *rule);

/* A statistics tensor of the main attention's forward: FLOAT32 [B,1,S1,n1] (BSND) or [1,T1,n1]
 * (TND), as CANN's attention writes them; its view addresses (b, t, head) through lig_q_row_ptr. */
lig_status lig_problem_check_statistic(const lig_problem *pr, const lig_tensor *t, const char *name, int64_t n1);
lig_view4 lig_problem_statistic_view(const lig_problem *pr, const lig_tensor *t);

#endif

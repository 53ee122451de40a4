/* Phase-1 checks the forward and the backward share: layout, query/key/weights, the
 * slot-shaped tensors ([B,S1,N2,K] or [B,S1,K]), masks and sequence lengths. */
#ifndef LIG_API_PROBLEM_H
#define LIG_API_PROBLEM_H

#include "plan/problem.h"

/* Validates layout, ranks, dtypes (one float type) and shapes of query, key and weights and
 * fills the geometry of *p (K, B for TND and the rows are filled later). */
lig_status lig_problem_check_qkw(const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights,
                                 const char *layout, lig_problem *p);

/* Checks a slot tensor's rank and shape: [B,S1,N2,K] | [T1,N2,K], or without N2 when
 * N2 == 1. K < 0 takes K from the tensor (stored in p->K); otherwise K must match. */
lig_status lig_problem_check_slots(lig_problem *p, const lig_tensor *t, const char *name, int64_t K,
                                   const char *why, bool *short_form);

/* Stores the mask arguments (already valid) and resolves the sequence lengths into rows and
 * units. On failure nothing needs freeing. */
lig_status lig_problem_resolve(lig_problem *p, int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
                               const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key);

/* The normalised view of a query- or key-row tensor (see plan/problem.h); `has_head` is false
 * for the short slot forms, `has_dim` false for weights. */
lig_view4 lig_problem_view(const lig_problem *p, const lig_tensor *t, bool has_head, bool has_dim);

#endif

/* Validation of actual_seq_lengths_query / _key and their per-batch normal form,
 * shared by every operator that takes them. */
#ifndef LIG_API_SEQ_LENGTHS_H
#define LIG_API_SEQ_LENGTHS_H

#include <stdbool.h>
#include <stdint.h>

#include "lig.h"

typedef struct lig_batches {
    int64_t B;
    /* One allocation of 5*B + 1 values: per batch the valid query and key lengths and the
     * first query/key row (TND; 0 for BSND), then the valid query rows before each batch. */
    int64_t *lq, *lk, *q_base, *k_base, *row_prefix;
} lig_batches;

/* BSND: B, S1, S2 from the shapes; the arrays are optional lengths (0..S).
 * TND: B comes from the arrays (required cumulative ends), S1/S2 are T1/T2.
 * Reads the host arrays, validates them, fills *out (free with lig_batches_free). */
lig_status lig_batches_resolve(bool tnd, int64_t B, int64_t S1, int64_t S2,
                               const lig_tensor *actual_seq_lengths_query,
                               const lig_tensor *actual_seq_lengths_key, lig_batches *out);
void lig_batches_free(lig_batches *batches);

#endif

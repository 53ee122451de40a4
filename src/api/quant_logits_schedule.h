/* The logits operator's schedule (docs/contract.md 2.6): DeepGEMM's get_paged_mqa_logits_metadata
 * form, an INT32 [W+1, 2] host tensor whose entry w = (batch, key block) is where worker w's piece
 * starts in the order (batch, block of block_size keys of that batch's longest key_end), entry W =
 * (B, 0). lig_quant_logits_schedule computes a balanced one; the operator checks one it is given
 * and runs its pieces as jobs. */
#ifndef LIG_API_QUANT_LOGITS_SCHEDULE_H
#define LIG_API_QUANT_LOGITS_SCHEDULE_H

#include <stdint.h>

#include "core/problem.h"

/* Reads and checks the entries of a schedule whose dtype and shape are checked (forward_checks.c)
 * against the resolved problem (batch b has ceil(lk[b] / block_size)
 * blocks): the first at block 0 of the order, each in range (b < B: block <= the batch's count;
 * b = B: block 0), none before the one it follows, the last (B, 0). On success *pieces = W and
 * *starts holds W + 1 global block numbers then B + 1 batch offsets (one allocation, the caller's). */
lig_status lig_logits_schedule_read(const lig_tensor *schedule, const lig_problem *pr, int64_t block_size,
                                    int64_t **starts, int64_t *pieces);

#endif

/* Passes of lig_indexer_grad shared between its source files. */
#ifndef LIG_OPERATORS_INDEXER_GRAD_INTERNAL_H
#define LIG_OPERATORS_INDEXER_GRAD_INTERNAL_H

#include "plan/indexer_grad_plan.h"

/* Reads every index of every valid row and fails, naming the lowest bad slot, on a value
 * < -1 or >= Lk. */
lig_status lig_grad_check_indices(const lig_indexer_grad_plan *p, int threads);

#endif

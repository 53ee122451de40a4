/* The opaque executor: a tagged plan, so phase 2 can tell which operator made it. */
#ifndef LIG_API_EXECUTOR_H
#define LIG_API_EXECUTOR_H

#include <stdint.h>

#include "lig.h"

typedef enum lig_executor_kind {
    /* "lig" + n: not values a stray pointer tends to hold */
    LIG_EXECUTOR_INDEXER_GRAD = 0x6c696701,
    LIG_EXECUTOR_INDEXER = 0x6c696702,
    LIG_EXECUTOR_INDEXER_KL_GRAD = 0x6c696703
} lig_executor_kind;

struct lig_executor {
    lig_executor_kind kind;
    void *plan;
    void (*free_plan)(void *plan);
};

/* Wraps `plan` (ownership moves in) or frees it and returns NULL when out of memory. */
lig_executor *lig_executor_create(lig_executor_kind kind, void *plan, void (*free_plan)(void *));

/* Name of the phase-1 function that makes executors of `kind`, for messages. */
const char *lig_executor_kind_maker(lig_executor_kind kind);

/* Phase 2's common start: checks the executor (NULLPTR / made by another operator) and
 * returns its plan, or NULL with the failure in *status. `expected` is the executor's kind. */
void *lig_executor_plan(lig_executor *executor, lig_executor_kind expected, lig_status *status);

/* Phase 2's argument checks: no stream on the CPU, a workspace of at least `needed` bytes. */
lig_status lig_check_run_args(void *workspace, uint64_t workspace_size, uint64_t needed, lig_executor_kind kind,
                              void *stream);

#endif

/* The opaque executor: a tagged plan, so phase 2 can tell which operator made it. */
#ifndef LIG_API_EXECUTOR_H
#define LIG_API_EXECUTOR_H

#include "lig.h"

typedef enum lig_executor_kind {
    LIG_EXECUTOR_INDEXER_GRAD = 0x6c696701 /* "lig" + 1: not a value a stray pointer tends to hold */
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

#endif

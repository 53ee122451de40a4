/* The opaque executor: which operator made it, the backend that planned it, the operator's
 * problem (owned) and the backend's plan. Phase 1 of every operator ends in lig_executor_plan,
 * phase 2 is lig_executor_run. */
#ifndef LIG_API_EXECUTOR_H
#define LIG_API_EXECUTOR_H

#include <stdint.h>

#include "backends/backend.h"
#include "lig.h"

typedef enum lig_op {
    /* "lig" + n: not values a stray pointer tends to hold */
    LIG_OP_INDEXER_GRAD = 0x6c696701,
    LIG_OP_INDEXER = 0x6c696702,
    LIG_OP_KL_LOSS_AND_DY = 0x6c696703,
    LIG_OP_QUANT_INDEXER = 0x6c696704,
    LIG_OP_SPARSE_INDEXER_GRAD_KL_LOSS = 0x6c696705,
    LIG_OP_QUANT_LOGITS = 0x6c696706,
    LIG_OP_INDEXER_PAGED = 0x6c696707, /* phase 2 is lig_indexer's (contract 2.1) */
    LIG_OP_DENSE_INDEXER_SOFTMAX_LSE = 0x6c696708,
    LIG_OP_SPARSE_LOGITS = 0x6c696709,
    LIG_OP_DENSE_INDEXER_KL_LOSS_GRAD = 0x6c69670a,
    LIG_OP_SOFTMAX_L1_NORM = 0x6c69670b
} lig_op;

struct lig_executor {
    lig_op op;
    const lig_backend *backend;
    int device_index; /* the tensors' ordinal on the backend's device */
    void *problem;
    void (*free_problem)(void *problem);
    lig_backend_plan plan;
};

/* Phase 1's last step: has the backend of `placement` plan `problem` with its slot for `op` and, on
 * success, wraps problem and plan into a new executor and stores it with the workspace size. A
 * backend whose slot for `op` is NULL has no such operator: refused here by name, the one place
 * that does. On any failure frees the problem (with free_problem) and returns the failure. */
lig_status lig_executor_plan(lig_op op, lig_placement placement, void *problem, void (*free_problem)(void *),
                             uint64_t *workspace_size, lig_executor **executor);

/* Phase 2 of every operator: checks the executor (made by phase 1 of `op`), the stream (with
 * its backend), the device and the workspace, runs the plan, and frees the executor whatever happened. */
lig_status lig_executor_run(lig_executor *executor, lig_op op, void *workspace, uint64_t workspace_size, void *stream);

#endif

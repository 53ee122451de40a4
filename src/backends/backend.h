/* The seam between the API and the backends. Phase 1 (api/) validates the arguments, builds
 * the backend-neutral problem (core/problem.h) and asks the backend of the tensors' device for
 * a plan; phase 2 (api/executor.c) checks the workspace and runs the plan. A backend is a
 * folder under backends/ plus one entry in backends/registry.c. */
#ifndef LIG_BACKENDS_BACKEND_H
#define LIG_BACKENDS_BACKEND_H

#include <stdint.h>

#include "core/problem.h"
#include "core/tensor.h"
#include "lig.h"

/* What a backend's planner returns: an owned plan and how to run and free it. */
typedef struct lig_backend_plan {
    void *plan;
    uint64_t workspace_size; /* exact; 0 when the plan needs no workspace */
    const char *kernel_set;  /* the kernels the plan runs, e.g. "avx2" (static storage) */
    /* Runs inside a workspace of at least workspace_size bytes (NULL when that is 0). */
    lig_status (*run)(void *plan, void *workspace, void *stream);
    void (*free)(void *plan);
} lig_backend_plan;

/* Planners keep a pointer to the problem: it lives in the executor until the plan is freed. */
typedef struct lig_backend {
    const char *name;
    lig_device device;
    /* Phase 2's stream argument: LIG_SUCCESS when this backend accepts it. */
    lig_status (*check_stream)(void *stream);
    lig_status (*plan_indexer_grad)(const lig_grad_problem *problem, lig_backend_plan *out);
    lig_status (*plan_indexer)(const lig_fwd_problem *problem, lig_backend_plan *out);
    lig_status (*plan_indexer_kl_grad)(const lig_kl_problem *problem, lig_backend_plan *out);
} lig_backend;

/* The backend for tensors on `device`, or NULL (with the error set) when this build has none. */
const lig_backend *lig_backend_for(lig_device device, const char *tensor_name);

/* lig_cuda_workspace_status behind the seam: the CUDA backend's reading of a workspace's status,
 * or LIG_ERR_PARAM_INVALID in a build without CUDA. */
lig_status lig_backend_workspace_status(const void *workspace, void *stream);

#endif

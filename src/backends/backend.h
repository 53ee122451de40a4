/* The seam between the API and the backends. Phase 1 (api/) validates the arguments, builds
 * the backend-neutral problem (core/problem.h) and asks the backend of the tensors' device for
 * a plan; phase 2 (api/executor.c) checks the workspace and runs the plan. A backend is a
 * folder under backends/ plus one entry in backends/registry.c; its lig_backend is written with
 * designated initializers, so that a slot added here is NULL (refused by name) in every backend
 * that does not fill it, never a shifted neighbour. */
#ifndef LIG_BACKENDS_BACKEND_H
#define LIG_BACKENDS_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dense_kl_grad_problem.h"
#include "core/dense_lse_problem.h"
#include "core/fwd_problem.h"
#include "core/problem.h"
#include "core/softmax_l1_norm_problem.h"
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

/* Planners keep a pointer to the problem: it lives in the executor until the plan is freed.
 * Everything device-specific is a member: adding a backend (HIP, Ascend) is a folder, a line in
 * registry.c and CMake, nothing in api/ or lig.h. */
typedef struct lig_backend {
    const char *name;
    lig_device device;
    /* Phase 2, before the plan runs: the stream argument is one this backend accepts. */
    lig_status (*check_stream)(void *stream);
    /* Phase 2, before the plan runs: the tensors' device ordinal is the device work would run on
     * (CUDA: the current device). Phase 1 touches no device, so this waits for phase 2. */
    lig_status (*check_device)(int device_index);
    /* One planner slot per operator, each named after the operator's phase-2 function. NULL: this
     * backend has no such operator; phase 1 then refuses it by name, naming the operator and the
     * backend (api/executor.c, the one place that does). */
    lig_status (*plan_indexer_grad)(const lig_grad_problem *problem, lig_backend_plan *out);
    lig_status (*plan_indexer)(const lig_fwd_problem *problem, lig_backend_plan *out);
    /* The forward over a paged key cache (problem->paged set). */
    lig_status (*plan_indexer_paged)(const lig_fwd_problem *problem, lig_backend_plan *out);
    /* The quantized forward (problem->scales set; paged or not). */
    lig_status (*plan_quant_indexer)(const lig_fwd_problem *problem, lig_backend_plan *out);
    /* The quantized logits (problem->scales and problem->ranges set; logits, schedule optional). */
    lig_status (*plan_quant_logits)(const lig_fwd_problem *problem, lig_backend_plan *out);
    /* The sparse logits (problem->scales, ->ranges and ->sparse set; paged or not). */
    lig_status (*plan_sparse_logits)(const lig_fwd_problem *problem, lig_backend_plan *out);
    lig_status (*plan_kl_loss_and_dy)(const lig_kl_dy_problem *problem, lig_backend_plan *out);
    /* The KL loss with the main attention's target (contract 2.5). */
    lig_status (*plan_sparse_indexer_grad_kl_loss)(const lig_grad_kl_loss_problem *problem, lig_backend_plan *out);
    /* The indexer's softmax log-sum-exp over compressed keys (contract 2.7). */
    lig_status (*plan_dense_indexer_softmax_lse)(const lig_dense_lse_problem *problem, lig_backend_plan *out);
    /* The dense KL gradient over compressed keys (contract 2.9). */
    lig_status (*plan_dense_indexer_kl_loss_grad)(const lig_dense_kl_grad_problem *problem, lig_backend_plan *out);
    /* The main attention's head-mean softmax target over compressed keys (contract 2.10). */
    lig_status (*plan_sparse_flash_mla_softmax_l1_norm)(const lig_l1_norm_problem *problem, lig_backend_plan *out);
    /* lig_workspace_status for this device: the verdict its phase 2 left in the workspace, read
     * after `stream` (when not NULL) has completed. NULL: phase 2 returns its verdict itself. */
    lig_status (*workspace_status)(const void *workspace, void *stream);
    /* The same verdict from a host copy of the status (at the workspace's aligned base). */
    lig_status (*status_verdict)(const void *status_host);
    /* The backend's choice of kernel sets (lig_set_kernel_set and friends reach the CPU's through
     * these); NULL on a backend with no such choice. */
    lig_status (*set_kernel_set)(const char *name); /* NULL or "": back to the default */
    const char *(*kernel_set)(void);                /* the set new plans use ("" when none can) */
    const char *(*kernel_sets_supported)(void);     /* comma-separated, portable first */
} lig_backend;

/* The backend and device ordinal of one call's tensors. */
typedef struct lig_placement {
    const lig_backend *backend;
    int device_index;
    const char *tensor_name; /* the argument whose device chose the backend, for messages */
} lig_placement;

/* The name of a device kind for messages ("host", "CUDA", ...), whether or not this build has its
 * backend; "unknown" for a value lig.h does not list. */
const char *lig_device_name(lig_device device);
/* Whether lig.h lists `device` (a kind, not whether this build runs it). */
bool lig_device_known(lig_device device);

/* The backend for tensors on `device`, or NULL (with the error set, naming `tensor_name`) when this
 * build has none. */
const lig_backend *lig_backend_for(lig_device device, const char *tensor_name);

#endif

/* The CUDA backend behind the seam (backends/backend.h): C-callable, compiled by nvcc from
 * cuda_backend.cu when the build has -DLIG_CUDA=ON (LIG_HAVE_CUDA). docs/cuda.md describes it. */
#ifndef LIG_BACKENDS_CUDA_BACKEND_H
#define LIG_BACKENDS_CUDA_BACKEND_H

#include "backends/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const lig_backend lig_cuda_backend;

/* lig_workspace_status for CUDA (the backend's workspace_status): waits for `stream` when it is not NULL, copies the status header at
 * the head of `workspace` (device memory) to the host and returns its verdict. */
lig_status lig_cuda_workspace_status_read(const void *workspace, void *stream);

/* The verdict of a status header already in host memory (the first LIG_CUDA_STATUS_BYTES bytes
 * of an aligned workspace): LIG_SUCCESS, or LIG_ERR_PARAM_INVALID with the CPU backend's
 * message for the same failure. */
#define LIG_CUDA_STATUS_BYTES 128
lig_status lig_cuda_status_verdict(const void *status_host);

#ifdef __cplusplus
}
#endif

#endif

/* The backends this build has, one entry each. */
#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"
#ifdef LIG_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#endif
#include "core/error.h"

static const lig_backend *const backends[] = {
    &lig_cpu_backend,
#ifdef LIG_HAVE_CUDA
    &lig_cuda_backend,
#endif
};

const lig_backend *lig_backend_for(lig_device device, const char *tensor_name) {
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (backends[i]->device == device) return backends[i];
    if (device == LIG_DEVICE_CUDA)
        lig_fail(LIG_ERR_PARAM_INVALID,
                 "%s: expected a tensor on a device this build of lig supports (host), got a CUDA tensor: this build "
                 "of lig has no CUDA backend (configure with -DLIG_CUDA=ON)",
                 tensor_name);
    else
        lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected a tensor on a device this build of lig supports, got device %d",
                 tensor_name, (int)device);
    return NULL;
}

lig_status lig_backend_workspace_status(const void *workspace, void *stream) {
#ifdef LIG_HAVE_CUDA
    return lig_cuda_workspace_status_read(workspace, stream);
#else
    (void)workspace;
    (void)stream;
    return lig_fail(LIG_ERR_PARAM_INVALID,
                    "workspace: expected the workspace of a CUDA plan, got a call to lig_cuda_workspace_status, but "
                    "this build of lig has no CUDA backend (configure with -DLIG_CUDA=ON)");
#endif
}

/* lig_cuda_workspace_status: the verdict of a CUDA phase 2's device-side checks (the backend
 * seam answers; a build without CUDA refuses). */
#include "backends/backend.h"
#include "core/error.h"

lig_status lig_cuda_workspace_status(const void *workspace, void *stream) {
    if (!workspace)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "workspace: expected the workspace a CUDA phase 2 ran in, got NULL");
    return lig_backend_workspace_status(workspace, stream);
}

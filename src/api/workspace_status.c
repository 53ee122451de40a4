/* lig_workspace_status: the verdict of a device phase 2's device-side checks, read by the backend
 * of that device (the host's phase 2 returns its verdict itself). */
#include "backends/backend.h"
#include "core/error.h"
#include "core/workspace.h"

/* The backend of `device` that keeps a device-side status; *backend NULL (and LIG_SUCCESS) for one
 * whose phase 2 returns its verdict itself. */
static lig_status backend_with_status(lig_device device, const void *workspace, const lig_backend **backend) {
    *backend = NULL;
    if (!lig_device_known(device))
        return lig_fail(LIG_ERR_PARAM_INVALID, "device: expected a device kind lig.h lists (LIG_DEVICE_*), got %d",
                        (int)device);
    const lig_backend *b = lig_backend_for(device, "device");
    if (!b) return LIG_ERR_PARAM_INVALID;
    if (!b->workspace_status) return LIG_SUCCESS;
    if (!workspace)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "workspace: expected the workspace a %s phase 2 ran in, got NULL",
                        lig_device_name(device));
    *backend = b;
    return LIG_SUCCESS;
}

lig_status lig_workspace_status(lig_device device, const void *workspace, void *stream) {
    const lig_backend *backend;
    const lig_status st = backend_with_status(device, workspace, &backend);
    return st != LIG_SUCCESS || !backend ? st : backend->workspace_status(workspace, stream);
}

lig_status lig_workspace_status_from_copy(lig_device device, const void *workspace, const void *copy) {
    const lig_backend *backend;
    const lig_status st = backend_with_status(device, workspace, &backend);
    if (st != LIG_SUCCESS || !backend) return st;
    if (!copy)
        return lig_fail(LIG_ERR_PARAM_NULLPTR, "copy: expected a host copy of the workspace's first %d bytes, got NULL",
                        LIG_WORKSPACE_STATUS_BYTES);
    const uintptr_t offset = (uintptr_t)lig_ws_base((void *)workspace) - (uintptr_t)workspace;
    return backend->status_verdict((const char *)copy + offset);
}

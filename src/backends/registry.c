/* The backends this build has, one entry each. */
#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"
#include "core/error.h"

static const lig_backend *const backends[] = {
    &lig_cpu_backend,
};

const lig_backend *lig_backend_for(lig_device_type device, const char *tensor_name) {
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (backends[i]->device == device) return backends[i];
    lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected a tensor on a device this build of lig supports (host), got device type %d",
             tensor_name, (int)device);
    return NULL;
}

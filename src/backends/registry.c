/* The backends this build has, one entry each, and the device kinds lig.h lists. */
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
enum { BACKENDS = sizeof backends / sizeof backends[0] };

/* Each kind's name, and how a build gets its backend (for the message when it has none). */
static const struct {
    lig_device device;
    const char *name, *how;
} kinds[] = {
    {LIG_DEVICE_HOST, "host", "always"},
    {LIG_DEVICE_CUDA, "CUDA", "configure with -DLIG_CUDA=ON"},
    {LIG_DEVICE_ROCM, "ROCm", "lig has no ROCm backend yet"},
    {LIG_DEVICE_ASCEND, "Ascend", "lig has no Ascend backend yet: the aclnn front end runs on the host"},
};
enum { KINDS = sizeof kinds / sizeof kinds[0] };

static int kind_of(lig_device device) {
    for (int i = 0; i < KINDS; i++)
        if (kinds[i].device == device) return i;
    return -1;
}

const char *lig_device_name(lig_device device) {
    const int k = kind_of(device);
    return k < 0 ? "unknown" : kinds[k].name;
}

bool lig_device_known(lig_device device) { return kind_of(device) >= 0; }

const lig_backend *lig_backend_for(lig_device device, const char *tensor_name) {
    for (int i = 0; i < BACKENDS; i++)
        if (backends[i]->device == device) return backends[i];
    const int k = kind_of(device);
    if (k >= 0)
        lig_fail(LIG_ERR_PARAM_INVALID,
                 "%s: expected a tensor on a device this build of lig supports (host), got one in %s memory: this build "
                 "of lig has no %s backend (%s)",
                 tensor_name, kinds[k].name, kinds[k].name, kinds[k].how);
    else
        lig_fail(LIG_ERR_PARAM_INVALID, "%s: expected a tensor on a device this build of lig supports, got device %d",
                 tensor_name, (int)device);
    return NULL;
}

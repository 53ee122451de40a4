/* The public settings: thread count and CPU kernel set. The kernel sets belong to the CPU backend:
 * reached through its lig_backend members, so api/ includes no backend's headers. */
#include <stddef.h>

#include "backends/backend.h"
#include "core/settings.h"
#include "lig.h"

void lig_set_num_threads(int n) { lig_settings_set_threads(n); }

int lig_get_num_threads(void) { return lig_settings_threads(); }

/* Every build has the host backend: lig_backend_for never fails for it. */
static const lig_backend *host_backend(void) { return lig_backend_for(LIG_DEVICE_HOST, "device"); }

lig_status lig_set_kernel_set(const char *name) { return host_backend()->set_kernel_set(name); }

const char *lig_get_kernel_set(void) { return host_backend()->kernel_set(); }

const char *lig_kernel_sets(void) { return host_backend()->kernel_sets_supported(); }

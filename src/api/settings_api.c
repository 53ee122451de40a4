/* The public settings: thread count and CPU kernel set. */
#include <stddef.h>

#include "backends/cpu/kernels/kernel_set.h"
#include "core/settings.h"
#include "lig.h"

void lig_set_num_threads(int n) { lig_settings_set_threads(n); }

int lig_get_num_threads(void) { return lig_settings_threads(); }

lig_status lig_set_kernel_set(const char *name) { return lig_kernel_set_force(name); }

const char *lig_get_kernel_set(void) {
    const lig_kernel_set *ks = NULL;
    return lig_kernel_set_current(&ks) == LIG_SUCCESS ? ks->name : "";
}

const char *lig_kernel_sets(void) { return lig_kernel_sets_supported(); }

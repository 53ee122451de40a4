#include "core/settings.h"

#include <stdatomic.h>

#include "core/tuning.h"

static atomic_int configured; /* 0 = default */

void lig_settings_set_threads(int n) {
    if (n < 0) n = 0;
    atomic_store(&configured, n > LIG_MAX_THREADS ? LIG_MAX_THREADS : n);
}

int lig_settings_threads(void) {
    const int n = atomic_load(&configured);
    return n > 0 ? n : lig_tuning_current().default_threads;
}

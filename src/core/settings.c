#include "core/settings.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

static atomic_int configured; /* 0 = default */
static int default_count;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void read_default(void) {
    const char *env = getenv("LIG_NUM_THREADS");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == '\0' && v > 0) {
            default_count = v > LIG_MAX_THREADS ? LIG_MAX_THREADS : (int)v;
            return;
        }
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    default_count = n > LIG_MAX_THREADS ? LIG_MAX_THREADS : (int)n;
}

void lig_settings_set_threads(int n) {
    if (n < 0) n = 0;
    atomic_store(&configured, n > LIG_MAX_THREADS ? LIG_MAX_THREADS : n);
}

int lig_settings_threads(void) {
    const int n = atomic_load(&configured);
    if (n > 0) return n;
    pthread_once(&default_once, read_default);
    return default_count;
}

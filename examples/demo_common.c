/* The examples' shared helpers (demo_common.h). */
#define _POSIX_C_SOURCE 200809L
#include "demo_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t rng = 42;

void demo_seed(uint64_t state) { rng = state; }

uint64_t next_u64(void) {
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double uniform01(void) { return ((double)(next_u64() >> 11) + 0.5) * 0x1p-53; }

float gaussian(void) { return (float)(sqrt(-2.0 * log(uniform01())) * cos(6.283185307179586 * uniform01())); }

double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

void check(lig_status st, const char *what) {
    if (st == LIG_SUCCESS) return;
    fprintf(stderr, "%s failed: %s: %s\n", what, lig_status_string(st), lig_get_last_error());
    exit(1);
}

static void *workspace = NULL;
static uint64_t workspace_cap = 0;

void *demo_workspace(uint64_t need) {
    if (need > workspace_cap) {
        free(workspace);
        workspace = xcalloc(1, (size_t)need);
        workspace_cap = need;
    }
    return workspace;
}

void demo_workspace_free(void) {
    free(workspace);
    workspace = NULL;
    workspace_cap = 0;
}

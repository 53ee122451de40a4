/* The examples' shared helpers (demo_common.h). */
#define _POSIX_C_SOURCE 200809L
#include "demo_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static void usage(const char *argv0, const demo_option *options, size_t n) {
    fprintf(stderr, "usage: %s", argv0);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "%s[%s%s]", i % 6 == 5 ? "\n         " : " ", options[i].name,
                options[i].kind == '1' || options[i].kind == '0' ? "" : " x");
    fprintf(stderr, "\n");
    exit(2);
}

void demo_parse_options(int argc, char **argv, const demo_option *options, size_t n, void *config) {
    for (int i = 1; i < argc; i++) {
        const demo_option *o = NULL;
        for (size_t j = 0; j < n; j++)
            if (!strcmp(argv[i], options[j].name)) o = &options[j];
        if (!o) usage(argv[0], options, n);
        char *field = (char *)config + o->offset;
        if (o->kind == '1' || o->kind == '0') {
            *(int *)(void *)field = o->kind == '1';
            continue;
        }
        if (i + 1 >= argc) usage(argv[0], options, n);
        const char *v = argv[++i];
        if (o->kind == 'd') {
            *(double *)(void *)field = atof(v);
            continue;
        }
        const long long x = atoll(v);
        if (x < (o->kind == 's' ? 0 : 1)) usage(argv[0], options, n);
        *(int64_t *)(void *)field = x;
    }
}

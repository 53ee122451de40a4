#include "kernel_set_gate.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels/kernel_set.h"
#include "framework.h"
#include "lig.h"

/* The sets this build compiled, comma-separated, into out. */
static void compiled_sets(char *out, size_t size)
{
    int n;
    const lig_kernel_set *const *t = lig_kernel_set_table(&n);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        const size_t used = strlen(out);
        snprintf(out + used, size - used, "%s%s", i ? "," : "", t[i]->name);
    }
}

static const lig_kernel_set *find_set(const char *name)
{
    int n;
    const lig_kernel_set *const *t = lig_kernel_set_table(&n);
    for (int i = 0; i < n; i++) {
        if (strcmp(t[i]->name, name) == 0) {
            return t[i];
        }
    }
    return NULL;
}

/* The next name of the comma-separated list at *cursor (spaces around names ignored) into
 * name/len; false at the end of the list. */
static bool next_name(const char **cursor, const char **name, size_t *len)
{
    const char *p = *cursor;
    while (*p == ' ' || *p == ',') p++;
    if (*p == '\0') {
        return false;
    }
    const char *end = p;
    while (*end && *end != ',') end++;
    const char *last = end;
    while (last > p && last[-1] == ' ') last--;
    *name = p;
    *len = (size_t)(last - p);
    *cursor = end;
    return true;
}

static bool in_list(const char *list, const char *wanted)
{
    const char *name;
    size_t len;
    while (next_name(&list, &name, &len)) {
        if (len == strlen(wanted) && strncmp(name, wanted, len) == 0) {
            return true;
        }
    }
    return false;
}

/* Checks one required set; prints why it is missing. Returns 1 when missing. */
static int require_one(const char *name, size_t len, const char *compiled)
{
    char want[64];
    snprintf(want, sizeof want, "%.*s", (int)(len < sizeof want ? len : sizeof want - 1), name);
    const lig_kernel_set *ks = find_set(want);
    if (ks == NULL) {
        printf("FAILED: LIG_REQUIRE_SETS names \"%s\", which this build does not have (it has %s)\n", want,
               compiled);
        return 1;
    }
    if (!ks->cpu_supports()) {
        printf("FAILED: LIG_REQUIRE_SETS names %s, which needs %s; this CPU supports %s\n", ks->name, ks->features,
               lig_kernel_sets());
        return 1;
    }
    return 0;
}

/* Every set LIG_REQUIRE_SETS names that this build or CPU lacks, each printed; returns how many. */
static int missing_required(const char *required, const char *compiled)
{
    int missing = 0;
    if (strcmp(required, "all") == 0) {
        int n;
        const lig_kernel_set *const *t = lig_kernel_set_table(&n);
        for (int i = 0; i < n; i++) {
            missing += require_one(t[i]->name, strlen(t[i]->name), compiled);
        }
        return missing;
    }
    const char *name;
    size_t len;
    while (next_name(&required, &name, &len)) {
        missing += require_one(name, len, compiled);
    }
    return missing;
}

int th_kernel_set_gate(void)
{
    char compiled[256];
    compiled_sets(compiled, sizeof compiled);
    const char *required = getenv("LIG_REQUIRE_SETS");
    if (required == NULL) {
        required = "";
    }
    const int missing = missing_required(required, compiled);
    if (required[0] != '\0' && missing == 0) {
        printf("LIG_REQUIRE_SETS=%s: every set named is built and supported here\n", required);
    }

    const char *isa = getenv("LIG_ISA");
    const char *current = lig_get_kernel_set();
    if (current[0] == '\0') {
        /* LIG_ISA names a set this run cannot use: a required one failed above; any other is
         * skipped, saying what it needs (never run on another set and reported passed) */
        const char *name = isa ? isa : "";
        const lig_kernel_set *ks = find_set(name);
        const bool wanted = in_list(required, name) || (strcmp(required, "all") == 0 && ks != NULL);
        if (!wanted && ks != NULL) {
            printf("SKIPPED: %s needs %s (this CPU supports %s)\n", ks->name, ks->features, lig_kernel_sets());
        } else if (!wanted) {
            printf("SKIPPED: LIG_ISA=%s names no kernel set of this build (it has %s)\n", name, compiled);
        }
        return missing > 0 ? 1 : TH_EXIT_SKIPPED;
    }
    if (missing > 0) {
        return 1;
    }
    /* a forced set runs as itself, never as a fallback */
    if (isa != NULL && isa[0] != '\0' && strcmp(isa, current) != 0) {
        printf("FAILED: LIG_ISA=%s but the library plans with %s\n", isa, current);
        return 1;
    }
    return -1;
}

#include "framework.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Failure messages printed per test before the rest are only counted: a broken kernel can
 * produce thousands of mismatches and the first few say everything. */
#define TH_MAX_PRINTED_FAILURES 25

/* The running test's counts; checks may come from worker threads of a concurrency test. */
static atomic_long g_checks;
static atomic_int g_failures;
static atomic_int g_skips;

/* The first skip reason of each skipped test or part, repeated in the summary so that nothing
 * skipped goes unseen in a long log. */
#define TH_MAX_LISTED_SKIPS 64
static char g_skip_list[TH_MAX_LISTED_SKIPS][192];
static int g_n_skip_list;
static int g_n_skips_all; /* every skip of the run, listed or not */
static const char *g_current_test = "";

bool th_check(bool cond, const char *file, int line, const char *fmt, ...)
{
    atomic_fetch_add(&g_checks, 1);
    if (cond) {
        return true;
    }
    const int failures = atomic_fetch_add(&g_failures, 1) + 1;
    if (failures <= TH_MAX_PRINTED_FAILURES) {
        va_list ap;
        fprintf(stdout, "    %s:%d: FAILED: ", file, line);
        va_start(ap, fmt);
        vfprintf(stdout, fmt, ap);
        va_end(ap);
        fputc('\n', stdout);
    } else if (failures == TH_MAX_PRINTED_FAILURES + 1) {
        fprintf(stdout, "    (further failures of this test are counted, not printed)\n");
    }
    fflush(stdout);
    return false;
}

void th_skip(const char *fmt, ...)
{
    char reason[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    atomic_fetch_add(&g_skips, 1);
    printf("    SKIPPED: %s\n", reason);
    fflush(stdout);
    g_n_skips_all++;
    if (g_n_skip_list < TH_MAX_LISTED_SKIPS) {
        snprintf(g_skip_list[g_n_skip_list++], sizeof g_skip_list[0], "%s: %s", g_current_test, reason);
    }
}

void th_note(const char *fmt, ...)
{
    va_list ap;
    fputs("    ", stdout);
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
}

int th_current_failures(void)
{
    return atomic_load(&g_failures);
}

double th_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int64_t th_env_int(const char *name, int64_t fallback)
{
    const char *s = getenv(name);
    if (s == NULL || *s == '\0') {
        return fallback;
    }
    char *end = NULL;
    long long v = strtoll(s, &end, 0);
    if (end == s || *end != '\0') {
        return fallback;
    }
    return (int64_t)v;
}

/* The outcome of one test from its counts. */
typedef enum th_outcome { TH_PASSED, TH_FAILED, TH_SKIPPED } th_outcome;

static th_outcome run_one(const th_test *t)
{
    printf("[ RUN    ] %s\n", t->name);
    fflush(stdout);
    g_current_test = t->name;
    atomic_store(&g_checks, 0);
    atomic_store(&g_failures, 0);
    atomic_store(&g_skips, 0);
    const double t0 = th_now();
    t->fn();
    const double dt = th_now() - t0;
    const long checks = atomic_load(&g_checks);
    const int failures = atomic_load(&g_failures);
    const int skips = atomic_load(&g_skips);
    if (failures > 0) {
        printf("[ FAILED ] %s (%.2f s, %d of %ld checks failed)\n", t->name, dt, failures, checks);
        fflush(stdout);
        return TH_FAILED;
    }
    if (checks == 0 && skips > 0) {
        printf("[SKIPPED ] %s (%.2f s, no check could run here; the reason is above)\n", t->name, dt);
        fflush(stdout);
        return TH_SKIPPED;
    }
    if (checks == 0) {
        printf("    FAILED: %s made no checks: a test must check something, or say why it cannot run "
               "with th_skip()\n",
               t->name);
        printf("[ FAILED ] %s (%.2f s, no checks)\n", t->name, dt);
        fflush(stdout);
        return TH_FAILED;
    }
    if (skips > 0) {
        printf("[     OK ] %s (%.2f s, %ld checks, %d parts SKIPPED)\n", t->name, dt, checks, skips);
    } else {
        printf("[     OK ] %s (%.2f s, %ld checks)\n", t->name, dt, checks);
    }
    fflush(stdout);
    return TH_PASSED;
}

int th_run_tests(const th_test *tests, size_t count, int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    int passed = 0;
    int failed = 0;
    int skipped = 0;
    int skipped_parts = 0; /* th_skip calls in tests that passed */
    double start_all = th_now();

    if (filter != NULL && (strcmp(filter, "--list") == 0 || strcmp(filter, "-l") == 0)) {
        for (size_t i = 0; i < count; i++) {
            printf("%s\n", tests[i].name);
        }
        return 0;
    }
    for (size_t i = 0; i < count; i++) {
        if (filter != NULL && strstr(tests[i].name, filter) == NULL) {
            continue;
        }
        const th_outcome outcome = run_one(&tests[i]);
        switch (outcome) {
        case TH_PASSED:
            passed++;
            skipped_parts += atomic_load(&g_skips);
            break;
        case TH_FAILED: failed++; break;
        case TH_SKIPPED: skipped++; break;
        }
    }
    if (passed + failed + skipped == 0) {
        printf("no test name contains \"%s\" (use --list)\n", filter ? filter : "");
        printf("0 passed, 0 failed, 0 skipped\n");
        return 2;
    }
    printf("total time %.1f s\n", th_now() - start_all);
    for (int i = 0; i < g_n_skip_list; i++) {
        printf("SKIPPED: %s\n", g_skip_list[i]);
    }
    if (g_n_skips_all > g_n_skip_list) {
        printf("SKIPPED: ... and %d more (above, under their tests)\n", g_n_skips_all - g_n_skip_list);
    }
    if (skipped_parts > 0) {
        printf("%d parts of passed tests were SKIPPED (listed above)\n", skipped_parts);
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    fflush(stdout);
    if (failed > 0) {
        return 1;
    }
    return passed == 0 ? TH_EXIT_SKIPPED : 0;
}

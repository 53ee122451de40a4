#include "framework.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Failure messages printed per test before the rest are only counted: a broken kernel can
 * produce thousands of mismatches and the first few say everything. */
#define TH_MAX_PRINTED_FAILURES 25

static int g_failures;

bool th_check(bool cond, const char *file, int line, const char *fmt, ...)
{
    if (cond) {
        return true;
    }
    g_failures++;
    if (g_failures <= TH_MAX_PRINTED_FAILURES) {
        va_list ap;
        fprintf(stdout, "    %s:%d: FAILED: ", file, line);
        va_start(ap, fmt);
        vfprintf(stdout, fmt, ap);
        va_end(ap);
        fputc('\n', stdout);
    } else if (g_failures == TH_MAX_PRINTED_FAILURES + 1) {
        fprintf(stdout, "    (further failures of this test are counted, not printed)\n");
    }
    fflush(stdout);
    return false;
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
    return g_failures;
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

int th_run_tests(const th_test *tests, size_t count, int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    int passed = 0;
    int failed = 0;
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
        printf("[ RUN    ] %s\n", tests[i].name);
        fflush(stdout);
        g_failures = 0;
        double t0 = th_now();
        tests[i].fn();
        double dt = th_now() - t0;
        if (g_failures == 0) {
            passed++;
            printf("[     OK ] %s (%.2f s)\n", tests[i].name, dt);
        } else {
            failed++;
            printf("[ FAILED ] %s (%.2f s, %d failed checks)\n", tests[i].name, dt, g_failures);
        }
        fflush(stdout);
    }
    if (passed + failed == 0) {
        printf("no test name contains \"%s\" (use --list)\n", filter ? filter : "");
        printf("0 passed, 0 failed\n");
        return 2;
    }
    printf("total time %.1f s\n", th_now() - start_all);
    printf("%d passed, %d failed\n", passed, failed);
    fflush(stdout);
    return failed == 0 ? 0 : 1;
}

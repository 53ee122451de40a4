/*
 * A tiny test harness: a table of named test functions, CHECK-style assertions that
 * print file:line and a message, per-test progress lines, and a final summary line
 * "N passed, N failed" that scripts can grep for.
 */
#ifndef LIG_TESTS_HARNESS_FRAMEWORK_H
#define LIG_TESTS_HARNESS_FRAMEWORK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define TH_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define TH_PRINTF(fmt_index, first_arg)
#endif

typedef void (*th_test_fn)(void);

typedef struct th_test {
    const char *name;
    th_test_fn fn;
} th_test;

/* Runs every test whose name contains argv[1] (all tests when absent); returns the exit code. */
int th_run_tests(const th_test *tests, size_t count, int argc, char **argv);

/* Records one check. On failure prints "file:line: FAILED: message" and marks the current test
 * failed. Returns `cond` so callers can bail out. */
bool th_check(bool cond, const char *file, int line, const char *fmt, ...) TH_PRINTF(4, 5);

/* An informational line under the current test (seed, sizes, timings). */
void th_note(const char *fmt, ...) TH_PRINTF(1, 2);

/* Number of failed checks so far in the running test. */
int th_current_failures(void);

/* Monotonic clock in seconds. */
double th_now(void);

/* Integer value of an environment variable, or `fallback` when unset or unparsable. */
int64_t th_env_int(const char *name, int64_t fallback);

#define CHECK(cond, ...) th_check((cond) ? true : false, __FILE__, __LINE__, __VA_ARGS__)

/* Like CHECK but returns from the (void) test function when the check fails. */
#define REQUIRE(cond, ...)                  \
    do {                                    \
        if (!CHECK(cond, __VA_ARGS__)) {    \
            return;                         \
        }                                   \
    } while (0)

#endif /* LIG_TESTS_HARNESS_FRAMEWORK_H */

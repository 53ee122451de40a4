/*
 * A tiny test harness: tests defined with LIG_TEST(name) (the build collects them into the table,
 * see tests/CMakeLists.txt), CHECK-style assertions that print file:line and a message, per-test
 * progress lines, and a final summary line "N passed, N failed, N skipped" that scripts can grep for.
 *
 * A test passes only when it made at least one check and none failed: a test whose body ran no
 * check (an empty loop, a case list that came out empty) is reported failed, since it proved
 * nothing. A test that cannot run here says so with th_skip(reason): with no check made it is
 * reported SKIPPED (never passed); with checks made it passes and its skipped parts are counted.
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

/*
 * Defines the test `name` (lig-tests lists and filters it by that name): write
 *     LIG_TEST(fwd_ties) { ... CHECK(...) ... }
 * at the start of a line in a tests/test_*.c file. That is the only registration: the build scans
 * those files for the macro and generates the table (file order, then source order). The
 * prototype comes with the macro, for -Wmissing-prototypes.
 */
#define LIG_TEST(name)        \
    void test_##name(void);   \
    void test_##name(void)

/* The table the build generated from every LIG_TEST (tests_table.c). */
extern const th_test th_all_tests[];
extern const size_t th_all_tests_count;

/* ctest's SKIP_RETURN_CODE (tests/CMakeLists.txt): the run could not test anything here. */
#define TH_EXIT_SKIPPED 77

/* Runs every test whose name contains argv[1] (all tests when absent); returns the exit code:
 * 0 when none failed, 1 when one did, 2 when the filter matched nothing, 77 (ctest's skip code)
 * when every test that matched was skipped. */
int th_run_tests(const th_test *tests, size_t count, int argc, char **argv);

/* Records one check. On failure prints "file:line: FAILED: message" and marks the current test
 * failed. Returns `cond` so callers can bail out. Safe from any thread. */
bool th_check(bool cond, const char *file, int line, const char *fmt, ...) TH_PRINTF(4, 5);

/* The current test, or a part of it, cannot run here (a kernel set or a feature this CPU or build
 * lacks): prints "SKIPPED: reason" under the test and counts it (see the top of this file). From the
 * test's own thread. */
void th_skip(const char *fmt, ...) TH_PRINTF(1, 2);

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

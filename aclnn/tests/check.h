/* A minimal check harness shared by the front end's C and C++ tests: every failed check prints
 * where and what, and the program's exit status counts them. */
#ifndef LIG_ACLNN_TEST_CHECK_H
#define LIG_ACLNN_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            check_failures++;                                                    \
        }                                                                        \
    } while (0)

#define CHECK_EQ_INT(got, want)                                                                    \
    do {                                                                                           \
        long long got_ = (long long)(got), want_ = (long long)(want);                              \
        if (got_ != want_) {                                                                       \
            fprintf(stderr, "%s:%d: %s = %lld, expected %lld\n", __FILE__, __LINE__, #got, got_, want_); \
            check_failures++;                                                                      \
        }                                                                                          \
    } while (0)

/* The text of the latest error message contains `needle` (msg may be NULL). */
#define CHECK_MSG_HAS(msg, needle)                                                                  \
    do {                                                                                            \
        const char *m_ = (msg);                                                                     \
        if (!m_ || !strstr(m_, (needle))) {                                                         \
            fprintf(stderr, "%s:%d: message \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, m_ ? m_ : "(null)", \
                    (needle));                                                                      \
            check_failures++;                                                                       \
        }                                                                                           \
    } while (0)

static inline int check_report(const char *name) {
    if (check_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

#endif /* LIG_ACLNN_TEST_CHECK_H */

/*
 * What the error tests of every operation share (test_errors.c, test_errors_fwd.c): checks on the
 * library's error messages, and the small base problem the failures are provoked on.
 */
#ifndef LIG_TESTS_ERRTEST_H
#define LIG_TESTS_ERRTEST_H

#include "rng.h"
#include "tcase.h"

/* Case-insensitive substring search. */
int contains_ci(const char *hay, const char *needle);
/* 1 when msg names one of the '|'-separated `names` as a whole identifier ("query" does not
 * match inside "d_query"). */
int names_any(const char *msg, const char *names);
/* Checks a failure message: not empty, names one of `names`, says what was expected and what
 * was received ("expected", "got"). */
void check_error_message(const char *label, const char *msg, const char *names);

/* The base problem's dimensions: tc_init, N1 = 4, N2 = 2, D = 8, K = 3, B = 2, then `edit`
 * (may be NULL) before anything is generated. */
void errtest_base_dims(tcase *tc, void (*edit)(tcase *tc));
/* Its BSND form: S1 = 3, S2 = 5, lengths q (3, 2) and k (5, 3) (gen_bsnd allocates). */
void errtest_base_bsnd(th_rng *r, tcase *tc);
/* Lengths of the TND form: q (2, 3), k (4, 5), in an allocated case. */
void errtest_base_tnd_lengths(tcase *tc);

#endif /* LIG_TESTS_ERRTEST_H */

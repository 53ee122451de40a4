/* What test files share besides the harness (tests/harness/). Tests themselves are declared
 * nowhere: LIG_TEST(name) in a tests/test_*.c file is their one registration (framework.h). */
#ifndef LIG_TESTS_TESTS_H
#define LIG_TESTS_TESTS_H

/* test_kernels_i8.c (white-box: the quantized forward's kernels) */
struct lig_kernel_set;
/* Every kernel set the CPU supports (scalar first) into out (room for all); reports the others
 * as skipped parts of the running test (th_skip). */
int supported_sets(const struct lig_kernel_set **out);

#endif /* LIG_TESTS_TESTS_H */

/*
 * lig-tests: runs the tests (each a LIG_TEST in a tests/test_*.c file; the build collects them into
 * th_all_tests). Usage: lig-tests [substring-of-test-names | --list]
 * Environment: LIG_ISA (the kernel set to test), LIG_REQUIRE_SETS (sets that must be here, or "all":
 * kernel_set_gate.h), LIG_FUZZ_SECONDS (default 20, shared by the fuzz tests), LIG_FUZZ_SEED,
 * LIG_FUZZ_ITER, LIG_TEST_QUICK=1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework.h"
#include "kernel_set_gate.h"
#include "lig.h"

int main(int argc, char **argv)
{
    const int listing = argc > 1 && (strcmp(argv[1], "--list") == 0 || strcmp(argv[1], "-l") == 0);
    if (!listing) {
        /* the suite's small problems run on every thread, as under ctest, unless the caller says otherwise */
        setenv("LIG_MIN_FLOPS_PER_THREAD", "0", 0);
        const int verdict = th_kernel_set_gate();
        if (verdict >= 0) {
            return verdict;
        }
        printf("kernel set: %s (this CPU supports %s)\n", lig_get_kernel_set(), lig_kernel_sets());
    }
    return th_run_tests(th_all_tests, th_all_tests_count, argc, argv);
}

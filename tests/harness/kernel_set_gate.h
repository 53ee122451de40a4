/*
 * Whether a run of lig-tests can test what it was asked to, before any test runs (white-box: the
 * kernel-set table of this build).
 *   - LIG_ISA names a set this CPU lacks (or one this build does not have): the run is SKIPPED,
 *     saying what the set needs, never run on another set and reported passed.
 *   - LIG_REQUIRE_SETS (comma-separated set names, or "all" for every set this build compiled)
 *     names sets that must be here: when one is missing from this build or this CPU, the run
 *     FAILS naming it, so that a machine expected to test a set cannot skip it quietly.
 */
#ifndef LIG_TESTS_HARNESS_KERNEL_SET_GATE_H
#define LIG_TESTS_HARNESS_KERNEL_SET_GATE_H

/* Prints the verdict on stdout; returns -1 when the run may go on, else the exit code (1 for a
 * missing required set, TH_EXIT_SKIPPED for a set this CPU or build lacks). */
int th_kernel_set_gate(void);

#endif /* LIG_TESTS_HARNESS_KERNEL_SET_GATE_H */

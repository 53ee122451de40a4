/*
 * Contract section 7. deterministic = true: output bytes identical across runs and across thread
 * counts 1, 2, 3, 5, on problems where summation order matters (continuous data, heavy duplicate
 * indices so many rows scatter into the same dK rows, causal, G > 1), also when the thread count
 * changes between phase 1 and phase 2. deterministic = false: no lost updates -- with grid data
 * every fp32 sum is exact whatever the order, so the result must equal the reference bit for bit
 * even with racing threads.
 */
#include <stdint.h>
#include <stdio.h>

#include "backward_checks.h"
#include "case_generators.h"
#include "framework.h"
#include "lig.h"
#include "suite.h"

typedef struct contended_problem {
    lig_dtype dtype;
    int64_t n1, n2;
    int tnd;
} contended_problem;

/* Case `seed` of problem p. Deterministic runs get continuous data (a different summation order
 * would show), the others grid data (every sum exact, so only a lost update would show). */
static void contended_case(uint64_t seed, tcase *tc, const contended_problem *p, int deterministic)
{
    th_rng r = th_rng_make(seed);
    gen_contended_case(&r, tc, p->dtype, !deterministic, p->n1, p->n2, p->tnd);
    tc->deterministic = deterministic;
}

/* The problems of the deterministic runs, and those of the racing (non-deterministic) ones. */
static const contended_problem bitwise_problems[] = {
    {LIG_BFLOAT16, 4, 1, 0},
    {LIG_FLOAT32, 6, 2, 0},
    {LIG_BFLOAT16, 8, 2, 1},
    {LIG_FLOAT32, 3, 1, 1},
};
static const contended_problem racing_problems[] = {
    {LIG_FLOAT32, 4, 1, 0},
    {LIG_BFLOAT16, 6, 2, 0},
    {LIG_FLOAT16, 4, 2, 1},
    {LIG_FLOAT32, 8, 1, 1},
};

LIG_TEST(determinism_bitwise_across_runs_and_threads)
{
    static const int threads[] = {1, 2, 3, 5};
    for (size_t pi = 0; pi < sizeof bitwise_problems / sizeof bitwise_problems[0]; pi++) {
        tcase tc;
        contended_case(31 + pi, &tc, &bitwise_problems[pi], 1);
        suite_case sc = {.tc = &tc};
        char label[64];
        snprintf(label, sizeof label, "determinism problem %zu", pi);
        suite_bitwise_threads(&suite_backward, &sc, threads, 4, 2, label);
        tc_free(&tc);
    }
}

LIG_TEST(determinism_off_loses_no_update)
{
    static const int threads[] = {2, 3, 5};
    for (size_t pi = 0; pi < sizeof racing_problems / sizeof racing_problems[0]; pi++) {
        for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
            tcase tc;
            contended_case(77 + 10 * pi + ti, &tc, &racing_problems[pi], 0);
            lig_set_num_threads(threads[ti]);
            char label[96];
            snprintf(label, sizeof label, "non-deterministic, %d threads, problem %zu", threads[ti], pi);
            check_case(&tc, label); /* grid data: exact comparison, a lost update cannot hide */
            tc_free(&tc);
        }
    }
    lig_set_num_threads(0);
}

/* Phase 1 sizes the per-thread scratch (the deterministic commit ring holds two buffers per
 * thread) for the thread count of its time; phase 2 may run with more threads or fewer. Both
 * directions, both modes: deterministic results bitwise equal to a run without the change
 * (continuous data, so a different summation order would show), non-deterministic ones exact
 * on grid data (a lost update would show); ASan watches the workspace's end. */
LIG_TEST(grad_threads_change_between_phases)
{
    static const int pairs[6][2] = {{2, 2}, {1, 4}, {4, 1}, {2, 5}, {5, 2}, {3, 1}};
    static const contended_problem problems[] = {
        {LIG_FLOAT32, 6, 2, 0},
        {LIG_BFLOAT16, 4, 1, 1},
    };
    for (size_t pi = 0; pi < sizeof problems / sizeof problems[0]; pi++) {
        for (int deterministic = 0; deterministic < 2; deterministic++) {
            tcase tc;
            contended_case(83000u + 10 * pi + (uint64_t)deterministic, &tc, &problems[pi], deterministic);
            tc.dw_dtype = LIG_FLOAT32;
            suite_case sc = {.tc = &tc};
            char label[64];
            snprintf(label, sizeof label, "problem %zu, deterministic %d", pi, deterministic);
            check_stats_reset();
            suite_threads_change(&suite_backward, &sc, pairs, 6, deterministic, label);
            check_stats_note(label, 1);
            tc_free(&tc);
        }
    }
}

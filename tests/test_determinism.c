/*
 * SPEC section 6. deterministic = true: output bytes identical across runs and across thread
 * counts 1, 2, 3, 5, on problems where summation order matters (continuous data, heavy duplicate
 * indices so many rows scatter into the same dK rows, causal, G > 1).
 * deterministic = false: no lost updates -- with grid data every fp32 sum is exact whatever the
 * order, so the result must equal the reference bit for bit even with racing threads.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "gen.h"
#include "harness.h"
#include "lig.h"
#include "runner.h"
#include "tests.h"

static void contended_case(tcase *tc, th_rng *r, lig_dtype dtype, int grid, int64_t n1, int64_t n2, int tnd)
{
    gen_opts o;
    gen_opts_default(&o);
    o.grid = grid;
    o.min_abs_s = grid ? 0.0 : 1e-3;
    o.dup_pool = 3;  /* every row picks among the first 3 visible keys */
    o.p_dup = 0.3;
    o.p_pad = 0.05;
    o.p_mask = 0.05;
    tc_init(tc);
    tc->grid = grid;
    tc->dtype = dtype;
    tc->dw_dtype = dtype;
    tc->p.sparse_mode = 3;
    tc->p.N1 = n1;
    tc->p.N2 = n2;
    tc->p.D = 24;
    tc->p.K = 16;
    tc->p.B = 2;
    if (tnd) {
        gen_tnd(r, tc, 200, 220, 3, 0);
    } else {
        tc->p.S1 = 200;
        tc->p.S2 = 200;
        gen_bsnd(r, tc);
    }
    gen_data(r, tc, &o);
}

void test_determinism_bitwise(void)
{
    static const int threads[] = {1, 2, 3, 5};
    static const struct {
        lig_dtype dtype;
        int64_t n1, n2;
        int tnd;
    } problems[] = {
        {LIG_BFLOAT16, 4, 1, 0},
        {LIG_FLOAT32, 6, 2, 0},
        {LIG_BFLOAT16, 8, 2, 1},
        {LIG_FLOAT32, 3, 1, 1},
    };
    for (size_t pi = 0; pi < sizeof problems / sizeof problems[0]; pi++) {
        th_rng r = th_rng_make(31 + pi);
        tcase tc;
        contended_case(&tc, &r, problems[pi].dtype, 0, problems[pi].n1, problems[pi].n2, problems[pi].tnd);
        tc.deterministic = 1;
        run_result first;
        int have_first = 0;
        for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
            lig_set_num_threads(threads[ti]);
            for (int rep = 0; rep < 2; rep++) {
                run_result res;
                run_case(&tc, &res);
                if (!CHECK(res.st1 == LIG_SUCCESS && res.st2 == LIG_SUCCESS, "problem %zu, %d threads: failed: %s",
                           pi, threads[ti], res.message)) {
                    inst_result_free(&res);
                    continue;
                }
                if (!have_first) {
                    char label[64];
                    snprintf(label, sizeof label, "determinism problem %zu", pi);
                    check_result(&tc, &res, label);
                    first = res;
                    have_first = 1;
                    continue;
                }
                static const char *names[3] = {"d_query", "d_key", "d_weights"};
                for (int o = 0; o < 3; o++) {
                    CHECK(res.raw_bytes[o] == first.raw_bytes[o] &&
                              memcmp(res.raw[o], first.raw[o], first.raw_bytes[o]) == 0,
                          "problem %zu: %s bytes differ with %d threads (run %d) from the first run", pi, names[o],
                          threads[ti], rep);
                }
                inst_result_free(&res);
            }
        }
        if (have_first) {
            inst_result_free(&first);
        }
        tc_free(&tc);
    }
    lig_set_num_threads(0);
}

void test_determinism_off_loses_no_update(void)
{
    static const int threads[] = {2, 3, 5};
    static const struct {
        lig_dtype dtype;
        int64_t n1, n2;
        int tnd;
    } problems[] = {
        {LIG_FLOAT32, 4, 1, 0},
        {LIG_BFLOAT16, 6, 2, 0},
        {LIG_FLOAT16, 4, 2, 1},
        {LIG_FLOAT32, 8, 1, 1},
    };
    for (size_t pi = 0; pi < sizeof problems / sizeof problems[0]; pi++) {
        for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
            th_rng r = th_rng_make(77 + 10 * pi + ti);
            tcase tc;
            contended_case(&tc, &r, problems[pi].dtype, 1, problems[pi].n1, problems[pi].n2, problems[pi].tnd);
            tc.deterministic = 0;
            lig_set_num_threads(threads[ti]);
            char label[96];
            snprintf(label, sizeof label, "non-deterministic, %d threads, problem %zu", threads[ti], pi);
            check_case(&tc, label); /* grid data: exact comparison, a lost update cannot hide */
            tc_free(&tc);
        }
    }
    lig_set_num_threads(0);
}

/*
 * The deterministic backward's commit ring (backends/cpu/operators/indexer_grad.c), white-box:
 * its capacity, a plan parameter, is forced down to 1, 2 and 3 chunks so that producers wait
 * for each other on every chunk and units of many chunks stream through a ring smaller than
 * themselves. The result must be bitwise the one of the default ring, for 1 to 5 threads, and
 * match the float64 reference.
 */
#include <stdio.h>
#include <string.h>

#include "backward_checks.h"
#include "case_generators.h"
#include "framework.h"
#include "backward_runner.h"
#include "testing/lig_testing.h"

LIG_TEST(determinism_commit_ring_capacity) {
    static const int64_t rings[] = {0, 1, 2, 3};
    static const int threads[] = {1, 2, 3, 5};
    static const struct {
        lig_dtype dtype;
        int64_t n1, n2, K;
    } problems[] = {
        {LIG_FLOAT32, 4, 1, 300}, /* units of several chunks each */
        {LIG_BFLOAT16, 6, 2, 40},
    };
    for (size_t pi = 0; pi < sizeof problems / sizeof problems[0]; pi++) {
        th_rng r = th_rng_make(4100 + pi);
        gen_opts o;
        gen_opts_default(&o);
        o.grid = 0;
        o.min_abs_s = 1e-3;
        o.p_dup = 0.3;
        o.dup_pool = 4; /* heavy scatter into the same dK rows: the order matters */
        tcase tc;
        tc_init(&tc);
        tc.dtype = problems[pi].dtype;
        tc.dw_dtype = problems[pi].dtype;
        tc.deterministic = 1;
        tc.grid = 0;
        tc.p.sparse_mode = 3;
        tc_set_dims(&tc, 2, problems[pi].n1, problems[pi].n2, 20, problems[pi].K);
        tc.p.S1 = 90;
        tc.p.S2 = 350;
        gen_bsnd(&r, &tc);
        gen_data(&r, &tc, &o);
        run_result first;
        int have_first = 0;
        for (size_t ri = 0; ri < sizeof rings / sizeof rings[0]; ri++)
            for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
                lig_testing_set_grad_ring_chunks(rings[ri]);
                lig_set_num_threads(threads[ti]);
                run_result res;
                run_case(&tc, &res);
                if (!CHECK(res.st1 == LIG_SUCCESS && res.st2 == LIG_SUCCESS, "problem %zu, ring %lld, %d threads: %s",
                           pi, (long long)rings[ri], threads[ti], res.message)) {
                    inst_result_free(&res);
                    continue;
                }
                if (!have_first) {
                    check_result(&tc, &res, "commit ring, default capacity");
                    first = res;
                    have_first = 1;
                    continue;
                }
                static const char *names[3] = {"d_query", "d_key", "d_weights"};
                for (int k = 0; k < 3; k++)
                    CHECK(res.raw_bytes[k] == first.raw_bytes[k] && memcmp(res.raw[k], first.raw[k], first.raw_bytes[k]) == 0,
                          "problem %zu: %s differs with a ring of %lld chunks and %d threads", pi, names[k],
                          (long long)rings[ri], threads[ti]);
                inst_result_free(&res);
            }
        if (have_first) inst_result_free(&first);
        tc_free(&tc);
    }
    lig_testing_set_tuning(NULL);
    lig_set_num_threads(0);
}

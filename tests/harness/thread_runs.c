/* Bitwise reproducibility across thread counts (thread_runs.h). */
#include "thread_runs.h"

#include <stdlib.h>
#include <string.h>

#include "framework.h"
#include "lig.h"

void th_check_thread_runs(const char *label, const int *threads, int runs, thread_run_fn run, thread_run_done_fn done,
                          void *ctx) {
    float *first = NULL;
    for (int i = 0; i < runs; i++) {
        lig_set_num_threads(threads[i]);
        const tbuf *out = run(ctx, first == NULL);
        const int64_t n = out ? tbuf_numel(out) : 0;
        if (out && !first) {
            first = malloc(sizeof(float) * (size_t)(n + 1));
            for (int64_t e = 0; e < n; e++) first[e] = (float)tbuf_read(out, e);
        } else if (out)
            for (int64_t e = 0; e < n; e++) {
                const float v = (float)tbuf_read(out, e);
                if (memcmp(&v, &first[e], sizeof v) != 0) {
                    CHECK(false, "%s: run %d (%d threads) element %lld: %.9g, first run %.9g", label, i, threads[i],
                          (long long)e, v, first[e]);
                    break;
                }
            }
        done(ctx);
    }
    free(first);
    lig_set_num_threads(0);
}

/* The index pass that runs before anything is written: range checks (SPEC section 3). */
#include <stdio.h>

#include "api/error.h"
#include "convert/dtype_convert.h"
#include "operators/indexer_grad_internal.h"
#include "runtime/threadpool.h"

typedef struct check_task {
    const lig_indexer_grad_plan *p;
    /* the first bad slot of each thread's range; INT64_MAX when none */
    int64_t bad_unit[1024], bad_slot[1024], bad_value[1024];
} check_task;

static void check_range(void *ctx, int tid, int n) {
    check_task *c = ctx;
    const lig_indexer_grad_plan *p = c->p;
    const int64_t u0 = p->pr.units * tid / n, u1 = p->pr.units * (tid + 1) / n;
    c->bad_unit[tid] = INT64_MAX;
    for (int64_t u = u0; u < u1; u++) {
        const lig_unit x = lig_unit_decode(&p->pr, u);
        const int64_t lk = p->pr.bt.lk[x.b];
        const char *ip = lig_q_row_ptr(&p->idx, &p->pr, x.b, x.t, x.g);
        const int64_t step = p->idx.dim * (int64_t)p->idx.esize;
        for (int64_t j = 0; j < p->pr.K; j++, ip += step) {
            const int64_t s = lig_load_int(p->idx.dtype, ip);
            if (s < -1 || s >= lk) {
                c->bad_unit[tid] = u;
                c->bad_slot[tid] = j;
                c->bad_value[tid] = s;
                return;
            }
        }
    }
}

lig_status lig_grad_check_indices(const lig_indexer_grad_plan *p, int threads) {
    static _Thread_local check_task c; /* large: keep it off the stack */
    c.p = p;
    if (threads > 1024) threads = 1024;
    if (p->pr.K == 0) return LIG_SUCCESS;
    int64_t want = p->pr.units < threads ? p->pr.units : threads;
    for (int i = 0; i < 1024; i++) c.bad_unit[i] = INT64_MAX;
    lig_parallel((int)(want < 1 ? 1 : want), check_range, &c);
    int worst = -1;
    for (int i = 0; i < 1024; i++)
        if (c.bad_unit[i] != INT64_MAX && (worst < 0 || c.bad_unit[i] < c.bad_unit[worst])) worst = i;
    if (worst < 0) return LIG_SUCCESS;
    const lig_unit x = lig_unit_decode(&p->pr, c.bad_unit[worst]);
    const int64_t row = p->pr.bt.q_base[x.b] + x.t; /* the row's index in the tensor's own first axes */
    char where[96];
    if (p->pr.tnd) snprintf(where, sizeof where, "[%lld,%lld,%lld]", (long long)row, (long long)x.g, (long long)c.bad_slot[worst]);
    else snprintf(where, sizeof where, "[%lld,%lld,%lld,%lld]", (long long)x.b, (long long)x.t, (long long)x.g,
                  (long long)c.bad_slot[worst]);
    return lig_fail(LIG_ERR_PARAM_INVALID,
                    "sparse_indices: expected values in [-1, %lld) (-1 or a key of batch %lld, whose length is %lld) "
                    "at %s (b,row,key head,slot), got %lld",
                    (long long)p->pr.bt.lk[x.b], (long long)x.b, (long long)p->pr.bt.lk[x.b], where,
                    (long long)c.bad_value[worst]);
}

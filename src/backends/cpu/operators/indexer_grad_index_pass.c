/* The backward's index pass, before anything is written: range checks (docs/contract.md section 4) and,
 * for the deterministic commit ring, the numbering of every unit's chunks. */
#include <stdio.h>

#include "backends/cpu/runtime/first_failure.h"
#include "backends/cpu/operators/indexer_grad_plan.h"
#include "core/dtype_convert.h"
#include "core/error.h"

typedef struct index_scan {
    const lig_cpu_grad_plan *p;
    int64_t *chunk_base; /* NULL: ranges only */
} index_scan;

static void scan_units(void *ctx, int64_t u0, int64_t u1, lig_failure *first) {
    const index_scan *c = ctx;
    const lig_problem *pr = &c->p->pb->pr;
    const lig_view4 *idx = &c->p->pb->idx;
    const int64_t step = idx->dim * (int64_t)idx->esize, block = c->p->ctx.block;
    for (int64_t u = u0; u < u1; u++) {
        const lig_unit x = lig_unit_decode(pr, u);
        if (lig_grad_dense(c->p->pb)) { /* no index to check: the unit's visible keys are its slots */
            if (c->chunk_base) c->chunk_base[u + 1] = (lig_grad_dense_slots(&x) + block - 1) / block;
            continue;
        }
        const int64_t lk = pr->bt.lk[x.b];
        const char *ip = lig_q_row_ptr(idx, pr, x.b, x.t, x.g);
        int64_t counted = 0;
        for (int64_t j = 0; j < pr->K; j++, ip += step) {
            const int64_t s = lig_load_int(idx->dtype, ip);
            if (s < -1 || s >= lk) {
                *first = (lig_failure){.item = u, .slot = j, .int_value = s};
                return;
            }
            counted += s >= x.lo && s <= x.hi;
        }
        /* chunks of the unit, stored one place up for the prefix sum */
        if (c->chunk_base) c->chunk_base[u + 1] = (counted + block - 1) / block;
    }
}

lig_status lig_grad_index_pass(const lig_cpu_grad_plan *p, int threads, int64_t *chunk_base) {
    const lig_problem *pr = &p->pb->pr;
    if (pr->K == 0) {
        if (chunk_base)
            for (int64_t u = 0; u <= pr->units; u++) chunk_base[u] = 0;
        return LIG_SUCCESS;
    }
    index_scan c = {.p = p, .chunk_base = chunk_base};
    const lig_failure bad = lig_first_failure(pr->units, threads, scan_units, &c);
    if (bad.item == INT64_MAX) {
        if (chunk_base) {
            chunk_base[0] = 0;
            for (int64_t u = 0; u < pr->units; u++) chunk_base[u + 1] += chunk_base[u];
        }
        return LIG_SUCCESS;
    }
    const lig_unit x = lig_unit_decode(pr, bad.item);
    const int64_t row = pr->bt.q_base[x.b] + x.t; /* the row's index in the tensor's own first axes */
    char where[96];
    if (pr->tnd) snprintf(where, sizeof where, "[%lld,%lld,%lld]", (long long)row, (long long)x.g, (long long)bad.slot);
    else snprintf(where, sizeof where, "[%lld,%lld,%lld,%lld]", (long long)x.b, (long long)x.t, (long long)x.g,
                  (long long)bad.slot);
    return lig_fail(LIG_ERR_PARAM_INVALID,
                    "sparse_indices: expected values in [-1, %lld) (-1 or a key of batch %lld, whose length is %lld) "
                    "at %s (b,row,key head,slot), got %lld",
                    (long long)pr->bt.lk[x.b], (long long)x.b, (long long)pr->bt.lk[x.b], where,
                    (long long)bad.int_value);
}

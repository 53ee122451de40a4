/* See logits_out.h. */
#include "backends/cpu/operators/logits_out.h"

#include <math.h>

#include "backends/cpu/runtime/threadpool.h"

typedef struct fill_task {
    const lig_fwd_problem *pb;
    float value;
    bool scored; /* true: the scored columns (the trivial zeros); false: the others */
} fill_task;

/* n columns from dst, each `value` as the logits' dtype stores it */
static void fill_run(const lig_logits_out *L, char *dst, int64_t n, float value) {
    const size_t step = (size_t)L->view.dim * L->view.esize;
    for (int64_t j = 0; j < n; j++) lig_logits_put(dst + (size_t)j * step, L->view.dtype, 1, &value, 1);
}

static void fill_units(void *ctx, int tid, int n) {
    const fill_task *f = ctx;
    const lig_fwd_problem *pb = f->pb;
    const lig_logits_out *L = pb->logits;
    const int64_t units = pb->pr.units, u0 = units * tid / n, u1 = units * (tid + 1) / n, W = L->cols;
    const int64_t step = L->view.dim * (int64_t)L->view.esize; /* bytes */
    for (int64_t u = u0; u < u1; u++) {
        const lig_unit x = lig_unit_decode(&pb->pr, u);
        const int64_t len = x.hi >= x.lo ? x.hi - x.lo + 1 : 0;
        char *row = lig_q_row_ptr(&L->view, &pb->pr, x.b, x.t, x.g);
        if (f->scored) {
            if (len > 0) fill_run(L, lig_logits_at(pb, &x, x.lo), len, f->value);
        } else if (L->compressed) {
            fill_run(L, row + len * step, W - len, f->value);
        } else { /* [0, lo) and [hi + 1, W); an empty range has hi + 1 = lo */
            fill_run(L, row, x.lo, f->value);
            fill_run(L, row + (x.hi + 1) * step, W - (x.hi + 1), f->value);
        }
    }
}

static void fill(const lig_fwd_problem *pb, int threads, float value, bool scored) {
    if (pb->logits->cols == 0) return; /* no column (the tensor's data may be NULL) */
    fill_task f = {pb, value, scored};
    const double bytes = (double)pb->logits->view.esize * (double)pb->pr.units * (double)pb->logits->cols;
    lig_parallel(lig_threads_for(bytes, threads), fill_units, &f);
}

void lig_logits_clean(const lig_fwd_problem *pb, int threads) { fill(pb, threads, -INFINITY, false); }

void lig_logits_zero(const lig_fwd_problem *pb) { fill(pb, 1, 0.0f, true); }

static void scan_rows(void *ctx, int64_t r0, int64_t r1, lig_failure *first) {
    const lig_fwd_problem *pb = ctx;
    const lig_problem *pr = &pb->pr;
    const lig_paged_keys *t = pb->paged;
    const int64_t bs = t->block_size;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t lo = pb->ranges->lo[r], hi = pb->ranges->hi[r], b = lig_batch_of_row(pr, r);
        if (lo > hi || bs == 0) continue;
        for (int64_t j = lo / bs; j <= hi / bs; j++) {
            const int64_t block = lig_table_block(t, b, j);
            if (block < 0 || block >= t->num_blocks) {
                *first = (lig_failure){.item = r, .slot = j, .int_value = block};
                return;
            }
        }
    }
}

lig_failure lig_logits_scan_table(const lig_fwd_problem *pb, int threads) {
    const int64_t rows = pb->pr.bt.row_prefix[pb->pr.B];
    return lig_first_failure(rows, lig_threads_for(64.0 * (double)rows, threads), scan_rows, (void *)pb);
}

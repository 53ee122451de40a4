/* LightningIndexer phase 2 (SPEC 1.1): for each unit (batch, valid row, key head) stream the
 * visible keys in blocks, score them, I = sum_h w_h * ReLU(q_h . k), and keep the best
 * sparse_count in a heap. Nothing of size S1 x S2 is ever held; each unit's result is
 * independent of the others, so the output is the same for any thread count. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "api/error.h"
#include "api/executor.h"
#include "convert/dtype_convert.h"
#include "operators/topk.h"
#include "plan/indexer_plan.h"
#include "runtime/cpu_dispatch.h"
#include "runtime/threadpool.h"

typedef struct fwd_run {
    const lig_indexer_plan *p;
    const lig_kernels *kr;
    char *ws;
    atomic_llong next_unit;
} fwd_run;

static void store_index(lig_dtype dtype, char *dst, int64_t v) {
    if (dtype == LIG_INT32) {
        const int32_t x = (int32_t)v;
        memcpy(dst, &x, sizeof x);
    } else {
        memcpy(dst, &v, sizeof v);
    }
}

/* Writes one (row, key head)'s K slots: the n selected candidates, then -1 / -inf. */
static void write_slots(const lig_indexer_plan *p, int64_t b, int64_t t, int64_t g, const lig_candidate *c,
                        int64_t n) {
    char *ip = lig_q_row_ptr(&p->idx, &p->pr, b, t, g);
    const int64_t istep = p->idx.dim * (int64_t)p->idx.esize;
    for (int64_t j = 0; j < p->pr.K; j++, ip += istep) store_index(p->idx.dtype, ip, j < n ? c[j].key : -1);
    if (!p->has_values) return;
    char *vp = lig_q_row_ptr(&p->val, &p->pr, b, t, g);
    const int64_t vstep = p->val.dim * (int64_t)p->val.esize;
    for (int64_t j = 0; j < p->pr.K; j++, vp += vstep) lig_store_float(p->val.dtype, vp, j < n ? c[j].score : -INFINITY);
}

/* D, N1 or S2 is 0: every visible key scores exactly 0, so the first visible keys win. */
static void run_trivial_unit(const lig_indexer_plan *p, int64_t u) {
    const lig_unit x = lig_unit_decode(&p->pr, u);
    char *ip = lig_q_row_ptr(&p->idx, &p->pr, x.b, x.t, x.g);
    char *vp = p->has_values ? lig_q_row_ptr(&p->val, &p->pr, x.b, x.t, x.g) : NULL;
    for (int64_t j = 0; j < p->pr.K; j++) {
        const bool taken = x.lo + j <= x.hi;
        store_index(p->idx.dtype, ip + (size_t)(j * p->idx.dim) * p->idx.esize, taken ? x.lo + j : -1);
        if (vp) lig_store_float(p->val.dtype, vp + (size_t)(j * p->val.dim) * p->val.esize, taken ? 0.0f : -INFINITY);
    }
}

static void run_unit(const fwd_run *r, char *s, int64_t u) {
    const lig_indexer_plan *p = r->p;
    const lig_kernels *kr = r->kr;
    const int64_t G = p->pr.G, D = p->pr.D;
    const lig_fwd_scratch_layout L = lig_fwd_scratch_layout_for(G, D, p->heap_cap);
    float *qt = (float *)(s + L.qt), *w = (float *)(s + L.w), *kp = (float *)(s + L.kp);
    float *a = (float *)(s + L.a), *score = (float *)(s + L.score);
    const lig_unit x = lig_unit_decode(&p->pr, u);

    for (int64_t i = 0; i < G; i++) {
        const int64_t h = x.g * G + i;
        /* a transposed load: the head's row becomes column i of qt */
        const char *qp = lig_q_row_ptr(&p->q, &p->pr, x.b, x.t, h);
        for (int64_t d = 0; d < D; d++)
            qt[d * G + i] = lig_load_float(p->q.dtype, qp + (size_t)(d * p->q.dim) * p->q.esize);
        w[i] = lig_load_float(p->w.dtype, lig_q_row_ptr(&p->w, &p->pr, x.b, x.t, h));
    }
    const int64_t visible = x.hi >= x.lo ? x.hi - x.lo + 1 : 0;
    lig_topk top = {.heap = (lig_candidate *)(s + L.heap), .size = 0,
                    .cap = visible < p->pr.K ? visible : p->pr.K};
    for (int64_t s0 = x.lo; s0 <= x.hi; s0 += LIG_FWD_BLOCK) {
        const int64_t nb = x.hi - s0 + 1 < LIG_FWD_BLOCK ? x.hi - s0 + 1 : LIG_FWD_BLOCK;
        for (int64_t n = 0; n < nb; n++)
            kr->load_row(p->k.dtype, lig_k_row_ptr(&p->k, &p->pr, x.b, s0 + n, x.g), p->k.dim, D, kp + n * D);
        kr->sgemm(nb, G, D, kp, D, 1, qt, G, a, G, false); /* S^T[n][h] = k_n . q_h */
        kr->fwd_scores(a, nb, G, w, score); /* I[n] = sum_h w_h ReLU(S[n][h]) */
        for (int64_t n = 0; n < nb; n++) lig_topk_offer(&top, score[n], s0 + n);
    }
    lig_topk_sort(&top);
    write_slots(p, x.b, x.t, x.g, top.heap, top.size);
}

static void units_task(void *ctx, int tid, int n) {
    fwd_run *r = ctx;
    (void)n;
    char *s = r->ws + (uint64_t)tid * r->p->scratch_stride;
    for (;;) {
        const int64_t u = atomic_fetch_add_explicit(&r->next_unit, 1, memory_order_relaxed);
        if (u >= r->p->pr.units) break;
        run_unit(r, s, u);
    }
}

/* Rows that no unit writes: past each batch's valid length (BSND) or past the last end (TND). */
static void fill_invalid_rows(const lig_indexer_plan *p) {
    const lig_problem *pr = &p->pr;
    const int64_t batches = pr->tnd ? 1 : pr->B;
    for (int64_t b = 0; b < batches; b++) {
        const int64_t first = pr->tnd ? pr->bt.row_prefix[pr->B] : pr->bt.lq[b];
        for (int64_t t = first; t < pr->S1; t++)
            for (int64_t g = 0; g < pr->N2; g++) {
                /* rows are addressed from the batch's base; TND rows past the end use base 0 */
                char *ip = p->idx.data + (size_t)(b * p->idx.batch + t * p->idx.row + g * p->idx.head) * p->idx.esize;
                for (int64_t j = 0; j < pr->K; j++)
                    store_index(p->idx.dtype, ip + (size_t)(j * p->idx.dim) * p->idx.esize, -1);
                if (!p->has_values) continue;
                char *vp = p->val.data + (size_t)(b * p->val.batch + t * p->val.row + g * p->val.head) * p->val.esize;
                for (int64_t j = 0; j < pr->K; j++)
                    lig_store_float(p->val.dtype, vp + (size_t)(j * p->val.dim) * p->val.esize, -INFINITY);
            }
    }
}

lig_status lig_indexer(void *workspace, uint64_t workspace_size, lig_executor *executor, void *stream) {
    lig_status st;
    const lig_indexer_plan *p = lig_executor_plan(executor, LIG_EXECUTOR_INDEXER, &st);
    if (p) st = lig_check_run_args(workspace, workspace_size, p->workspace_size, LIG_EXECUTOR_INDEXER, stream);
    if (st == LIG_SUCCESS) {
        fill_invalid_rows(p);
        if (p->trivial) {
            for (int64_t u = 0; u < p->pr.units; u++) run_trivial_unit(p, u);
        } else if (p->pr.units > 0) {
            fwd_run r = {.p = p, .kr = lig_kernels_get(), .ws = lig_ws_base(workspace)};
            atomic_store(&r.next_unit, 0);
            const double flops = 2.0 * (double)p->pr.units * (double)p->pr.S2 * (double)(p->pr.G * p->pr.D);
            lig_parallel(lig_threads_for(flops, p->threads), units_task, &r);
        }
    }
    lig_destroy_executor(executor); /* consumed, success or not */
    return st;
}

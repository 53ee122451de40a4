/* The main attention's head-mean softmax target on the CPU (docs/contract.md 2.10). Each valid row
 * is one job: its query heads are loaded into the teacher engine once (teacher_engine.c, the KL
 * loss's: the same GEMM and the same per-key mass to the bit), then the keys it takes go through in
 * blocks: dense, the row's visible entries 0 .. n-1 in order; sparse, its slots whose index is a
 * visible entry, in slot order. A key's value is its mass, sum over heads in order of
 * expf(scale * S[h] - lse[h]) in fp32, divided by N1 and rounded once. A row's bytes depend on its
 * own keys only (fixed blocks from key 0 or slot 0), so the output is the same for every thread
 * count. Nothing of size S1 x S2 is held. Sparse indices are checked before anything is written. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "backends/cpu/operators/bf16_operands.h"
#include "backends/cpu/operators/fill.h"
#include "backends/cpu/operators/plan_alloc.h"
#include "backends/cpu/operators/softmax_l1_norm_plan.h"
#include "backends/cpu/runtime/first_failure.h"
#include "backends/cpu/runtime/fp_mode.h"
#include "backends/cpu/runtime/threadpool.h"
#include "core/dtype_convert.h"
#include "core/error.h"
#include "core/settings.h"
#include "core/workspace.h"

/* ---- the index check (sparse) ----------------------------------------------------------------- */

static void scan_rows(void *ctx, int64_t u0, int64_t u1, lig_failure *first) {
    const lig_l1_norm_problem *pb = ctx;
    const lig_problem *pr = &pb->pr;
    const int64_t step = pb->idx.dim * (int64_t)pb->idx.esize;
    for (int64_t u = u0; u < u1; u++) {
        const lig_unit x = lig_unit_decode(pr, u);
        const int64_t lk = pr->bt.lk[x.b];
        const char *ip = lig_q_row_ptr(&pb->idx, pr, x.b, x.t, 0);
        for (int64_t j = 0; j < pr->K; j++, ip += step) {
            const int64_t s = lig_load_int(pb->idx.dtype, ip);
            if (s < -1 || s >= lk) {
                *first = (lig_failure){.item = u, .slot = j, .int_value = s};
                return;
            }
        }
    }
}

/* Every index of every valid row is -1 or an entry of its batch; else the lowest (row, slot). */
static lig_status check_indices(const lig_l1_norm_problem *pb, int threads) {
    const lig_problem *pr = &pb->pr;
    if (pr->K == 0) return LIG_SUCCESS;
    const lig_failure bad = lig_first_failure(pr->units, threads, scan_rows, (void *)pb);
    if (bad.item == INT64_MAX) return LIG_SUCCESS;
    const lig_unit x = lig_unit_decode(pr, bad.item);
    char where[96];
    if (pr->tnd)
        snprintf(where, sizeof where, "[%lld,%lld] (row,slot)", (long long)(pr->bt.q_base[x.b] + x.t), (long long)bad.slot);
    else
        snprintf(where, sizeof where, "[%lld,%lld,%lld] (b,row,slot)", (long long)x.b, (long long)x.t, (long long)bad.slot);
    return lig_fail(LIG_ERR_PARAM_INVALID,
                    "sparse_indices: expected values in [-1, %lld) (-1 or a compressed entry of batch %lld, which has "
                    "%lld) at %s, got %lld",
                    (long long)pr->bt.lk[x.b], (long long)x.b, (long long)pr->bt.lk[x.b], where, (long long)bad.int_value);
}

/* ---- one row ----------------------------------------------------------------------------------- */

static void store_column(const lig_l1_norm_problem *pb, char *row, int64_t c, float v) {
    memcpy(row + (size_t)(c * pb->out.dim) * pb->out.esize, &v, sizeof v);
}

/* The row's n keys key[0 .. n) through the teacher: values (mass / N1, one rounding) stored at
 * columns column[0 .. n). */
static void score_block(const lig_cpu_l1_norm_plan *p, char *s, char *row, int64_t n) {
    const lig_l1_norm_problem *pb = p->pb;
    const char **key = (const char **)(void *)(s + p->key_at);
    const int64_t *column = (const int64_t *)(void *)(s + p->column_at);
    float *score = (float *)(void *)(s + p->score_at), *mass = (float *)(void *)(s + p->mass_at);
    lig_teacher_scores(&p->teacher, s + p->teacher_at, n, key, NULL, score);
    lig_teacher_mass(&p->teacher, n, score, pb->scale, (const float *)(const void *)(s + p->lse_at),
                     (const float *)(const void *)(s + p->one_at), mass);
    const double heads = (double)pb->pr.N1;
    for (int64_t i = 0; i < n; i++) store_column(pb, row, column[i], (float)((double)mass[i] / heads));
}

static void run_row(const lig_cpu_l1_norm_plan *p, char *s, const lig_unit *x) {
    const lig_l1_norm_problem *pb = p->pb;
    const lig_problem *pr = &pb->pr;
    char *row = lig_q_row_ptr(&pb->out, pr, x->b, x->t, 0);
    const int64_t n = lig_compressed_rule_visible(&pb->rule, pr, x->b, x->t);
    if (n == 0 || pr->N1 == 0) { /* nothing seen, or no head to average: every column 0 */
        for (int64_t c = 0; c < pr->K; c++) store_column(pb, row, c, 0.0f);
        return;
    }
    float *lse = (float *)(void *)(s + p->lse_at), *one = (float *)(void *)(s + p->one_at);
    for (int64_t h = 0; h < pr->N1; h++) {
        lse[h] = lig_load_float(LIG_FLOAT32, lig_q_row_ptr(&pb->lse, pr, x->b, x->t, h));
        one[h] = 1.0f; /* exp(x - lse) / 1: exact */
    }
    lig_teacher_begin_row(&p->teacher, s + p->teacher_at, lig_q_row_ptr(&pb->q, pr, x->b, x->t, 0), NULL);
    const char **key = (const char **)(void *)(s + p->key_at);
    int64_t *column = (int64_t *)(void *)(s + p->column_at);
    const int64_t block = p->teacher.block;
    int64_t m = 0; /* keys gathered for the next block */
    if (!pb->sparse) {
        for (int64_t j = 0; j < n; j++) {
            key[m] = lig_k_row_ptr(&pb->k, pr, x->b, j, 0);
            column[m++] = j;
            if (m == block || j == n - 1) {
                score_block(p, s, row, m);
                m = 0;
            }
        }
        for (int64_t c = n; c < pr->K; c++) store_column(pb, row, c, 0.0f);
        return;
    }
    const char *ip = lig_q_row_ptr(&pb->idx, pr, x->b, x->t, 0);
    const int64_t step = pb->idx.dim * (int64_t)pb->idx.esize;
    for (int64_t j = 0; j < pr->K; j++, ip += step) {
        const int64_t e = lig_load_int(pb->idx.dtype, ip);
        if (e >= 0 && e < n) { /* a visible entry; -1 and entries the row may not see hold 0 */
            key[m] = lig_k_row_ptr(&pb->k, pr, x->b, e, 0);
            column[m++] = j;
        } else {
            store_column(pb, row, j, 0.0f);
        }
        if (m == block || (m > 0 && j == pr->K - 1)) {
            score_block(p, s, row, m);
            m = 0;
        }
    }
}

/* ---- the walk ---------------------------------------------------------------------------------- */

typedef struct l1_run {
    const lig_cpu_l1_norm_plan *p;
    char *ws;
    atomic_llong next;
} l1_run;

static void rows_task(void *ctx, int tid, int nthreads) {
    l1_run *r = ctx;
    (void)nthreads;
    const lig_cpu_l1_norm_plan *p = r->p;
    const lig_problem *pr = &p->pb->pr;
    char *s = r->ws + (uint64_t)tid * p->scratch;
    if (p->bf16_threads) lig_bf16_thread_begin(p->teacher.ks);
    for (;;) {
        const int64_t u = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed);
        if (u >= pr->units) break;
        const lig_unit x = lig_unit_decode(pr, u);
        run_row(p, s, &x);
    }
    if (p->bf16_threads) lig_bf16_thread_end(p->teacher.ks);
}

static lig_status run_l1_norm(void *plan, void *workspace, void *stream) {
    const lig_cpu_l1_norm_plan *p = plan;
    const lig_l1_norm_problem *pb = p->pb;
    const lig_problem *pr = &pb->pr;
    (void)stream;
    double flops = 0; /* the scores a row may take: its batch's entries, or its slots */
    for (int64_t b = 0; b < pr->B; b++)
        flops += (double)pr->bt.lq[b] * (double)(pb->sparse ? pr->K : pr->bt.lk[b]);
    flops *= 2.0 * (double)pr->N1 * (double)pr->D;
    const int threads = lig_threads_for(flops, p->threads);
    lig_status st;
    if (pb->sparse && (st = check_indices(pb, threads)) != LIG_SUCCESS) return st; /* nothing written yet */
    /* rows that no job writes: past each batch's valid length (BSND) or the last end (TND) */
    lig_fill_query_rows(pr, &pb->out, 1, pr->K, 0.0, false);
    if (pr->units == 0 || pr->K == 0) return LIG_SUCCESS;
    l1_run r = {.p = p, .ws = lig_ws_base(workspace)};
    atomic_init(&r.next, 0);
    (p->bf16_threads ? lig_parallel_own_threads : lig_parallel)(threads, rows_task, &r);
    return LIG_SUCCESS;
}

static lig_status run_softmax_l1_norm(void *plan, void *workspace, void *stream) {
    return lig_fp_mode_run(run_l1_norm, plan, workspace, stream);
}

/* ---- the plan ---------------------------------------------------------------------------------- */

lig_status lig_cpu_plan_softmax_l1_norm(const lig_l1_norm_problem *pb, lig_backend_plan *out) {
    const lig_kernel_set *ks;
    lig_status st;
    lig_cpu_l1_norm_plan *p = lig_cpu_plan_alloc(sizeof *p, &ks, &st);
    if (!p) return st;
    p->pb = pb;
    const lig_problem *pr = &pb->pr;
    p->teacher = (lig_teacher_ctx){.ks = ks, .dtype = pb->q.dtype, .N1 = pr->N1, .Dm = pr->D, .Dr = 0,
                                   .q_head = pb->q.head, .q_dim = pb->q.dim, .k_dim = pb->k.dim};
    lig_teacher_configure(&p->teacher);
    p->bf16_threads = p->teacher.bf16 && ks->bf16->gemm.thread_begin != NULL;
    const int threads = lig_settings_threads();
    p->threads = threads < 1 ? 1 : threads;
    if (pr->units > 0 && pr->K > 0) { /* a zero extent takes no scratch (contract 6.4) */
        uint64_t at = 0;
        const uint64_t nb = (uint64_t)p->teacher.block, n1 = (uint64_t)pr->N1;
        p->teacher_at = lig_ws_take(&at, lig_teacher_scratch_bytes(&p->teacher));
        p->key_at = lig_ws_take(&at, lig_size_mul(sizeof(const char *), nb));
        p->score_at = lig_ws_take(&at, lig_size_mul3(sizeof(float), nb, (uint64_t)p->teacher.ld));
        p->lse_at = lig_ws_take(&at, lig_size_mul(sizeof(float), n1));
        p->one_at = lig_ws_take(&at, lig_size_mul(sizeof(float), n1));
        p->mass_at = lig_ws_take(&at, lig_size_mul(sizeof(float), nb));
        p->column_at = lig_ws_take(&at, lig_size_mul(sizeof(int64_t), nb));
        p->scratch = at;
        char detail[96];
        snprintf(detail, sizeof detail, "%lld heads, D = %lld", (long long)pr->N1, (long long)pr->D);
        if ((st = lig_cpu_plan_thread_workspace(at, p->threads, detail, &p->workspace_size)) != LIG_SUCCESS) {
            lig_cpu_plan_free(p);
            return st;
        }
    }
    *out = (lig_backend_plan){.plan = p, .workspace_size = p->workspace_size, .kernel_set = ks->name,
                              .run = run_softmax_l1_norm, .free = lig_cpu_plan_free};
    return LIG_SUCCESS;
}

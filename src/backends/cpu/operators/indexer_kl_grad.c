/* lig_indexer_kl_grad on the CPU. Per row t of K slots, over the counted slots C_t:
 *   q_t = softmax(I_t),  loss += sum_{j in C_t, p_j > 0} p_j * (log p_j - log q_tj)
 *   dy_tj = q_tj * sum_{C_t} p - p_tj   (0 outside C_t)
 * in double precision per row; the row losses are summed in row order, so the loss does
 * not depend on the thread count. The target is checked first: nothing is written when a
 * counted slot holds a negative or NaN probability. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/operators/first_failure.h"
#include "backends/cpu/operators/indexer_kl_grad_plan.h"
#include "backends/cpu/runtime/threadpool.h"
#include "core/dtype_convert.h"
#include "core/error.h"
#include "core/settings.h"
#include "core/workspace.h"

typedef struct kl_run {
    const lig_kl_problem *p;
    double *row_loss;
} kl_run;

/* Slot j of row r of a view. */
static char *slot(const lig_kl_problem *p, const lig_slot_view *v, int64_t r, int64_t j) {
    return v->data + lig_slot_offset(p, v, r, j) * v->esize;
}

/* With indices, slot j counts when its index is >= 0; without, when its value is not -inf
 * (what the forward writes into padded slots). */
static bool counts(const lig_kl_problem *p, int64_t r, int64_t j, float value) {
    if (p->has_indices) return lig_load_int(p->indices.dtype, slot(p, &p->indices, r, j)) >= 0;
    return value != -INFINITY;
}

static void scan_targets(void *ctx, int64_t r0, int64_t r1, lig_failure *first) {
    const lig_kl_problem *p = ctx;
    for (int64_t r = r0; r < r1; r++)
        for (int64_t j = 0; j < p->K; j++) {
            const float v = lig_load_float(p->values.dtype, slot(p, &p->values, r, j));
            if (!counts(p, r, j, v)) continue;
            const float t = lig_load_float(p->target.dtype, slot(p, &p->target, r, j));
            if (!(t >= 0.0f)) {
                *first = (lig_failure){.item = r, .slot = j, .value = t};
                return;
            }
        }
}

static void compute_task(void *ctx, int tid, int n) {
    kl_run *k = ctx;
    const lig_kl_problem *p = k->p;
    for (int64_t r = p->rows * tid / n; r < p->rows * (tid + 1) / n; r++) {
        double m = -INFINITY, z = 0.0, mass = 0.0;
        bool any = false;
        for (int64_t j = 0; j < p->K; j++) {
            const float v = lig_load_float(p->values.dtype, slot(p, &p->values, r, j));
            if (!counts(p, r, j, v)) continue;
            if (!any || v > m) m = v;
            any = true;
        }
        for (int64_t j = 0; any && j < p->K; j++) {
            const float v = lig_load_float(p->values.dtype, slot(p, &p->values, r, j));
            if (!counts(p, r, j, v)) continue;
            z += exp((double)v - m);
            mass += lig_load_float(p->target.dtype, slot(p, &p->target, r, j));
        }
        const double log_z = any ? log(z) : 0.0;
        double loss = 0.0;
        for (int64_t j = 0; j < p->K; j++) {
            const float v = lig_load_float(p->values.dtype, slot(p, &p->values, r, j));
            float g = 0.0f;
            if (any && counts(p, r, j, v)) {
                const double t = lig_load_float(p->target.dtype, slot(p, &p->target, r, j));
                const double log_q = (double)v - m - log_z;
                if (t > 0.0) loss += t * (log(t) - log_q);
                g = (float)(exp(log_q) * mass - t);
            }
            lig_store_float(p->dy.dtype, slot(p, &p->dy, r, j), g);
        }
        k->row_loss[r] = loss;
    }
}

static lig_status run(void *plan, void *workspace, void *stream) {
    const lig_cpu_kl_plan *pl = plan;
    const lig_kl_problem *p = pl->pb;
    (void)stream;
    int threads = lig_threads_for(30.0 * (double)p->rows * (double)p->K, pl->threads);
    if (p->rows < threads) threads = p->rows < 1 ? 1 : (int)p->rows;
    const lig_failure bad = lig_first_failure(p->rows, threads, scan_targets, (void *)p);
    if (bad.item != INT64_MAX)
        return lig_fail(LIG_ERR_PARAM_INVALID,
                        "target: expected probabilities >= 0 in counted slots, got %g at row %lld slot %lld", bad.value,
                        (long long)bad.item, (long long)bad.slot);
    double total = 0.0;
    if (p->rows > 0) {
        kl_run k = {.p = p, .row_loss = (double *)(void *)lig_ws_base(workspace)};
        lig_parallel(threads, compute_task, &k);
        for (int64_t r = 0; r < p->rows; r++) total += k.row_loss[r];
    }
    const float out = (float)total;
    memcpy(p->loss, &out, sizeof out);
    return LIG_SUCCESS;
}

static void free_plan(void *plan) { free(plan); }

lig_status lig_cpu_plan_indexer_kl_grad(const lig_kl_problem *pb, lig_backend_plan *out) {
    lig_cpu_kl_plan *p = calloc(1, sizeof *p);
    if (!p) return lig_fail(LIG_ERR_RUNTIME, "executor: expected memory for a plan, got none");
    p->pb = pb;
    const int threads = lig_settings_threads();
    p->threads = threads < 1 ? 1 : threads;
    /* a double per row, for a sum in row order */
    const uint64_t bytes = pb->rows ? sizeof(double) * (uint64_t)pb->rows + LIG_WS_ALIGN : 0;
    *out = (lig_backend_plan){.plan = p, .workspace_size = bytes, .kernel_set = "scalar", .run = run,
                              .free = free_plan};
    return LIG_SUCCESS;
}

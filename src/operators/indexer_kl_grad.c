/* lig_indexer_kl_grad phase 2. Per row t of K slots, over the counted slots C_t:
 *   q_t = softmax(I_t),  loss += sum_{j in C_t, p_j > 0} p_j * (log p_j - log q_tj)
 *   dy_tj = q_tj * sum_{C_t} p - p_tj   (0 outside C_t)
 * in double precision per row; the row losses are summed in row order, so the loss does
 * not depend on the thread count. The target is checked first: nothing is written when a
 * counted slot holds a negative or NaN probability. */
#include <math.h>
#include <stdio.h>

#include "api/error.h"
#include "api/executor.h"
#include "convert/dtype_convert.h"
#include "plan/indexer_kl_grad_plan.h"
#include "plan/problem.h"
#include "runtime/threadpool.h"

#define MAX_TASKS 1024

typedef struct kl_run {
    const lig_indexer_kl_grad_plan *p;
    double *row_loss;
    int64_t bad_row[MAX_TASKS], bad_slot[MAX_TASKS];
    double bad_value[MAX_TASKS];
} kl_run;

/* Slot j of row r of a view. */
static char *slot(const lig_indexer_kl_grad_plan *p, const lig_slot_view *v, int64_t r, int64_t j) {
    return v->data + (lig_slot_row_offset(p, v, r) + j * v->strides[p->ndim - 1]) * v->esize;
}

/* With indices, slot j counts when its index is >= 0; without, when its value is not -inf
 * (what the forward writes into padded slots). */
static bool counts(const lig_indexer_kl_grad_plan *p, int64_t r, int64_t j, float value) {
    if (p->has_indices) return lig_load_int(p->indices.dtype, slot(p, &p->indices, r, j)) >= 0;
    return value != -INFINITY;
}

static void check_task(void *ctx, int tid, int n) {
    kl_run *k = ctx;
    const lig_indexer_kl_grad_plan *p = k->p;
    k->bad_row[tid] = INT64_MAX;
    for (int64_t r = p->rows * tid / n; r < p->rows * (tid + 1) / n; r++)
        for (int64_t j = 0; j < p->K; j++) {
            const float v = lig_load_float(p->values.dtype, slot(p, &p->values, r, j));
            if (!counts(p, r, j, v)) continue;
            const float t = lig_load_float(p->target.dtype, slot(p, &p->target, r, j));
            if (!(t >= 0.0f)) {
                k->bad_row[tid] = r;
                k->bad_slot[tid] = j;
                k->bad_value[tid] = t;
                return;
            }
        }
}

static void compute_task(void *ctx, int tid, int n) {
    kl_run *k = ctx;
    const lig_indexer_kl_grad_plan *p = k->p;
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

static lig_status run_plan(const lig_indexer_kl_grad_plan *p, void *workspace) {
    static _Thread_local kl_run k; /* large: keep it off the stack */
    k.p = p;
    int threads = lig_threads_for(30.0 * (double)p->rows * (double)p->K, p->threads);
    if (threads > MAX_TASKS) threads = MAX_TASKS;
    if (p->rows < threads) threads = p->rows < 1 ? 1 : (int)p->rows;
    for (int i = 0; i < MAX_TASKS; i++) k.bad_row[i] = INT64_MAX;
    lig_parallel(threads, check_task, &k);
    int worst = -1;
    for (int i = 0; i < MAX_TASKS; i++)
        if (k.bad_row[i] != INT64_MAX && (worst < 0 || k.bad_row[i] < k.bad_row[worst])) worst = i;
    if (worst >= 0)
        return lig_fail(LIG_ERR_PARAM_INVALID,
                        "target: expected probabilities >= 0 in counted slots, got %g at row %lld slot %lld",
                        k.bad_value[worst], (long long)k.bad_row[worst], (long long)k.bad_slot[worst]);
    double total = 0.0;
    if (p->rows > 0) {
        k.row_loss = (double *)lig_ws_base(workspace);
        lig_parallel(threads, compute_task, &k);
        for (int64_t r = 0; r < p->rows; r++) total += k.row_loss[r];
    }
    const float out = (float)total;
    memcpy(p->loss, &out, sizeof out);
    return LIG_SUCCESS;
}

lig_status lig_indexer_kl_grad(void *workspace, uint64_t workspace_size, lig_executor *executor, void *stream) {
    lig_status st;
    const lig_indexer_kl_grad_plan *p = lig_executor_plan(executor, LIG_EXECUTOR_INDEXER_KL_GRAD, &st);
    if (p) st = lig_check_run_args(workspace, workspace_size, p->workspace_size, LIG_EXECUTOR_INDEXER_KL_GRAD, stream);
    if (st == LIG_SUCCESS) st = run_plan(p, workspace);
    lig_destroy_executor(executor); /* consumed, success or not */
    return st;
}

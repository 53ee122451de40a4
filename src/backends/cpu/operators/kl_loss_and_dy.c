/* lig_kl_loss_and_dy on the CPU. Per row t of K slots, over the counted slots C_t:
 *   q_t = softmax(I_t),  loss += sum_{j in C_t, p_j > 0} p_j * (log p_j - log q_tj)
 *   dy_tj = q_tj * sum_{C_t} p - p_tj   (0 outside C_t)
 * in double precision per row; the row losses are summed in row order, so the loss does
 * not depend on the thread count. The target is checked first: nothing is written when a
 * counted slot holds a negative or NaN probability. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/runtime/first_failure.h"
#include "backends/cpu/operators/kl_loss_and_dy_plan.h"
#include "backends/cpu/runtime/fp_mode.h"
#include "backends/cpu/runtime/threadpool.h"
#include "core/dtype_convert.h"
#include "core/error.h"
#include "core/settings.h"
#include "core/workspace.h"

typedef struct kl_run {
    const lig_cpu_kl_plan *plan;
    double *row_loss;
    char *scratch; /* per thread: double[K] exponentials, float[K] targets, uint8[K] counted */
} kl_run;

/* A row of a slot view: its first slot and the step between slots, in bytes. */
typedef struct row_ptr {
    const char *at;
    int64_t step;
} row_ptr;

static row_ptr row_of(const lig_kl_dy_problem *p, const lig_slot_view *v, int64_t r) {
    return (row_ptr){.at = v->data + lig_slot_offset(p, v, r, 0) * v->esize,
                     .step = v->strides[p->ndim - 1] * v->esize};
}

/* With indices, slot j counts when its index is >= 0; without, when its value is not -inf
 * (what the forward writes into padded slots). */
static bool counts(const lig_kl_dy_problem *p, const row_ptr *idx, int64_t j, float value) {
    if (p->has_indices) return lig_load_int(p->indices.dtype, idx->at + j * idx->step) >= 0;
    return value != -INFINITY;
}

static void scan_targets(void *ctx, int64_t r0, int64_t r1, lig_failure *first) {
    const lig_kl_dy_problem *p = ctx;
    for (int64_t r = r0; r < r1; r++) {
        const row_ptr val = row_of(p, &p->values, r), tgt = row_of(p, &p->target, r);
        const row_ptr idx = p->has_indices ? row_of(p, &p->indices, r) : (row_ptr){0};
        for (int64_t j = 0; j < p->K; j++) {
            const float v = lig_load_float(p->values.dtype, val.at + j * val.step);
            if (!counts(p, &idx, j, v)) continue;
            const float t = lig_load_float(p->target.dtype, tgt.at + j * tgt.step);
            if (!(t >= 0.0f)) {
                *first = (lig_failure){.item = r, .slot = j, .value = t};
                return;
            }
        }
    }
}

/* One row: the softmax over its counted slots in double, each exponential computed once.
 * Scratch: e (values, then exponentials), tg (targets), on (which slots count). */
static double row_step(const lig_kl_dy_problem *p, int64_t r, double *e, float *tg, unsigned char *on) {
    const row_ptr val = row_of(p, &p->values, r), tgt = row_of(p, &p->target, r), dyr = row_of(p, &p->dy, r);
    const row_ptr idx = p->has_indices ? row_of(p, &p->indices, r) : (row_ptr){0};
    double m = -INFINITY;
    bool any = false;
    for (int64_t j = 0; j < p->K; j++) {
        const float v = lig_load_float(p->values.dtype, val.at + j * val.step);
        on[j] = counts(p, &idx, j, v);
        if (!on[j]) continue;
        e[j] = v;
        if (!any || v > m) m = v;
        any = true;
    }
    double z = 0.0, mass = 0.0;
    for (int64_t j = 0; any && j < p->K; j++) {
        if (!on[j]) continue;
        tg[j] = lig_load_float(p->target.dtype, tgt.at + j * tgt.step);
        e[j] = exp(e[j] - m);
        z += e[j];
        mass += tg[j];
    }
    const double log_z = any ? log(z) : 0.0;
    double loss = 0.0;
    char *dy = (char *)dyr.at;
    for (int64_t j = 0; j < p->K; j++, dy += dyr.step) {
        float g = 0.0f;
        if (any && on[j]) {
            const double t = tg[j];
            const double v = lig_load_float(p->values.dtype, val.at + j * val.step);
            if (t > 0.0) loss += t * (log(t) - (v - m - log_z));
            g = (float)(e[j] / z * mass - t);
        }
        lig_store_float(p->dy.dtype, dy, g);
    }
    return loss;
}

static void compute_task(void *ctx, int tid, int n) {
    kl_run *k = ctx;
    const lig_kl_dy_problem *p = k->plan->pb;
    char *s = k->scratch + (size_t)tid * k->plan->scratch_stride;
    double *e = (double *)(void *)s;
    float *tg = (float *)(void *)(s + sizeof(double) * (size_t)p->K);
    unsigned char *on = (unsigned char *)(s + (sizeof(double) + sizeof(float)) * (size_t)p->K);
    for (int64_t r = p->rows * tid / n; r < p->rows * (tid + 1) / n; r++) k->row_loss[r] = row_step(p, r, e, tg, on);
}

static lig_status run_kl_grad(void *plan, void *workspace, void *stream) {
    const lig_cpu_kl_plan *pl = plan;
    const lig_kl_dy_problem *p = pl->pb;
    (void)stream;
    int threads = lig_threads_for(30.0 * (double)p->rows * (double)p->K, pl->threads);
    if (p->rows < threads) threads = p->rows < 1 ? 1 : (int)p->rows;
    const lig_failure bad = lig_first_failure(p->rows, threads, scan_targets, (void *)p);
    if (bad.item != INT64_MAX)
        return lig_fail(LIG_ERR_PARAM_INVALID,
                        "target: expected probabilities >= 0 in counted slots, got %g at row %lld slot %lld", bad.value,
                        (long long)bad.item, (long long)bad.slot);
    double total = 0.0;
    if (p->rows > 0 && p->K > 0) { /* with K = 0 every row is empty: it adds 0 and has no dy */
        char *ws = lig_ws_base(workspace);
        kl_run k = {.plan = pl, .row_loss = (double *)(void *)ws, .scratch = ws + pl->scratch_at};
        lig_parallel(threads, compute_task, &k);
        for (int64_t r = 0; r < p->rows; r++) total += k.row_loss[r];
    }
    const float out = (float)total;
    memcpy(p->loss, &out, sizeof out);
    return LIG_SUCCESS;
}

static lig_status run(void *plan, void *workspace, void *stream) {
    return lig_fp_mode_run(run_kl_grad, plan, workspace, stream);
}

static void free_plan(void *plan) { free(plan); }

lig_status lig_cpu_plan_kl_loss_and_dy(const lig_kl_dy_problem *pb, lig_backend_plan *out) {
    lig_cpu_kl_plan *p = calloc(1, sizeof *p);
    if (!p) return lig_fail(LIG_ERR_RUNTIME, "executor: expected memory for a plan, got none");
    p->pb = pb;
    const int threads = lig_settings_threads();
    p->threads = threads < 1 ? 1 : threads;
    /* a double per row, for a sum in row order, then each thread's row scratch */
    uint64_t at = 0;
    lig_ws_take(&at, lig_size_mul(sizeof(double), (uint64_t)pb->rows));
    p->scratch_stride = lig_size_align(lig_size_mul(sizeof(double) + sizeof(float) + 1, (uint64_t)pb->K), LIG_WS_ALIGN);
    p->scratch_at = lig_ws_take(&at, lig_size_mul(p->scratch_stride, (uint64_t)p->threads));
    /* an empty problem asks for no workspace (contract 6.4): no rows, or rows of no slots */
    const uint64_t bytes = pb->rows && pb->K ? lig_ws_total(at, 0, 0) : 0;
    char detail[96];
    snprintf(detail, sizeof detail, "%lld rows of K = %lld slots", (long long)pb->rows, (long long)pb->K);
    const lig_status st = lig_size_check(bytes, "sparse_values", "the bytes of the workspace", detail);
    if (st != LIG_SUCCESS) {
        free(p);
        return st;
    }
    *out = (lig_backend_plan){.plan = p, .workspace_size = bytes, .kernel_set = "scalar", .run = run,
                              .free = free_plan};
    return LIG_SUCCESS;
}

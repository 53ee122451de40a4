/* The dense KL gradient over compressed keys on the CPU (docs/contract.md 2.9). The backward's
 * walk (indexer_grad.c) runs the units over their dense slots (every visible entry, in key
 * order); this file is its dy source: before a unit's walk it
 *   1. scores the unit's visible entries with the forward's engine: I_j = sum_h w_h ReLU(q_h . k_j),
 *   2. in double, in key order: P = sum_j p_j of the target, y_j = exp(I_j - lse) (the given lse),
 *      the unit's loss sum_j p_j (log p_j - (I_j - lse)) over p_j > 0, and dI_j = y_j P - p_j,
 *      each output rounded once to fp32; y goes to softmax_out (0 past the visible prefix),
 * and the walk takes dI as dy. The unit losses are stored per unit and summed in unit order at
 * the end; dQ, dW and (with the ring) dK are the backward's: every output is the same for every
 * thread count and run in deterministic mode. Nothing of size rows x entries is held. */
#include <math.h>
#include <string.h>

#include "backends/cpu/operators/dense_kl_grad_plan.h"
#include "backends/cpu/operators/fill.h"
#include "backends/cpu/runtime/fp_mode.h"
#include "core/dtype_convert.h"
#include "core/workspace.h"

typedef struct dense_kl_run {
    const lig_cpu_dense_kl_plan *p;
    double *unit_loss; /* [units] */
} dense_kl_run;

/* Steps 1-2 for unit u (see the top); returns dI of its visible entries and stores its loss. */
static const float *unit_dy(void *ctx, char *s, int64_t u, const lig_unit *x) {
    const dense_kl_run *r = ctx;
    const lig_cpu_dense_kl_plan *p = r->p;
    const lig_dense_kl_grad_problem *pb = p->pb;
    const lig_problem *pr = &pb->g.pr;
    float *dy = (float *)(void *)(s + p->scratch.dy);
    const int64_t n = lig_grad_dense_slots(x);
    const char *target = lig_q_row_ptr(&pb->target, pr, x->b, x->t, x->g);
    char *out = lig_q_row_ptr(&pb->softmax_out, pr, x->b, x->t, x->g);
    const int64_t t_step = pb->target.dim * (int64_t)pb->target.esize, o_step = pb->softmax_out.dim * (int64_t)pb->softmax_out.esize;
    const lig_grad_problem *g = &pb->g;
    lig_fwd_score_unit(p->fwd, &p->fctx, s + p->scratch.fwd, (const char **)(void *)(s + p->scratch.key),
                       (float *)(void *)(s + p->scratch.score), pr, &g->q, &g->w, &g->k, x, NULL, n, dy);
    const double lse = lig_load_float(LIG_FLOAT32, lig_q_row_ptr(&pb->lse, pr, x->b, x->t, x->g));
    double total = 0.0;
    for (int64_t j = 0; j < n; j++) total += lig_load_float(LIG_FLOAT32, target + j * t_step);
    double loss = 0.0;
    for (int64_t j = 0; j < n; j++) {
        const double t = lig_load_float(LIG_FLOAT32, target + j * t_step), log_y = (double)dy[j] - lse, y = exp(log_y);
        if (t > 0.0) loss += t * (log(t) - log_y); /* 0 log 0 = 0 */
        lig_store_float(LIG_FLOAT32, out + j * o_step, (float)y);
        dy[j] = (float)(y * total - t);
    }
    for (int64_t j = n; j < pb->width; j++) lig_store_float(LIG_FLOAT32, out + j * o_step, 0.0f);
    r->unit_loss[u] = loss;
    return dy;
}

static lig_status run_dense_kl(void *plan, void *workspace, void *stream) {
    const lig_cpu_dense_kl_plan *p = plan;
    const lig_dense_kl_grad_problem *pb = p->pb;
    const lig_problem *pr = &pb->g.pr;
    (void)stream;
    dense_kl_run r = {.p = p, .unit_loss = p->unit_work ? (double *)(void *)(lig_ws_base(workspace) + p->grad.ws.extra) : NULL};
    const lig_grad_dy_source source = {.ctx = &r, .unit_dy = unit_dy};
    double entries = 0; /* the visible (row, entry) pairs at most: every row sees its batch's entries */
    for (int64_t b = 0; b < pr->B; b++) entries += (double)pr->bt.lq[b] * (double)pr->bt.lk[b];
    const double flops = entries * (double)pr->N2 * 8.0 * (double)(pr->G * pr->D);
    /* the rows no unit owns */
    lig_fill_query_rows(pr, &pb->softmax_out, pr->N2, pb->width, 0.0, false);
    /* with nothing to multiply (D = 0, no key) the walk still gives every unit to the source */
    const lig_status st = lig_cpu_grad_execute(&p->grad, workspace, p->unit_work ? &source : NULL, flops);
    if (st != LIG_SUCCESS) return st;
    if (pb->loss) {
        double total = 0.0;
        for (int64_t u = 0; p->unit_work && u < pr->units; u++) total += r.unit_loss[u]; /* unit order */
        const float value = (float)total;
        memcpy(pb->loss, &value, sizeof value);
    }
    return LIG_SUCCESS;
}

lig_status lig_cpu_run_dense_kl_grad(void *plan, void *workspace, void *stream) {
    return lig_fp_mode_run(run_dense_kl, plan, workspace, stream);
}

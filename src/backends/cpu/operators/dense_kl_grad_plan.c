/* Planning the dense KL gradient on the CPU: the forward's engine for I (one row per stripe, chosen
 * as the forward chooses it), its scratch and the unit losses as extras of the backward's plan
 * (indexer_grad_plan.c), so that the workspace layout, the ring and the thread count are the
 * backward's. */
#include "backends/cpu/operators/dense_kl_grad_plan.h"
#include "backends/cpu/operators/plan_alloc.h"
#include "core/workspace.h"

static lig_dense_kl_scratch scratch_layout(const lig_cpu_dense_kl_plan *p) {
    lig_dense_kl_scratch l;
    uint64_t at = 0;
    const uint64_t fb = (uint64_t)p->fctx.block;
    l.fwd = lig_ws_take(&at, p->fwd->scratch_bytes(&p->fctx));
    l.key = lig_ws_take(&at, lig_size_mul(sizeof(char *), fb));
    l.score = lig_ws_take(&at, lig_size_mul(sizeof(float), fb));
    l.dy = lig_ws_take(&at, lig_size_mul(sizeof(float), (uint64_t)p->pb->g.pr.K));
    l.total = at;
    return l;
}

lig_status lig_cpu_plan_dense_indexer_kl_loss_grad(const lig_dense_kl_grad_problem *pb, lig_backend_plan *out) {
    const lig_kernel_set *ks;
    lig_status st;
    lig_cpu_dense_kl_plan *p = lig_cpu_plan_alloc(sizeof *p, &ks, &st);
    if (!p) return st;
    p->pb = pb;
    const lig_grad_problem *g = &pb->g;
    const lig_problem *pr = &g->pr;
    p->fwd = lig_fwd_float_engine_for(ks, g->q.dtype, 1, pr->G);
    p->fctx = (lig_fwd_ctx){.ks = ks, .G = pr->G, .D = pr->D, .rows = 1, .dtype = g->q.dtype, .w_dtype = g->w.dtype,
                            .q_head = g->q.head, .q_dim = g->q.dim, .w_head = g->w.head, .k_dim = g->k.dim};
    p->fwd->configure(&p->fctx);
    p->scratch = scratch_layout(p);
    /* every valid row has a softmax and a loss term even with nothing to multiply (D = 0: I = 0) */
    p->unit_work = pr->units > 0;
    st = lig_cpu_grad_plan_init(&p->grad, g, ks, p->unit_work ? lig_size_mul(sizeof(double), (uint64_t)pr->units) : 0,
                                p->unit_work ? p->scratch.total : 0, lig_fwd_engine_own_threads(p->fwd, ks));
    if (st != LIG_SUCCESS) {
        lig_cpu_plan_free(p);
        return st;
    }
    *out = (lig_backend_plan){.plan = p, .workspace_size = p->grad.ws.total,
                              .kernel_set = p->grad.engine->kernels_name(&p->grad.ctx),
                              .run = lig_cpu_run_dense_kl_grad, .free = lig_cpu_plan_free};
    return LIG_SUCCESS;
}

/* Planning the KL loss on the CPU: the teacher's and the forward's engines for the dtype, their
 * scratch and the unit losses as extras of the backward's plan (indexer_grad_plan.c), so that the
 * workspace layout, the ring and the thread count are the backward's. */
#include <stdlib.h>

#include "backends/cpu/operators/plan_alloc.h"
#include "backends/cpu/operators/sparse_grad_kl_loss_plan.h"
#include "core/error.h"
#include "core/workspace.h"

static lig_kl_loss_scratch scratch_layout(const lig_cpu_grad_kl_loss_plan *p) {
    lig_kl_loss_scratch l;
    uint64_t at = 0;
    const uint64_t K = (uint64_t)p->pb->g.pr.K, tb = (uint64_t)p->teacher.block, fb = (uint64_t)p->fctx.block;
    l.teacher = lig_ws_take(&at, lig_teacher_scratch_bytes(&p->teacher));
    l.fwd = lig_ws_take(&at, p->fwd->scratch_bytes(&p->fctx));
    l.key = lig_ws_take(&at, lig_size_mul(sizeof(char *), tb));
    l.key_rope = lig_ws_take(&at, lig_size_mul(sizeof(char *), tb));
    l.ikey = lig_ws_take(&at, lig_size_mul(sizeof(char *), fb));
    l.scores = lig_ws_take(&at, lig_size_mul3(sizeof(float), tb, (uint64_t)p->teacher.ld));
    l.iscore = lig_ws_take(&at, lig_size_mul(sizeof(float), fb));
    l.stat_m = lig_ws_take(&at, lig_size_mul(sizeof(float), (uint64_t)p->pb->N1m));
    l.stat_s = lig_ws_take(&at, lig_size_mul(sizeof(float), (uint64_t)p->pb->N1m));
    l.slot = lig_ws_take(&at, lig_size_mul(sizeof(int64_t), K));
    l.mass = lig_ws_take(&at, lig_size_mul(sizeof(float), K));
    l.value = lig_ws_take(&at, lig_size_mul(sizeof(float), K));
    l.dy = lig_ws_take(&at, lig_size_mul(sizeof(float), K));
    l.total = at;
    return l;
}

lig_status lig_cpu_run_sparse_grad_kl_loss(void *plan, void *workspace, void *stream); /* sparse_grad_kl_loss.c */

lig_status lig_cpu_plan_sparse_indexer_grad_kl_loss(const lig_grad_kl_loss_problem *pb, lig_backend_plan *out) {
    const lig_kernel_set *ks;
    lig_status st;
    lig_cpu_grad_kl_loss_plan *p = lig_cpu_plan_alloc(sizeof *p, &ks, &st);
    if (!p) return st;
    p->pb = pb;
    p->teacher = (lig_teacher_ctx){.ks = ks, .dtype = pb->mq.dtype, .N1 = pb->N1m, .Dm = pb->Dm, .Dr = pb->Dr,
                                   .q_head = pb->mq.head, .q_dim = pb->mq.dim, .qr_head = pb->mqr.head,
                                   .qr_dim = pb->mqr.dim, .k_dim = pb->mk.dim, .kr_dim = pb->mkr.dim};
    lig_teacher_configure(&p->teacher);
    const lig_grad_problem *g = &pb->g;
    const lig_problem *pr = &g->pr;
    /* I on the forward's engine, a stripe of one query row (the unit's), chosen as the forward does */
    const bool fwd_bf16 = g->q.dtype == LIG_BFLOAT16 && ks->bf16 != NULL && pr->G >= ks->bf16->min_group;
    p->fwd = fwd_bf16 ? &lig_fwd_engine_bf16 : &lig_fwd_engine_f32;
    p->fctx = (lig_fwd_ctx){.ks = ks, .G = pr->G, .D = pr->D, .rows = 1, .dtype = g->q.dtype, .w_dtype = g->w.dtype, .q_head = g->q.head,
                            .q_dim = g->q.dim, .w_head = g->w.head, .k_dim = g->k.dim};
    p->fwd->configure(&p->fctx);
    p->scratch = scratch_layout(p);
    const bool bf16_threads = (p->teacher.bf16 || fwd_bf16) && ks->bf16->gemm.thread_begin != NULL;
    /* with no unit or no slot there is no loss term: no extras, and an empty problem takes 0 bytes */
    const bool loss_work = pr->units > 0 && pr->K > 0 && pr->key_rows > 0;
    st = lig_cpu_grad_plan_init(&p->grad, g, ks, loss_work ? lig_size_mul(sizeof(double), (uint64_t)pr->units) : 0,
                                loss_work ? p->scratch.total : 0, bf16_threads);
    if (st != LIG_SUCCESS) {
        lig_cpu_plan_free(p);
        return st;
    }
    *out = (lig_backend_plan){.plan = p, .workspace_size = p->grad.ws.total,
                              .kernel_set = p->grad.engine->kernels_name(&p->grad.ctx),
                              .run = lig_cpu_run_sparse_grad_kl_loss, .free = lig_cpu_plan_free};
    return LIG_SUCCESS;
}

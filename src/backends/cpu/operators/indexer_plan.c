/* Planning the CPU forward: per-thread scratch only, bounded by K and one block of keys, never
 * by the [S1, S2] score matrix. */
#include <stdlib.h>

#include "backends/cpu/operators/indexer_plan.h"
#include "backends/cpu/operators/topk.h"
#include "core/error.h"
#include "core/settings.h"
#include "core/workspace.h"

static void free_plan(void *plan) { free(plan); }

lig_status lig_cpu_plan_indexer(const lig_fwd_problem *pb, lig_backend_plan *out) {
    const lig_kernel_set *ks;
    lig_status st = lig_kernel_set_current(&ks);
    if (st != LIG_SUCCESS) return st;
    lig_cpu_fwd_plan *p = calloc(1, sizeof *p);
    if (!p) return lig_fail(LIG_ERR_RUNTIME, "executor: expected memory for a plan, got none");
    const lig_problem *pr = &pb->pr;
    p->pb = pb;
    int64_t longest = 0;
    for (int64_t b = 0; b < pr->B; b++)
        if (pr->bt.lk[b] > longest) longest = pr->bt.lk[b];
    p->heap_cap = pr->K < longest ? pr->K : longest;
    /* rows per pass: each keeps its own top-k, so a very large K takes fewer rows at a time */
    const uint64_t topk_bytes = lig_topk_scratch_bytes(p->heap_cap);
    int64_t rows = lig_fwd_rows_for(pr->G);
    while (rows > 1 && (uint64_t)rows * topk_bytes > LIG_FWD_TOPK_BUDGET) rows--;
    /* bf16 inputs go to the set's bf16 kernels when it has them and a pass's columns (rows x
     * heads) are wide enough; everything else is fp32 */
    const bool bf16 = pb->q.dtype == LIG_BFLOAT16 && ks->bf16_gemm.ukernel != NULL && rows * pr->G >= ks->bf16_min_group;
    p->engine = bf16 ? &lig_fwd_engine_bf16 : &lig_fwd_engine_f32;
    p->ctx = (lig_fwd_ctx){.ks = ks, .G = pr->G, .D = pr->D, .rows = rows, .dtype = pb->q.dtype, .q_head = pb->q.head,
                           .q_dim = pb->q.dim, .w_head = pb->w.head, .k_dim = pb->k.dim};
    p->engine->configure(&p->ctx);
    const int threads = lig_settings_threads();
    p->threads = threads < 1 ? 1 : threads;
    /* a paged cache without blocks holds no key: phase 2's table check refuses every batch that
     * has keys, and the others only get -1 / -inf */
    p->trivial = pr->D == 0 || pr->G == 0 || pr->key_rows == 0 || (pr->paged && pr->num_blocks == 0);
    if (pr->units > 0 && !p->trivial) { /* a zero extent takes no scratch (contract 6.4) */
        uint64_t at = 0;
        const uint64_t nb = (uint64_t)p->ctx.block;
        p->scratch.key = lig_ws_take(&at, sizeof(const char *) * nb);
        p->scratch.q = lig_ws_take(&at, 2 * sizeof(const char *) * (uint64_t)rows);
        p->scratch.score = lig_ws_take(&at, sizeof(float) * nb * (uint64_t)rows);
        p->scratch.topk_bytes = topk_bytes;
        p->scratch.topk = lig_ws_take(&at, topk_bytes * (uint64_t)rows);
        p->scratch.engine = lig_ws_take(&at, p->engine->scratch_bytes(&p->ctx));
        p->scratch.total = at;
        p->workspace_size = at * (uint64_t)p->threads + LIG_WS_ALIGN;
    }
    *out = (lig_backend_plan){.plan = p, .workspace_size = p->workspace_size, .kernel_set = p->engine->kernels_name(&p->ctx),
                              .run = lig_cpu_run_indexer, .free = free_plan};
    return LIG_SUCCESS;
}

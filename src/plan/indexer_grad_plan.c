/* Workspace sizing for the backward: the plan decides every buffer phase 2 uses, so that
 * phase 2 allocates nothing and a caller can reuse one workspace across calls. */
#include "plan/indexer_grad_plan.h"





lig_grad_scratch_layout lig_grad_scratch_layout_for(int64_t G, int64_t D) {
    lig_grad_scratch_layout l;
    uint64_t c = 0, f = sizeof(float);
    l.q = lig_ws_take(&c, f * (uint64_t)(G * D));
    l.qt = lig_ws_take(&c, f * (uint64_t)(G * D));
    l.dq = lig_ws_take(&c, f * (uint64_t)(G * D));
    l.kp = lig_ws_take(&c, f * (uint64_t)(LIG_GRAD_BLOCK * D));
    l.tile = lig_ws_take(&c, f * (uint64_t)(LIG_GRAD_BLOCK * D));
    l.a = lig_ws_take(&c, f * (uint64_t)(G * LIG_GRAD_BLOCK));
    l.w = lig_ws_take(&c, f * (uint64_t)G);
    l.dw = lig_ws_take(&c, f * (uint64_t)G);
    l.dy = lig_ws_take(&c, f * LIG_GRAD_BLOCK);
    l.key = lig_ws_take(&c, sizeof(int64_t) * LIG_GRAD_BLOCK);
    l.total = c;
    return l;
}

/* Slots per ring buffer: a whole unit (K) unless the ring would pass 256 MiB; larger units
 * then add directly in their turn (see operators/indexer_grad.c). */
static int64_t unit_capacity(const lig_indexer_grad_plan *p) {
    const int64_t budget_floats = (int64_t)1 << 26;
    int64_t cap = budget_floats / (p->ring_units * p->pr.D);
    if (cap < LIG_GRAD_BLOCK) cap = LIG_GRAD_BLOCK;
    return p->pr.K < cap ? p->pr.K : cap;
}

void lig_indexer_grad_plan_workspace(lig_indexer_grad_plan *p, int threads) {
    lig_grad_workspace_layout *ws = &p->ws;
    *ws = (lig_grad_workspace_layout){0};
    p->threads = threads < 1 ? 1 : threads;
    p->ring_units = p->unit_cap = 0;
    if (p->empty) return; /* only index checks and zero fills: no scratch at all */

    const uint64_t acc_rows = (uint64_t)(p->pr.key_rows * p->pr.N2);
    uint64_t c = 0;
    ws->dk_acc = lig_ws_take(&c, sizeof(float) * acc_rows * (uint64_t)p->pr.D);
    if (p->deterministic) {
        p->ring_units = 2 * (int64_t)p->threads + 2;
        if (p->ring_units > p->pr.units) p->ring_units = p->pr.units;
        p->unit_cap = unit_capacity(p);
        const uint64_t slots = (uint64_t)(p->ring_units * p->unit_cap);
        ws->ring = lig_ws_take(&c, sizeof(float) * slots * (uint64_t)p->pr.D);
        ws->ring_key = lig_ws_take(&c, sizeof(int64_t) * slots);
        ws->ring_count = lig_ws_take(&c, sizeof(int64_t) * (uint64_t)p->ring_units);
        ws->ring_ready = lig_ws_take(&c, sizeof(int64_t) * (uint64_t)p->ring_units);
    } else {
        ws->locks = lig_ws_take(&c, sizeof(uint32_t) * acc_rows);
    }
    ws->scratch_stride = lig_grad_scratch_layout_for(p->pr.G, p->pr.D).total;
    ws->scratch = lig_ws_take(&c, ws->scratch_stride * (uint64_t)p->threads);
    ws->total = c + LIG_WS_ALIGN; /* room to align whatever base pointer the caller passes */
}

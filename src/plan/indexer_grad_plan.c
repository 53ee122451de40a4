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

/* Slots of one deterministic wave: several units per thread so that the ordered dK pass
 * is amortised, bounded so that the pool stays a modest fraction of memory. Units with
 * more counted slots than this run alone (see operators/indexer_grad.c). */
static int64_t wave_slots(const lig_indexer_grad_plan *p, int threads) {
    const int64_t per_thread_floats = (int64_t)1 << 19; /* 2 MiB of contributions */
    const int64_t cap_floats = (int64_t)1 << 26;        /* 256 MiB in all ... */
    const int64_t unit_cap_floats = (int64_t)1 << 28;   /* ... or one whole unit up to 1 GiB */
    const int64_t K = p->pr.K < (INT64_MAX >> 4) ? p->pr.K : (INT64_MAX >> 4);
    int64_t per_thread = per_thread_floats / p->pr.D;
    if (per_thread < 4 * K) per_thread = 4 * K;
    int64_t slots = per_thread > INT64_MAX / threads ? INT64_MAX : per_thread * threads;
    int64_t cap = cap_floats / p->pr.D;
    if (cap < K && K <= unit_cap_floats / p->pr.D) cap = K;
    if (cap < 1) cap = 1;
    if (slots > cap) slots = cap;
    int64_t bound = p->pr.units > INT64_MAX / K ? INT64_MAX : p->pr.units * K;
    return slots < bound ? slots : bound;
}

void lig_indexer_grad_plan_workspace(lig_indexer_grad_plan *p, int threads) {
    lig_grad_workspace_layout *ws = &p->ws;
    *ws = (lig_grad_workspace_layout){0};
    p->threads = threads < 1 ? 1 : threads;
    p->pool_slots = 0;
    if (p->empty) return; /* only index checks and zero fills: no scratch at all */

    const uint64_t acc_rows = (uint64_t)(p->pr.key_rows * p->pr.N2);
    uint64_t c = 0;
    ws->dk_acc = lig_ws_take(&c, sizeof(float) * acc_rows * (uint64_t)p->pr.D);
    ws->unit_offset = lig_ws_take(&c, sizeof(int64_t) * (uint64_t)(p->pr.units + 1));
    if (p->deterministic) {
        p->pool_slots = wave_slots(p, p->threads);
        ws->pool = lig_ws_take(&c, sizeof(float) * (uint64_t)(p->pool_slots * p->pr.D));
        ws->pool_key = lig_ws_take(&c, sizeof(int64_t) * (uint64_t)p->pool_slots);
    } else {
        ws->locks = lig_ws_take(&c, sizeof(uint32_t) * acc_rows);
    }
    ws->scratch_stride = lig_grad_scratch_layout_for(p->pr.G, p->pr.D).total;
    ws->scratch = lig_ws_take(&c, ws->scratch_stride * (uint64_t)p->threads);
    ws->total = c + LIG_WS_ALIGN; /* room to align whatever base pointer the caller passes */
}

/* Workspace sizing for the forward: per-thread scratch only, bounded by K and one block of
 * keys, never by the [S1, S2] score matrix. */
#include "plan/indexer_plan.h"

lig_fwd_scratch_layout lig_fwd_scratch_layout_for(int64_t G, int64_t D, int64_t heap_cap) {
    lig_fwd_scratch_layout l;
    uint64_t c = 0, f = sizeof(float);
    l.qt = lig_ws_take(&c, f * (uint64_t)(G * D));
    l.w = lig_ws_take(&c, f * (uint64_t)G);
    l.kp = lig_ws_take(&c, f * (uint64_t)(LIG_FWD_BLOCK * D));
    l.a = lig_ws_take(&c, f * (uint64_t)(G * LIG_FWD_BLOCK));
    l.score = lig_ws_take(&c, f * LIG_FWD_BLOCK);
    l.heap = lig_ws_take(&c, sizeof(lig_candidate) * (uint64_t)heap_cap);
    l.total = c;
    return l;
}

void lig_indexer_plan_workspace(lig_indexer_plan *p, int threads) {
    int64_t longest = 0;
    for (int64_t b = 0; b < p->pr.B; b++)
        if (p->pr.bt.lk[b] > longest) longest = p->pr.bt.lk[b];
    p->heap_cap = p->pr.K < longest ? p->pr.K : longest;
    p->threads = threads < 1 ? 1 : threads;
    p->trivial = p->pr.D == 0 || p->pr.G == 0 || p->pr.key_rows == 0;
    if (p->pr.units == 0 || p->trivial) { /* a zero extent: no scratch (SPEC 5) */
        p->scratch_stride = p->workspace_size = 0;
        return;
    }
    p->scratch_stride = lig_fwd_scratch_layout_for(p->pr.G, p->pr.D, p->heap_cap).total;
    p->workspace_size = p->scratch_stride * (uint64_t)p->threads + LIG_WS_ALIGN;
}

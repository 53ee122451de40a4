/* Planning the CPU backward: the kernel set and engine for the problem's dtype, the thread
 * count, and a workspace layout that phase 2 fills without allocating (a caller can reuse one
 * workspace across calls). */
#include <stdio.h>
#include <stdlib.h>

#include "backends/cpu/operators/plan_alloc.h"
#include "backends/cpu/operators/indexer_grad_plan.h"
#include "core/error.h"
#include "core/settings.h"
#include "core/tuning.h"
#include "core/workspace.h"

/* Chunks in the commit ring: room for every thread to run two whole units ahead of the commit
 * cursor (so that threads rarely wait for each other), within a 256 MiB budget, and never
 * fewer than two per thread. A smaller ring only makes threads wait more: any capacity >= 1
 * computes the same result. */
static int64_t ring_capacity(const lig_cpu_grad_plan *p) {
    const int64_t forced = lig_tuning_current().grad_ring_chunks; /* tests only (core/tuning.h) */
    if (forced > 0) return forced;
    const lig_problem *pr = &p->pb->pr;
    int64_t longest = 0;
    for (int64_t b = 0; b < pr->B; b++)
        if (pr->bt.lk[b] > longest) longest = pr->bt.lk[b];
    const int64_t counted = pr->K < longest ? pr->K : longest;
    const int64_t per_unit = counted / p->ctx.block + 1;
    const uint64_t chunk_bytes =
        lig_size_mul((uint64_t)p->ctx.block, lig_size_add(lig_size_mul((uint64_t)p->ctx.contrib_ld, 4), 12));
    const int64_t budget = (int64_t)(((uint64_t)256 << 20) / chunk_bytes);
    const int64_t ahead = 2 * (int64_t)p->threads + 2;
    int64_t chunks = per_unit > budget / ahead ? budget : ahead * per_unit;
    if (chunks < 2 * (int64_t)p->threads) chunks = 2 * (int64_t)p->threads;
    return chunks;
}

static lig_grad_scratch_layout scratch_layout(const lig_cpu_grad_plan *p) {
    lig_grad_scratch_layout l;
    uint64_t at = 0;
    const uint64_t nb = (uint64_t)p->ctx.block;
    l.key = lig_ws_take(&at, sizeof(const char *) * 2 * nb);
    l.dy = lig_ws_take(&at, sizeof(float) * 2 * nb);
    l.acc_row = lig_ws_take(&at, sizeof(int64_t) * 2 * nb);
    const bool own_contrib = !p->pb->deterministic;
    l.contrib = lig_ws_take(&at, own_contrib ? lig_size_mul3(sizeof(float), nb, (uint64_t)p->ctx.contrib_ld) : 0);
    l.scale = lig_ws_take(&at, own_contrib ? sizeof(float) * nb : 0);
    l.engine = lig_ws_take(&at, p->engine->scratch_bytes(&p->ctx));
    l.extra = lig_ws_take(&at, p->extra_scratch);
    l.total = at;
    return l;
}

/* The workspace; a size past 2^63 bytes fails naming the operand that drives it: key (the dK
 * accumulator and its locks), sparse_indices (the chunk numbers of its rows) or query (each
 * thread's scratch, which grows with the head group and D). */
static lig_status size_workspace(lig_cpu_grad_plan *p) {
    const lig_problem *pr = &p->pb->pr;
    lig_grad_workspace_layout *ws = &p->ws;
    *ws = (lig_grad_workspace_layout){0};
    p->ring_chunks = 0;
    const bool extras = p->extra_ws > 0 || p->extra_scratch > 0;
    if (p->empty && !extras) return LIG_SUCCESS; /* only index checks and zero fills: no scratch at all */

    char detail[128], keys[128];
    snprintf(detail, sizeof detail, "%lld heads per key head, D = %lld", (long long)pr->G, (long long)pr->D);
    snprintf(keys, sizeof keys, "%lld key rows x %lld heads x D = %lld", (long long)pr->key_rows, (long long)pr->N2,
             (long long)pr->D);
    lig_status st = lig_size_check(lig_ws_total(0, (uint64_t)p->threads, p->scratch.total), "query",
                                   "the bytes of every thread's scratch", detail);
    if (st != LIG_SUCCESS) return st;
    const uint64_t acc_rows = lig_size_mul((uint64_t)pr->key_rows, (uint64_t)pr->N2), nb = (uint64_t)p->ctx.block;
    uint64_t at = 0;
    if (p->empty) { /* an operator's own work on a problem with nothing to multiply: its regions only */
        ws->extra = lig_ws_take(&at, p->extra_ws);
        ws->scratch_stride = p->scratch.total;
        ws->scratch = lig_ws_take(&at, lig_size_mul(ws->scratch_stride, (uint64_t)p->threads));
        ws->total = lig_ws_total(at, 0, 0);
        return lig_size_check(ws->total, "sparse_indices", "the bytes of the workspace", detail);
    }
    ws->dk_acc = lig_ws_take(&at, lig_size_mul3(sizeof(float), acc_rows, (uint64_t)pr->D));
    if ((st = lig_size_check(at, "key", "the bytes of the fp32 dK accumulator", keys)) != LIG_SUCCESS) return st;
    if (p->pb->deterministic) {
        ws->chunk_base = lig_ws_take(&at, lig_size_mul(sizeof(int64_t), lig_size_add((uint64_t)pr->units, 1)));
        snprintf(detail, sizeof detail, "%lld (row, key head) units", (long long)pr->units);
        if ((st = lig_size_check(at, "sparse_indices", "the bytes of the workspace", detail)) != LIG_SUCCESS) return st;
        p->ring_chunks = ring_capacity(p); /* within a fixed budget */
        const uint64_t chunks = (uint64_t)p->ring_chunks;
        ws->ring = lig_ws_take(&at, lig_size_mul3(sizeof(float), chunks * nb, (uint64_t)p->ctx.contrib_ld));
        ws->ring_scale = lig_ws_take(&at, sizeof(float) * chunks * nb);
        ws->ring_key = lig_ws_take(&at, sizeof(int64_t) * chunks * nb);
        ws->ring_count = lig_ws_take(&at, sizeof(int64_t) * chunks);
        ws->ring_ready = lig_ws_take(&at, sizeof(int64_t) * chunks);
        ws->ring_buffer = lig_ws_take(&at, sizeof(int64_t) * chunks);
        ws->free_stack = lig_ws_take(&at, sizeof(int64_t) * chunks);
    } else {
        ws->locks = lig_ws_take(&at, lig_size_mul(sizeof(uint32_t), acc_rows));
    }
    ws->extra = lig_ws_take(&at, p->extra_ws);
    ws->scratch_stride = p->scratch.total;
    ws->scratch = lig_ws_take(&at, lig_size_mul(ws->scratch_stride, (uint64_t)p->threads));
    ws->total = lig_ws_total(at, 0, 0); /* room to align whatever base pointer the caller passes */
    return lig_size_check(ws->total, "key", "the bytes of the workspace", keys);
}

lig_status lig_cpu_grad_plan_init(lig_cpu_grad_plan *p, const lig_grad_problem *pb, const lig_kernel_set *ks,
                                  uint64_t extra_ws, uint64_t extra_scratch, bool extra_bf16_threads) {
    const lig_problem *pr = &pb->pr;
    p->pb = pb;
    p->extra_ws = extra_ws;
    p->extra_scratch = extra_scratch;
    p->extra_bf16_threads = extra_bf16_threads;
    /* bf16 inputs go to the set's bf16 kernels when it has them; everything else is fp32, FLOAT32
     * weights with bf16 queries too (the bf16 engine multiplies by the weights in bf16) */
    const bool bf16 = pb->q.dtype == LIG_BFLOAT16 && pb->w.dtype == LIG_BFLOAT16 && ks->bf16 != NULL &&
                      pr->G >= ks->bf16->min_group;
    p->engine = bf16 ? &lig_grad_engine_bf16 : &lig_grad_engine_f32;
    p->own_threads = (bf16 && ks->bf16->gemm.thread_begin != NULL) || extra_bf16_threads;
    p->ctx = (lig_grad_ctx){
        .ks = ks, .G = pr->G, .D = pr->D, .dtype = pb->q.dtype, .w_dtype = pb->w.dtype,
        .q_head = pb->q.head, .q_dim = pb->q.dim, .w_head = pb->w.head, .k_dim = pb->k.dim,
        .dq_dtype = pb->dq.dtype, .dw_dtype = pb->dw.dtype, .dq_head = pb->dq.head, .dq_dim = pb->dq.dim,
        .dw_head = pb->dw.head,
    };
    p->engine->configure(&p->ctx);
    /* any zero extent: nothing to multiply (contract 6.4: workspace 0, zero-filled outputs) */
    p->empty = pr->units == 0 || pr->K == 0 || pr->D == 0 || pr->G == 0 || pr->key_rows == 0;
    const int threads = lig_settings_threads();
    p->threads = threads < 1 ? 1 : threads;
    p->scratch = scratch_layout(p);
    return size_workspace(p);
}

lig_status lig_cpu_plan_indexer_grad(const lig_grad_problem *pb, lig_backend_plan *out) {
    const lig_kernel_set *ks;
    lig_status st;
    lig_cpu_grad_plan *p = lig_cpu_plan_alloc(sizeof *p, &ks, &st);
    if (!p) return st;
    if ((st = lig_cpu_grad_plan_init(p, pb, ks, 0, 0, false)) != LIG_SUCCESS) {
        lig_cpu_plan_free(p);
        return st;
    }
    *out = (lig_backend_plan){.plan = p, .workspace_size = p->ws.total, .kernel_set = p->engine->kernels_name(&p->ctx),
                              .run = lig_cpu_run_indexer_grad, .free = lig_cpu_plan_free};
    return LIG_SUCCESS;
}

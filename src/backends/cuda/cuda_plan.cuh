/* Host side of the CUDA backend's plans, shared by the planners (cuda_backend.cu) and the host
 * emulation test (tests/cuda/emulate.cu): the workspace layout of each operator and the kernel
 * arguments made from a problem and a workspace base (device memory, or host memory when
 * emulated). Nothing here calls CUDA. */
#ifndef LIG_CUDA_PLAN_CUH
#define LIG_CUDA_PLAN_CUH

#include <stdlib.h>

#include "backends/cuda/cuda_kernels.cuh"

extern "C" {
#include "core/fwd_problem.h"
#include "core/problem.h"
#include "core/tuning.h"
#include "core/workspace.h"
}

namespace ligcu {

/* Regions, as byte offsets from the aligned workspace base; `bytes` is the size phase 1 asks for
 * (the regions plus LIG_WS_ALIGN for the caller's alignment). */
struct layout {
    uint64_t bytes;
    uint64_t bt, score, acc, contrib, sort_key[2], sort_pos[2], sort_temp, sort_temp_bytes, cand_score, cand_key, row_loss;
    int64_t nkeys, cap, slots, chunk;
    int32_t sort_bits;
};

/* The bytes an operator's row- or unit-chunked regions may take together (the fp32 dK accumulator
 * and the batches are not chunked): the tuning's cuda_chunk_bytes (core/tuning.h: 1 GiB, or
 * LIG_CUDA_CHUNK_BYTES, a test knob that makes small problems run in many chunks; at least 64 KiB).
 * Read in phase 1; the plan keeps the chunking it implies, and the results do not depend on it
 * except where docs/cuda.md says so. */
inline uint64_t chunk_budget() { return lig_tuning_current().cuda_chunk_bytes; }

/* The regions' sizes saturate (core/size.h); false when the workspace does not fit. */
inline bool finish(uint64_t cursor, layout *l) {
    l->bytes = lig_ws_total(cursor, 0, 0);
    return lig_size_fits(l->bytes);
}

/* Temporary storage reserved for CUB's radix sort of n pairs (phase 1 may not touch the device, so
 * it cannot ask CUB, whose answer depends on the device's policy and SM count). With double
 * buffers CUB needs, per pass, a histogram and one look-back tile of 256 counters per tile of items
 * (onesweep, tiles of thousands of items), or a spine of a few counters per SM and digit (the
 * upsweep/downsweep passes): 16 MiB + 2 bytes per item covers both on any device CUB tunes for. The
 * run asks CUB and refuses, by name, a device that would need more (docs/cuda.md). */
inline uint64_t sort_temp_bound(uint64_t n) { return lig_size_add(16ull << 20, lig_size_mul(n, 2)); }

/* Bits of the key ids 0 .. n (n, the sentinel, included). */
inline int32_t bits_for(uint64_t n) {
    int32_t b = 1;
    while (b < 64 && (n >> b) != 0) b++;
    return b;
}

/* The backward's chunked regions hold one chunk of units (run_grad walks the chunks in order):
 * scores [chunk][G][K], the slots' dK contributions [chunk][K][D] and, deterministic, the sort's double buffers of the chunk's slots (8-byte
 * key ids, 4-byte positions) and its temporary storage; chunk = as many units as `budget` bytes
 * hold (at least one, and fewer than 2^30 slots: the positions are 32-bit). Besides them: the fp32
 * dK accumulator [key rows][N2][D]. */
inline bool grad_layout_budget(const lig_grad_problem *pb, uint64_t budget, layout *l) {
    const lig_problem *p = &pb->pr;
    *l = layout();
    uint64_t c = 0;
    lig_ws_take(&c, sizeof(cu_status));
    const uint64_t nkeys = lig_size_mul((uint64_t)p->key_rows, (uint64_t)p->N2);
    l->nkeys = lig_size_fits(nkeys) ? (int64_t)nkeys : INT64_MAX; /* the workspace then does not fit */
    const uint64_t per_slot_sort = 2 * (8 + 4) + 2; /* double buffers, and the temp bound's share */
    const uint64_t per_unit =
        lig_size_add(lig_size_mul((uint64_t)p->K, lig_size_add(lig_size_mul((uint64_t)p->G, 4), lig_size_mul((uint64_t)p->D, 4))),
                     pb->deterministic ? lig_size_mul((uint64_t)p->K, per_slot_sort) : 0);
    uint64_t chunk = per_unit ? budget / per_unit : (uint64_t)p->units;
    if (chunk > (uint64_t)p->units) chunk = (uint64_t)p->units;
    if (p->K > 0 && chunk > (1ull << 30) / (uint64_t)p->K) chunk = (1ull << 30) / (uint64_t)p->K;
    if (chunk < 1) chunk = 1;
    l->chunk = (int64_t)chunk;
    const uint64_t slots = lig_size_mul(chunk, (uint64_t)p->K);
    l->bt = lig_ws_take(&c, lig_batches_bytes(p->B));
    l->score = lig_ws_take(&c, lig_size_mul3(slots, 4, (uint64_t)p->G));
    l->contrib = lig_ws_take(&c, lig_size_mul3(slots, 4, (uint64_t)p->D));
    l->acc = lig_ws_take(&c, lig_size_mul3(nkeys, 4, (uint64_t)p->D));
    if (pb->deterministic) {
        for (int i = 0; i < 2; i++) l->sort_key[i] = lig_ws_take(&c, lig_size_mul(slots, 8));
        for (int i = 0; i < 2; i++) l->sort_pos[i] = lig_ws_take(&c, lig_size_mul(slots, 4));
        l->sort_temp_bytes = sort_temp_bound(slots);
        l->sort_temp = lig_ws_take(&c, l->sort_temp_bytes);
        l->sort_bits = bits_for(nkeys);
    }
    return finish(c, l);
}
inline bool grad_layout(const lig_grad_problem *pb, layout *l) { return grad_layout_budget(pb, chunk_budget(), l); }

/* The forward's only regions are its candidate buffers: `slots` pairs of [cap] (score, key), cap =
 * 2 * max(64, min(K, width)) up to a power of two (width: the longest batch's key count), one
 * pair per block the grid holds at once (k_fwd_topk); slots = as many as `budget` bytes hold, at
 * least one and at most 1024 (and the units). The workspace is then at most budget + one pair,
 * whatever B, S1 and S2 are. */
inline bool fwd_layout_budget(const lig_fwd_problem *pb, uint64_t budget, layout *l) {
    const lig_problem *p = &pb->pr;
    *l = layout();
    uint64_t c = 0;
    lig_ws_take(&c, sizeof(cu_status));
    int64_t width = 0;
    for (int64_t b = 0; b < p->B; b++)
        if (p->bt.lk[b] > width) width = p->bt.lk[b];
    int64_t kept = p->K < width ? p->K : width;
    if (kept < 64) kept = 64;
    for (l->cap = 2; l->cap < 2 * kept;) l->cap <<= 1;
    const uint64_t per_slot = lig_size_mul((uint64_t)l->cap, 2 * (4 + 8));
    uint64_t slots = budget / per_slot;
    if (slots > 1024) slots = 1024;
    if (slots > (uint64_t)p->units) slots = (uint64_t)p->units;
    if (slots < 1) slots = 1;
    l->slots = (int64_t)slots;
    l->bt = lig_ws_take(&c, lig_batches_bytes(p->B));
    l->cand_score = lig_ws_take(&c, lig_size_mul3(slots, (uint64_t)l->cap, 2 * 4));
    l->cand_key = lig_ws_take(&c, lig_size_mul3(slots, (uint64_t)l->cap, 2 * 8));
    return finish(c, l);
}
inline bool fwd_layout(const lig_fwd_problem *pb, layout *l) { return fwd_layout_budget(pb, chunk_budget(), l); }

inline bool kl_layout(const lig_kl_dy_problem *pb, layout *l) {
    *l = layout();
    uint64_t c = 0;
    lig_ws_take(&c, sizeof(cu_status));
    l->row_loss = lig_ws_take(&c, lig_size_mul((uint64_t)pb->rows, 8));
    return finish(c, l);
}

/* The name lig_executor_kernel_set reports: "cuda-wmma" when every product runs on tensor cores,
 * "cuda-wmma-scores" when only the scores do (a backward with fp16 q and k), "cuda-simt" when none
 * does (fp32 or mixed q and k, D above 256, D or N1 of 0). */
inline const char *kernel_set_name(const lig_problem *p, const lig_view4 &q, const lig_view4 &k, bool backward) {
    if (!tc_scores_eligible((int)q.dtype, (int)k.dtype, p->D, p->G)) return "cuda-simt";
    if (!backward || tc_grad_eligible((int)q.dtype, (int)k.dtype, p->D, p->G, p->K)) return "cuda-wmma";
    return "cuda-wmma-scores";
}

inline cu_view view_of(const lig_view4 &v) {
    cu_view c;
    c.data = v.data;
    c.dtype = (int32_t)v.dtype;
    c.esize = (int32_t)v.esize;
    c.batch = v.batch;
    c.row = v.row;
    c.head = v.head;
    c.dim = v.dim;
    return c;
}

inline cu_geom geom_of(const lig_problem *p, char *base, const layout &l) {
    cu_geom g;
    g.B = p->B;
    g.N1 = p->N1;
    g.N2 = p->N2;
    g.G = p->G;
    g.D = p->D;
    g.K = p->K;
    g.S1 = p->S1;
    g.S2 = p->S2;
    g.sparse_mode = p->sparse_mode;
    g.pre_tokens = p->pre_tokens;
    g.next_tokens = p->next_tokens;
    g.units = p->units;
    g.key_rows = p->key_rows;
    g.key_batch = p->key_batch;
    g.q_rows = p->tnd ? p->S1 : p->B * p->S1;
    g.tnd = p->tnd;
    g.pad = 0;
    g.bt = (const int64_t *)(void *)(base + l.bt);
    return g;
}

/* The part both pipelines share (lig_grad_problem and lig_fwd_problem name these views alike). */
template <class Problem>
inline void plan_args_of(plan_args &a, const Problem *pb, char *base, const layout &l) {
    a.p = geom_of(&pb->pr, base, l);
    a.q = view_of(pb->q);
    a.k = view_of(pb->k);
    a.w = view_of(pb->w);
    a.idx = view_of(pb->idx);
    a.st = (cu_status *)(void *)base;
    a.score = (float *)(void *)(base + l.score);
}

inline grad_args grad_args_of(const lig_grad_problem *pb, char *base, const layout &l) {
    grad_args a;
    plan_args_of(a, pb, base, l);
    a.dy = view_of(pb->dy);
    a.dq = view_of(pb->dq);
    a.dk = view_of(pb->dk);
    a.dw = view_of(pb->dw);
    a.acc = (float *)(void *)(base + l.acc);
    a.contrib = (float *)(void *)(base + l.contrib);
    const bool det = pb->deterministic != 0;
    for (int i = 0; i < 2; i++) {
        a.sort_key[i] = det ? (uint64_t *)(void *)(base + l.sort_key[i]) : 0;
        a.sort_pos[i] = det ? (uint32_t *)(void *)(base + l.sort_pos[i]) : 0;
    }
    a.sort_temp = det ? (void *)(base + l.sort_temp) : 0;
    a.sort_temp_bytes = l.sort_temp_bytes;
    a.sort_bits = l.sort_bits;
    a.sorted = 0;
    a.nkeys = l.nkeys;
    a.chunk = l.chunk;
    a.unit0 = 0;
    return a;
}

inline fwd_args fwd_args_of(const lig_fwd_problem *pb, char *base, const layout &l) {
    fwd_args a;
    plan_args_of(a, pb, base, l);
    a.val = view_of(pb->val);
    a.has_values = pb->has_values;
    a.trivial = pb->pr.D == 0 || pb->pr.N1 == 0;
    a.tc = tc_eligible(a); /* never for a trivial problem: it needs D > 0 and G > 0 */
    a.score = 0; /* no score rows: a tile of scores lives in shared memory */
    a.pad = 0;
    a.cap = l.cap;
    a.slots = l.slots;
    a.cand_score = (float *)(void *)(base + l.cand_score);
    a.cand_key = (int64_t *)(void *)(base + l.cand_key);
    return a;
}

inline slot_view slot_view_of(const lig_slot_view &v) {
    slot_view s;
    s.data = v.data;
    s.dtype = (int32_t)v.dtype;
    s.esize = (int32_t)v.esize;
    for (int i = 0; i < KL_MAX_DIMS; i++) s.strides[i] = v.strides[i];
    return s;
}

inline kl_args kl_args_of(const lig_kl_dy_problem *pb, char *base, const layout &l) {
    kl_args a;
    a.ndim = pb->ndim;
    a.rows = pb->rows;
    a.K = pb->K;
    for (int i = 0; i < KL_MAX_DIMS; i++) a.shape[i] = pb->shape[i];
    a.values = slot_view_of(pb->values);
    a.target = slot_view_of(pb->target);
    a.dy = slot_view_of(pb->dy);
    a.indices = slot_view_of(pb->indices);
    a.has_indices = pb->has_indices;
    a.pad = 0;
    a.loss = pb->loss;
    a.st = (cu_status *)(void *)base;
    a.row_loss = (double *)(void *)(base + l.row_loss);
    return a;
}

} // namespace ligcu

#endif

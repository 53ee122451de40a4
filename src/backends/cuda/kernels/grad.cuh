/* The backward (docs/contract.md 2.2) as CUDA kernel bodies and its pipeline, run_grad. */
#ifndef LIG_CUDA_KERNELS_GRAD_CUH
#define LIG_CUDA_KERNELS_GRAD_CUH

#include "backends/cuda/kernels/grad_tc.cuh"

namespace ligcu {



struct grad_args : plan_args {
    cu_view dy, dq, dk, dw;
    float *acc;                   /* [key_rows][N2][D] fp32 */
    float *contrib;               /* [chunk][K][D] fp32: each slot's dK contribution */
    uint64_t *sort_key[2];        /* deterministic: double buffers of [chunk * K] key ids, */
    uint32_t *sort_pos[2];        /*   and of the slots' positions in the chunk */
    void *sort_temp;              /* deterministic: the sort's temporary storage */
    uint64_t sort_temp_bytes;
    int32_t sort_bits;            /* key ids are < 2^sort_bits (nkeys, the sentinel, included) */
    int32_t sorted;               /* which buffer holds the sorted chunk (set by run_grad) */
    int64_t nkeys;                /* key_rows * N2 */
    int64_t chunk;                /* units per chunk: score holds [chunk][G][K] */
    int64_t unit0;                /* the first unit of the chunk being run (set per chunk by run_grad) */
};

LIG_HD int64_t slot_index(const grad_args &a, const cu_unit &x, int64_t j) {
    return load_i(a.idx.dtype, at_q(a.idx, a.p, x.b, x.t, x.g, j));
}
/* The key (row of the key tensor, key head) of a counted slot, as one id. */
LIG_HD int64_t key_id(const grad_args &a, const cu_unit &x, int64_t s) {
    return (x.b * a.p.key_batch + a.p.k_base(x.b) + s) * a.p.N2 + x.g;
}

/* Index check, one thread per (unit, slot): < -1 or >= Lk is an error (contract 4). */
struct k_grad_check {
    grad_args a;
    LIG_HD void operator()(int64_t i) const {
        const int64_t u = i / a.p.K, j = i - u * a.p.K;
        const cu_unit x = unit_decode(a.p, u);
        const int64_t s = slot_index(a, x, j);
        if (s < -1 || s >= a.p.lk(x.b)) atomic_min_u64(&a.st->first_bad, (unsigned long long)i);
    }
};
/* Decodes the failure (one thread). */
struct k_grad_report {
    grad_args a;
    LIG_HD void operator()(int64_t) const {
        if (!failed(a.st)) return;
        const int64_t i = (int64_t)a.st->first_bad, u = i / a.p.K, j = i - u * a.p.K;
        const cu_unit x = unit_decode(a.p, u);
        cu_status *st = a.st;
        st->code = ST_BAD_INDEX;
        st->b = x.b;
        st->row = a.p.tnd ? a.p.q_base(x.b) + x.t : x.t;
        st->g = x.g;
        st->slot = j;
        st->ivalue = slot_index(a, x, j);
        st->limit = a.p.lk(x.b);
    }
};

/* Column `col` of the chunk's scores, unit-major over the heads of each unit's group: the unit
 * (b, t, g), its query head h, and the column's K scores (the unit's head hl, in the chunk's order). */
struct unit_head {
    cu_unit x;
    int64_t h;
    float *S;
};
LIG_HD unit_head unit_head_of(const grad_args &a, int64_t col) {
    unit_head c;
    c.x = unit_decode(a.p, a.unit0 + col / a.p.G);
    c.h = c.x.g * a.p.G + col % a.p.G;
    c.S = a.score + col * a.p.K;
    return c;
}

/* S for one (unit, head of the group, slot): the dot product in fp32, in d order. */
struct k_grad_scores {
    grad_args a;
    LIG_HD void operator()(int64_t i) const {
        const unit_head c = unit_head_of(a, i / a.p.K);
        const int64_t j = i % a.p.K, s = slot_index(a, c.x, j), b = c.x.b;
        float acc = 0.0f;
        if (s >= c.x.lo && s <= c.x.hi)
            for (int64_t d = 0; d < a.p.D; d++)
                acc += load_f(a.q.dtype, at_q(a.q, a.p, b, c.x.t, c.h, d)) * load_f(a.k.dtype, at_k(a.k, a.p, b, s, c.x.g, d));
        a.score[i] = acc; /* a slot that does not count keeps 0: its gate stays closed, its dy unread */
    }
};

/* The gate: A = w * dy when S > 0, else 0 (a select: dy is not read otherwise). */
LIG_HD float gate_a(const grad_args &a, const cu_unit &x, int64_t h, int64_t j, float S) {
    if (!(S > 0.0f)) return 0.0f;
    return load_f(a.w.dtype, at_q(a.w, a.p, x.b, x.t, h, 0)) * load_f(a.dy.dtype, at_q(a.dy, a.p, x.b, x.t, x.g, j));
}

/* The chunk's S of unit u (of the chunk) and head hl of its group: K values. */
LIG_HD const float *chunk_scores(const grad_args &a, int64_t u, int64_t hl) {
    return a.score + ((u - a.unit0) * a.p.G + hl) * a.p.K;
}
/* dQ, one thread per element of d_query of the chunk's units: sum over the slots in slot order. */
struct k_grad_dq {
    grad_args a;
    LIG_HD void operator()(int64_t i) const {
        const unit_head c = unit_head_of(a, i / a.p.D);
        const cu_unit &x = c.x;
        const int64_t d = i % a.p.D;
        float acc = 0.0f;
        for (int64_t j = 0; j < a.p.K; j++) {
            if (!(c.S[j] > 0.0f)) continue; /* gate closed, or a slot that does not count */
            acc += gate_a(a, x, c.h, j, c.S[j]) * load_f(a.k.dtype, at_k(a.k, a.p, x.b, slot_index(a, x, j), x.g, d));
        }
        char *out = a.dq.data + (x.b * a.dq.batch + tensor_row(a.p, x.b, x.t) * a.dq.row + c.h * a.dq.head +
                                 d * a.dq.dim) * (int64_t)a.dq.esize;
        store_f(a.dq.dtype, out, acc);
    }
};

/* dW, one thread per element of d_weights of the chunk's units. */
struct k_grad_dw {
    grad_args a;
    LIG_HD void operator()(int64_t i) const {
        const int64_t G = a.p.G, hl = i % G, u = a.unit0 + i / G;
        const cu_unit x = unit_decode(a.p, u);
        const int64_t h = x.g * G + hl;
        const float *S = chunk_scores(a, u, hl);
        float acc = 0.0f;
        for (int64_t j = 0; j < a.p.K; j++)
            if (S[j] > 0.0f) acc += S[j] * load_f(a.dy.dtype, at_q(a.dy, a.p, x.b, x.t, x.g, j));
        char *out = a.dw.data + (x.b * a.dw.batch + tensor_row(a.p, x.b, x.t) * a.dw.row + h * a.dw.head) *
                                    (int64_t)a.dw.esize;
        store_f(a.dw.dtype, out, acc);
    }
};

/* The rows no batch owns validly get 0 in d_query and d_weights: one thread per (row, head). */
struct k_grad_invalid_rows {
    grad_args a;
    LIG_HD void operator()(int64_t i) const {
        const int64_t h = i % a.p.N1, r = i / a.p.N1;
        int64_t b, row;
        if (!invalid_row(a.p, r, &b, &row)) return;
        for (int64_t d = 0; d < a.p.D; d++)
            store_f(a.dq.dtype, a.dq.data + (b * a.dq.batch + row * a.dq.row + h * a.dq.head + d * a.dq.dim) *
                                                (int64_t)a.dq.esize, 0.0f);
        store_f(a.dw.dtype, a.dw.data + (b * a.dw.batch + row * a.dw.row + h * a.dw.head) * (int64_t)a.dw.esize, 0.0f);
    }
};

/* One slot's dK contribution at dimension d: sum over the group's heads of A * q, in head order. */
LIG_HD float slot_contribution(const grad_args &a, int64_t u, int64_t j, int64_t d) {
    const cu_unit x = unit_decode(a.p, u);
    float c = 0.0f;
    for (int64_t hl = 0; hl < a.p.G; hl++) {
        const int64_t h = x.g * a.p.G + hl;
        const float S = chunk_scores(a, u, hl)[j];
        if (S > 0.0f) c += gate_a(a, x, h, j, S) * load_f(a.q.dtype, at_q(a.q, a.p, x.b, x.t, h, d));
    }
    return c;
}
LIG_HD bool slot_counts(const grad_args &a, const cu_unit &x, int64_t j, int64_t *s) {
    *s = slot_index(a, x, j);
    return *s >= x.lo && *s <= x.hi;
}
/* Slot i of the chunk (0 .. chunk units * K): whether it counts, its unit and key. */
LIG_HD bool flat_slot_counts(const grad_args &a, int64_t i, cu_unit *x, int64_t *s) {
    i += a.unit0 * a.p.K;
    const int64_t u = i / a.p.K;
    *x = unit_decode(a.p, u);
    return slot_counts(a, *x, i - u * a.p.K, s);
}

/* The fp32 dK accumulator is cleared first and rounded once into d_key last (both modes);
 * non-deterministic, each chunk adds its contributions with atomicAdd (the order of the additions
 * varies between runs). */
struct k_fill_f32 {
    float *dst;
    LIG_HD void operator()(int64_t i) const { dst[i] = 0.0f; }
};
/* Each slot's dK contribution, one thread per (slot of the chunk, d) (the products' bodies for
 * problems off the tensor cores; 0 for a slot that does not count, which nothing reads). */
struct k_grad_contrib {
    grad_args a;
    LIG_HD void operator()(int64_t i) const {
        const int64_t D = a.p.D, d = i % D, sl = i / D; /* slot sl of the chunk */
        cu_unit x;
        int64_t s;
        a.contrib[i] = flat_slot_counts(a, sl, &x, &s) ? slot_contribution(a, a.unit0 + sl / a.p.K, sl % a.p.K, d) : 0.0f;
    }
};
struct k_dk_scatter {
    grad_args a;
    LIG_HD void operator()(int64_t i) const {
        cu_unit x;
        int64_t s;
        if (flat_slot_counts(a, i / a.p.D, &x, &s)) atomic_add_f32(&a.acc[key_id(a, x, s) * a.p.D + i % a.p.D], a.contrib[i]);
    }
};
/* d_key element (key row, key head, d) from the accumulator. */
LIG_HD char *dk_at(const grad_args &a, int64_t kr, int64_t g, int64_t d) {
    int64_t b = 0, s = kr;
    if (!a.p.tnd && a.p.S2 > 0) {
        b = kr / a.p.S2;
        s = kr - b * a.p.S2;
    }
    return a.dk.data + (b * a.dk.batch + s * a.dk.row + g * a.dk.head + d * a.dk.dim) * (int64_t)a.dk.esize;
}
struct k_dk_round {
    grad_args a;
    LIG_HD void operator()(int64_t i) const {
        const int64_t D = a.p.D, d = i % D, key = i / D, g = key % a.p.N2, kr = key / a.p.N2;
        store_f(a.dk.dtype, dk_at(a, kr, g, d), a.acc[i]);
    }
};

/* Deterministic dK, per chunk: the chunk's slots sorted by key (a stable radix sort by key id of
 * the pairs (key id, slot's position in the chunk), run by the executor: CUB on the device), so
 * each key's slots form one run in slot-id order (u * K + j: by row, key head, slot); then one
 * thread per (run, d) adds its run's contributions in that order to the accumulator (chunks in
 * order: slot-id order throughout, whatever the chunking). A slot that does not count gets the key
 * id nkeys, which sorts after every real key.
 *   sort_input: one thread per slot of the chunk (key id, position)
 *   sort: stable, by the low sort_bits bits of the key id
 *   sum: one thread per (sorted position, d); the thread at a run's first position sums it */
struct k_sort_input {
    grad_args a;
    LIG_HD void operator()(int64_t i) const {
        cu_unit x;
        int64_t s;
        a.sort_key[0][i] = flat_slot_counts(a, i, &x, &s) ? (uint64_t)key_id(a, x, s) : (uint64_t)a.nkeys;
        a.sort_pos[0][i] = (uint32_t)i;
    }
};
struct k_dk_sum {
    grad_args a;
    int64_t slots; /* the chunk's */
    LIG_HD void operator()(int64_t i) const {
        const int64_t D = a.p.D, e0 = i / D, d = i - e0 * D;
        const uint64_t *key = a.sort_key[a.sorted];
        const uint32_t *pos = a.sort_pos[a.sorted];
        const uint64_t k = key[e0];
        if (k == (uint64_t)a.nkeys || (e0 > 0 && key[e0 - 1] == k)) return; /* not a run's first position */
        float acc = a.acc[(int64_t)k * D + d]; /* the earlier chunks' sum */
        for (int64_t e = e0; e < slots && key[e] == k; e++) acc += a.contrib[(int64_t)pos[e] * D + d];
        a.acc[(int64_t)k * D + d] = acc;
    }
};

/* The units in chunks of a.chunk, in order; each chunk's scores, dQ, dW and dK contributions, the
 * contributions added into the fp32 accumulator (deterministic: per key in slot-id order, so the
 * sum is the same whatever the chunking), rounded once into d_key at the end. */
template <class X>
void run_grad(X &x, const grad_args &a, bool deterministic, const int64_t *host_bt) {
    const int64_t K = a.p.K, D = a.p.D, G = a.p.G;
    run_prologue(x, a.st, a.p, host_bt);
    x.launch(a.p.units * K, k_grad_check{a});
    x.launch(1, k_grad_report{a});
    x.launch(a.p.q_rows * a.p.N1, after_checks(a.st, k_grad_invalid_rows{a}));
    x.launch(a.nkeys * D, after_checks(a.st, k_fill_f32{a.acc}));
    grad_args c = a;
    for (c.unit0 = 0; c.unit0 < a.p.units; c.unit0 += a.chunk) {
        const int64_t n = a.p.units - c.unit0 < a.chunk ? a.p.units - c.unit0 : a.chunk, slots = n * K;
        if (tc_eligible(c)) {
            const k_scores_tc f = scores_tc(c, c.unit0);
            x.launch_blocks(n * f.tiles, f);
        } else {
            x.launch(slots * G, after_checks(a.st, k_grad_scores{c}));
        }
        if (grad_tc_eligible(c)) {
            const grad_tc_base base = grad_tc_of(c, c.dy, c.dq, c.contrib, c.unit0);
            k_grad_dq_tc q;
            static_cast<grad_tc_base &>(q) = base;
            q.groups = (G + TC_T - 1) / TC_T;
            x.launch_blocks(n * q.groups, q);
            k_grad_contrib_tc k;
            static_cast<grad_tc_base &>(k) = base;
            k.tiles = (K + TC_T - 1) / TC_T;
            x.launch_blocks(n * k.tiles, k);
        } else {
            x.launch(n * G * D, after_checks(a.st, k_grad_dq{c}));
            x.launch(slots * D, after_checks(a.st, k_grad_contrib{c}));
        }
        x.launch(n * G, after_checks(a.st, k_grad_dw{c}));
        if (deterministic) {
            /* after a failed index check the input and the sum are skipped (the sort orders bytes
             * nothing reads) */
            x.launch(slots, after_checks(a.st, k_sort_input{c}));
            c.sorted = x.sort_pairs(c.sort_key, c.sort_pos, slots, c.sort_bits, c.sort_temp, c.sort_temp_bytes);
            x.launch(slots * D, after_checks(a.st, k_dk_sum{c, slots}));
        } else {
            x.launch(slots * D, after_checks(a.st, k_dk_scatter{c}));
        }
    }
    x.launch(a.nkeys * D, after_checks(a.st, k_dk_round{a}));
}

} // namespace ligcu

#endif // LIG_CUDA_KERNELS_GRAD_CUH

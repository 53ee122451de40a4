/* The backward (docs/contract.md 2.2) as CUDA kernel bodies and its pipeline, run_grad. */
#ifndef LIG_CUDA_KERNELS_GRAD_CUH
#define LIG_CUDA_KERNELS_GRAD_CUH

#include "backends/cuda/kernels/common.cuh"

namespace ligcu {



struct grad_args : plan_args {
    cu_view dy, dq, dk, dw;
    float *acc;                   /* non-deterministic: [key_rows][N2][D] fp32 */
    unsigned long long *count;    /* deterministic: [nkeys + 1] offsets, then [nkeys] cursors */
    int64_t *entry;               /* deterministic: [units * K] slot ids u * K + j, grouped by key */
    int64_t nkeys;                /* key_rows * N2 */
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

/* S for one (unit, head of the group, slot): the dot product in fp32, in d order. */
struct k_grad_scores {
    grad_args a;
    LIG_HD void operator()(int64_t i) const {
        const int64_t K = a.p.K, G = a.p.G;
        const int64_t j = i % K, uh = i / K, hl = uh % G, u = uh / G;
        const cu_unit x = unit_decode(a.p, u);
        const int64_t s = slot_index(a, x, j);
        float acc = 0.0f;
        if (s >= x.lo && s <= x.hi) {
            const int64_t h = x.g * G + hl;
            for (int64_t d = 0; d < a.p.D; d++)
                acc += load_f(a.q.dtype, at_q(a.q, a.p, x.b, x.t, h, d)) * load_f(a.k.dtype, at_k(a.k, a.p, x.b, s, x.g, d));
        }
        a.score[i] = acc; /* a slot that does not count keeps 0: its gate stays closed, its dy unread */
    }
};

/* The gate: A = w * dy when S > 0, else 0 (a select: dy is not read otherwise). */
LIG_HD float gate_a(const grad_args &a, const cu_unit &x, int64_t h, int64_t j, float S) {
    if (!(S > 0.0f)) return 0.0f;
    return load_f(a.w.dtype, at_q(a.w, a.p, x.b, x.t, h, 0)) * load_f(a.dy.dtype, at_q(a.dy, a.p, x.b, x.t, x.g, j));
}

/* dQ, one thread per element of d_query (every row: invalid ones get 0). */
struct k_grad_dq {
    grad_args a;
    LIG_HD void operator()(int64_t i) const {
        const int64_t D = a.p.D, N1 = a.p.N1;
        const int64_t d = i % D, rh = i / D, h = rh % N1, r = rh / N1;
        int64_t b, t;
        float acc = 0.0f;
        const bool valid = row_decode(a.p, r, &b, &t);
        if (valid) {
            const int64_t g = h / a.p.G, u = unit_of(a.p, b, t, g);
            const cu_unit x = unit_decode(a.p, u);
            const float *S = a.score + (u * a.p.G + (h - g * a.p.G)) * a.p.K;
            for (int64_t j = 0; j < a.p.K; j++) {
                if (!(S[j] > 0.0f)) continue; /* gate closed, or a slot that does not count */
                acc += gate_a(a, x, h, j, S[j]) * load_f(a.k.dtype, at_k(a.k, a.p, b, slot_index(a, x, j), g, d));
            }
        } else {
            b = a.p.tnd ? 0 : r / a.p.S1;
            t = a.p.tnd ? r : r - b * a.p.S1;
        }
        /* address by the tensor's own row: invalid rows have no q_base offset */
        char *out = a.dq.data + (b * a.dq.batch + (a.p.tnd ? r : t) * a.dq.row + h * a.dq.head + d * a.dq.dim) *
                                    (int64_t)a.dq.esize;
        store_f(a.dq.dtype, out, acc);
    }
};

/* dW, one thread per element of d_weights. */
struct k_grad_dw {
    grad_args a;
    LIG_HD void operator()(int64_t i) const {
        const int64_t N1 = a.p.N1, h = i % N1, r = i / N1;
        int64_t b, t;
        float acc = 0.0f;
        if (row_decode(a.p, r, &b, &t)) {
            const int64_t g = h / a.p.G, u = unit_of(a.p, b, t, g);
            const cu_unit x = unit_decode(a.p, u);
            const float *S = a.score + (u * a.p.G + (h - g * a.p.G)) * a.p.K;
            for (int64_t j = 0; j < a.p.K; j++)
                if (S[j] > 0.0f) acc += S[j] * load_f(a.dy.dtype, at_q(a.dy, a.p, x.b, x.t, x.g, j));
        } else {
            b = a.p.tnd ? 0 : r / a.p.S1;
            t = a.p.tnd ? r : r - b * a.p.S1;
        }
        char *out = a.dw.data + (b * a.dw.batch + (a.p.tnd ? r : t) * a.dw.row + h * a.dw.head) * (int64_t)a.dw.esize;
        store_f(a.dw.dtype, out, acc);
    }
};

/* One slot's dK contribution at dimension d: sum over the group's heads of A * q, in head order. */
LIG_HD float slot_contribution(const grad_args &a, int64_t u, int64_t j, int64_t d) {
    const cu_unit x = unit_decode(a.p, u);
    float c = 0.0f;
    for (int64_t hl = 0; hl < a.p.G; hl++) {
        const int64_t h = x.g * a.p.G + hl;
        const float S = a.score[(u * a.p.G + hl) * a.p.K + j];
        if (S > 0.0f) c += gate_a(a, x, h, j, S) * load_f(a.q.dtype, at_q(a.q, a.p, x.b, x.t, h, d));
    }
    return c;
}
LIG_HD bool slot_counts(const grad_args &a, const cu_unit &x, int64_t j, int64_t *s) {
    *s = slot_index(a, x, j);
    return *s >= x.lo && *s <= x.hi;
}
/* Slot i of the flat (unit, slot) range, when it counts: its unit and key. */
LIG_HD bool flat_slot_counts(const grad_args &a, int64_t i, cu_unit *x, int64_t *s) {
    const int64_t u = i / a.p.K;
    *x = unit_decode(a.p, u);
    return slot_counts(a, *x, i - u * a.p.K, s);
}

/* Non-deterministic dK: clear the fp32 accumulator, add every contribution with atomicAdd
 * (the order of the additions varies between runs), round once into d_key. */
struct k_fill_f32 {
    float *dst;
    LIG_HD void operator()(int64_t i) const { dst[i] = 0.0f; }
};
struct k_dk_scatter {
    grad_args a;
    LIG_HD void operator()(int64_t i) const {
        const int64_t D = a.p.D, d = i % D, uj = i / D, j = uj % a.p.K, u = uj / a.p.K;
        const cu_unit x = unit_decode(a.p, u);
        int64_t s;
        if (!slot_counts(a, x, j, &s)) return;
        const float c = slot_contribution(a, u, j, d);
        atomic_add_f32(&a.acc[key_id(a, x, s) * D + d], c);
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

/* Deterministic dK: an inverted list key -> slots, sorted by slot id (u * K + j, i.e. by row, key
 * head, slot), then one thread per d_key element sums its key's contributions in that order.
 *   count: one thread per (unit, slot), integer atomics (their result does not depend on order)
 *   scan: one thread, exclusive prefix sum, cursors = offsets
 *   scatter: slot ids into their key's segment (positions vary between runs, contents do not)
 *   sort: one thread per key, heapsort of its segment (ids are distinct: the order is unique)
 *   sum: one thread per d_key element, in segment order. */
struct k_count_clear {
    grad_args a;
    LIG_HD void operator()(int64_t i) const {
        a.count[i] = 0;
    }
};
struct k_count {
    grad_args a;
    LIG_HD void operator()(int64_t i) const {
        cu_unit x;
        int64_t s;
        if (flat_slot_counts(a, i, &x, &s)) atomic_inc_u64(&a.count[key_id(a, x, s) + 1]);
    }
};
struct k_scan {
    grad_args a;
    LIG_HD void operator()(int64_t) const {
        unsigned long long *off = a.count, *cur = a.count + a.nkeys + 1;
        off[0] = 0;
        for (int64_t k = 0; k < a.nkeys; k++) {
            off[k + 1] += off[k];
            cur[k] = off[k];
        }
    }
};
struct k_scatter {
    grad_args a;
    LIG_HD void operator()(int64_t i) const {
        cu_unit x;
        int64_t s;
        if (!flat_slot_counts(a, i, &x, &s)) return;
        const unsigned long long pos = atomic_inc_u64(&a.count[a.nkeys + 1 + key_id(a, x, s)]);
        a.entry[pos] = i;
    }
};
LIG_HD void sift_down_max(int64_t *v, int64_t root, int64_t n) {
    for (;;) {
        int64_t c = 2 * root + 1;
        if (c >= n) return;
        if (c + 1 < n && v[c + 1] > v[c]) c++;
        if (!(v[c] > v[root])) return;
        swap_i64(v, c, root);
        root = c;
    }
}
struct k_sort_segments {
    grad_args a;
    LIG_HD void operator()(int64_t key) const {
        int64_t *v = a.entry + a.count[key];
        const int64_t n = (int64_t)(a.count[key + 1] - a.count[key]);
        for (int64_t i = n / 2 - 1; i >= 0; i--) sift_down_max(v, i, n);
        for (int64_t end = n - 1; end > 0; end--) {
            swap_i64(v, 0, end);
            sift_down_max(v, 0, end);
        }
    }
};
struct k_dk_sum {
    grad_args a;
    LIG_HD void operator()(int64_t i) const {
        const int64_t D = a.p.D, d = i % D, key = i / D, g = key % a.p.N2, kr = key / a.p.N2;
        float acc = 0.0f;
        for (unsigned long long e = a.count[key]; e < a.count[key + 1]; e++) {
            const int64_t id = a.entry[e], u = id / a.p.K;
            acc += slot_contribution(a, u, id - u * a.p.K, d);
        }
        store_f(a.dk.dtype, dk_at(a, kr, g, d), acc);
    }
};

template <class X>
void run_grad(X &x, const grad_args &a, bool deterministic, const int64_t *host_bt) {
    const int64_t K = a.p.K, D = a.p.D, slots = a.p.units * K;
    run_prologue(x, a.st, a.p, host_bt);
    x.launch(slots, k_grad_check{a});
    x.launch(1, k_grad_report{a});
    x.launch(slots * a.p.G, after_checks(a.st, k_grad_scores{a}));
    x.launch(a.p.q_rows * a.p.N1 * D, after_checks(a.st, k_grad_dq{a}));
    x.launch(a.p.q_rows * a.p.N1, after_checks(a.st, k_grad_dw{a}));
    if (deterministic) {
        x.launch(2 * a.nkeys + 1, after_checks(a.st, k_count_clear{a}));
        x.launch(slots, after_checks(a.st, k_count{a}));
        x.launch(1, after_checks(a.st, k_scan{a}));
        x.launch(slots, after_checks(a.st, k_scatter{a}));
        x.launch(a.nkeys, after_checks(a.st, k_sort_segments{a}));
        x.launch(a.nkeys * D, after_checks(a.st, k_dk_sum{a}));
    } else {
        x.launch(a.nkeys * D, after_checks(a.st, k_fill_f32{a.acc}));
        x.launch(slots * D, after_checks(a.st, k_dk_scatter{a}));
        x.launch(a.nkeys * D, after_checks(a.st, k_dk_round{a}));
    }
}

} // namespace ligcu

#endif // LIG_CUDA_KERNELS_GRAD_CUH

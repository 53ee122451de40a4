/* The CUDA backend's kernels, written once as __host__ __device__ bodies: each body is a function
 * of one flat thread index (a grid-stride loop on the device, a host loop in any order in the
 * emulation test, tests/cuda/emulate.cu), owns the outputs it writes, and synchronises with no
 * other thread (no __syncthreads, no shared memory). The only atomics are order-insensitive
 * (integer counts, a minimum) except the fp32 atomicAdd of the non-deterministic dK path.
 *
 * A pipeline (run_grad, run_fwd, run_kl) is a sequence of bodies over index ranges, templated on
 * an executor `X` that provides
 *   X::launch(n, body)   run body(i) for every i in [0, n): a kernel on the plan's stream, or a loop
 * Stream order makes each launch see the previous ones' writes, as the host loop does.
 *
 * The status protocol (docs/cuda.md): the workspace starts with a cu_status; the first launch
 * clears it, the checks record the lowest failing position with an atomic minimum, a one-thread
 * launch decodes it, and every later body, launched through after_checks, returns at once when it
 * is set: nothing is written. */
#ifndef LIG_CUDA_KERNELS_CUH
#define LIG_CUDA_KERNELS_CUH

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/half_bits.h"

#ifdef __CUDACC__
#define LIG_HD __host__ __device__ __forceinline__
#else
#define LIG_HD inline
#endif

namespace ligcu {

enum { DT_F32 = 0, DT_F16 = 1, DT_BF16 = 2, DT_I32 = 3, DT_I64 = 4 }; /* = lig_dtype */
enum { ST_OK = 0, ST_BAD_INDEX = 1, ST_BAD_TARGET = 2 };
static const unsigned long long NONE = ~0ull;
static const uint64_t STATUS_MAGIC = 0x6c69672d73746174ull; /* "lig-stat" */

/* The head of every CUDA workspace (at most 128 bytes, at the workspace's first 64-byte boundary). */
struct cu_status {
    uint64_t magic;                /* STATUS_MAGIC once the first launch has run */
    unsigned long long first_bad;  /* lowest failing position, NONE when every check passed */
    int32_t code, tnd;             /* ST_*; the layout, for the message */
    int64_t b, row, g, slot;       /* decoded position (grad: batch, row, key head, slot; KL: row, slot) */
    int64_t ivalue, limit;         /* grad: the index and the batch's key count */
    double fvalue;                 /* KL: the target */
};

/* ---- scalars ------------------------------------------------------------------------------ */

LIG_HD uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
LIG_HD float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* The 16-bit float conversions are core/half_bits.h's (lig_bf16_to_f32 and kin), the library's own. */
LIG_HD float load_f(int dtype, const char *p) {
    if (dtype == DT_F32) { float f; memcpy(&f, p, 4); return f; }
    uint16_t h;
    memcpy(&h, p, 2);
    return dtype == DT_BF16 ? lig_bf16_to_f32(h) : lig_f16_to_f32(h);
}
LIG_HD void store_f(int dtype, char *p, float f) {
    if (dtype == DT_F32) { memcpy(p, &f, 4); return; }
    uint16_t h = dtype == DT_BF16 ? lig_f32_to_bf16(f) : lig_f32_to_f16(f);
    memcpy(p, &h, 2);
}
LIG_HD int64_t load_i(int dtype, const char *p) {
    if (dtype == DT_I32) { int32_t v; memcpy(&v, p, 4); return v; }
    int64_t v;
    memcpy(&v, p, 8);
    return v;
}
LIG_HD void store_i(int dtype, char *p, int64_t v) {
    if (dtype == DT_I32) { int32_t w = (int32_t)v; memcpy(p, &w, 4); return; }
    memcpy(p, &v, 8);
}
LIG_HD bool is_nan(float f) { return (f32_bits(f) & 0x7fffffffu) > 0x7f800000u; }
LIG_HD float neg_inf() { return bits_f32(0xff800000u); }

/* Order-insensitive atomics; the host emulation runs one body at a time. */
LIG_HD void atomic_min_u64(unsigned long long *p, unsigned long long v) {
#ifdef __CUDA_ARCH__
    atomicMin(p, v);
#else
    if (v < *p) *p = v;
#endif
}
LIG_HD unsigned long long atomic_inc_u64(unsigned long long *p) {
#ifdef __CUDA_ARCH__
    return atomicAdd(p, 1ull);
#else
    return (*p)++;
#endif
}
LIG_HD void atomic_add_f32(float *p, float v) {
#ifdef __CUDA_ARCH__
    atomicAdd(p, v);
#else
    *p += v;
#endif
}

/* ---- geometry ------------------------------------------------------------------------------ */

/* A normalised tensor view (core/problem.h lig_view4), by value. */
struct cu_view {
    char *data;
    int32_t dtype, esize;
    int64_t batch, row, head, dim;
};

/* The problem's geometry; the per-batch arrays live in the workspace (5B + 1 values:
 * lq, lk, q_base, k_base, row_prefix, as core/problem.h lig_batches). */
struct cu_geom {
    int64_t B, N1, N2, G, D, K, S1, S2;
    int64_t sparse_mode, pre_tokens, next_tokens;
    int64_t units, key_rows, key_batch, q_rows; /* q_rows: rows of the query tensor (B*S1 or T1) */
    int32_t tnd, pad;
    const int64_t *bt;                          /* device (or emulated) copy of the batches */
    LIG_HD int64_t lq(int64_t b) const { return bt[b]; }
    LIG_HD int64_t lk(int64_t b) const { return bt[B + b]; }
    LIG_HD int64_t q_base(int64_t b) const { return bt[2 * B + b]; }
    LIG_HD int64_t k_base(int64_t b) const { return bt[3 * B + b]; }
    LIG_HD int64_t row_prefix(int64_t b) const { return bt[4 * B + b]; }
};

LIG_HD char *at_q(const cu_view &v, const cu_geom &p, int64_t b, int64_t t, int64_t h, int64_t d) {
    return v.data + (b * v.batch + (p.q_base(b) + t) * v.row + h * v.head + d * v.dim) * (int64_t)v.esize;
}
LIG_HD char *at_k(const cu_view &v, const cu_geom &p, int64_t b, int64_t s, int64_t g, int64_t d) {
    return v.data + (b * v.batch + (p.k_base(b) + s) * v.row + g * v.head + d * v.dim) * (int64_t)v.esize;
}

/* (b, t, g) of unit u and its visible keys lo..hi (core/problem.h lig_unit_decode). */
struct cu_unit {
    int64_t b, t, g, lo, hi;
};
LIG_HD cu_unit unit_decode(const cu_geom &p, int64_t u) {
    cu_unit x;
    const int64_t r = u / p.N2;
    x.g = u - r * p.N2;
    int64_t lo = 0, hi = p.B - 1;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo + 1) / 2;
        if (p.row_prefix(mid) <= r) lo = mid;
        else hi = mid - 1;
    }
    x.b = lo;
    x.t = r - p.row_prefix(x.b);
    const int64_t lq = p.lq(x.b), lk = p.lk(x.b);
    int64_t a, z;
    if (p.sparse_mode == 0) {
        a = p.pre_tokens >= x.t ? 0 : x.t - p.pre_tokens;
        z = p.next_tokens >= lk ? lk - 1 : x.t + p.next_tokens;
    } else {
        const int64_t diag = lk - lq + x.t;
        z = diag;
        a = diag < 0 || p.pre_tokens >= diag ? 0 : diag - p.pre_tokens;
    }
    x.lo = a;
    x.hi = z < lk - 1 ? z : lk - 1;
    return x;
}

/* Query-tensor row r (BSND: b * S1 + t; TND: the row) as (b, t); false for a row no batch owns
 * validly (past a batch's length, or past the last TND end). */
LIG_HD bool row_decode(const cu_geom &p, int64_t r, int64_t *b, int64_t *t) {
    if (p.B == 0) return false;
    if (!p.tnd) {
        *b = r / p.S1;
        *t = r - *b * p.S1;
        return *t < p.lq(*b);
    }
    int64_t lo = 0, hi = p.B - 1; /* the last batch starting at or before r */
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo + 1) / 2;
        if (p.q_base(mid) <= r) lo = mid;
        else hi = mid - 1;
    }
    *b = lo;
    *t = r - p.q_base(lo);
    return *t >= 0 && *t < p.lq(lo);
}
/* Same for key-tensor rows. */
LIG_HD bool key_row_decode(const cu_geom &p, int64_t r, int64_t *b, int64_t *s) {
    if (p.B == 0) return false;
    if (!p.tnd) {
        *b = r / p.S2;
        *s = r - *b * p.S2;
        return *s < p.lk(*b);
    }
    int64_t lo = 0, hi = p.B - 1;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo + 1) / 2;
        if (p.k_base(mid) <= r) lo = mid;
        else hi = mid - 1;
    }
    *b = lo;
    *s = r - p.k_base(lo);
    return *s >= 0 && *s < p.lk(lo);
}
LIG_HD int64_t unit_of(const cu_geom &p, int64_t b, int64_t t, int64_t g) { return (p.row_prefix(b) + t) * p.N2 + g; }

/* ---- shared launches ---------------------------------------------------------------------- */

/* Clears the status (one thread). */
struct k_status_init {
    cu_status *st;
    int32_t tnd;
    LIG_HD void operator()(int64_t) const {
        st->magic = STATUS_MAGIC;
        st->first_bad = NONE;
        st->code = ST_OK;
        st->tnd = tnd;
        st->b = st->row = st->g = st->slot = st->ivalue = st->limit = 0;
        st->fvalue = 0.0;
    }
};

/* Copies up to CHUNK batch values, carried in the launch's parameters (no host buffer outlives
 * phase 2, nothing synchronises), into the workspace. */
static constexpr int64_t CHUNK = 256;
struct k_put_chunk {
    int64_t *dst;
    int64_t n;
    int64_t v[CHUNK];
    LIG_HD void operator()(int64_t i) const {
        if (i < n) dst[i] = v[i];
    }
};

LIG_HD bool failed(const cu_status *st) { return st->first_bad != NONE; }

/* The status protocol's "every later body returns at once when a check failed", in one place:
 * the pipelines launch each body that runs after the checks as after_checks(st, body). */
template <class Body>
struct unless_failed {
    const cu_status *st;
    Body body;
    LIG_HD void operator()(int64_t i) const {
        if (!failed(st)) body(i);
    }
};
template <class Body>
inline unless_failed<Body> after_checks(const cu_status *st, const Body &body) {
    return unless_failed<Body>{st, body};
}

/* ---- backward (docs/contract.md 2.2) -------------------------------------------------------- */

/* What the backward and the forward both carry: the geometry, the query, key, weights and slot
 * (index) views, the status and the score buffer. Filled once for both by plan_args_of
 * (cuda_plan.cuh). */
struct plan_args {
    cu_geom p;
    cu_view q, k, w, idx;
    cu_status *st;
    float *score; /* grad: [units][G][K], S of counted slots (0 for the others); fwd: [units][width] */
};

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
LIG_HD void swap_i64(int64_t *v, int64_t i, int64_t j) {
    const int64_t tmp = v[i];
    v[i] = v[j];
    v[j] = tmp;
}
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

/* ---- forward (docs/contract.md 2.1) ---------------------------------------------------------- */

struct fwd_args : plan_args { /* score: [units][width], the score of key lo + i */
    cu_view val;
    int32_t has_values, trivial; /* trivial: D or N1 is 0, every score is exactly 0 */
    int64_t width;               /* scores per unit: the longest batch's key count */
    int64_t cap;                 /* min(K, width): candidates kept per unit */
    float *kept_score;           /* [units][cap] */
    int64_t *kept_key;           /* [units][cap] */
};

/* I = sum over the group's heads of w * ReLU(q . k), fp32, heads and d in order. */
struct k_fwd_scores {
    fwd_args a;
    LIG_HD void operator()(int64_t i) const {
        const int64_t u = i / a.width, o = i - u * a.width;
        const cu_unit x = unit_decode(a.p, u);
        const int64_t s = x.lo + o;
        if (s > x.hi) return;
        float I = 0.0f;
        if (!a.trivial)
            for (int64_t hl = 0; hl < a.p.G; hl++) {
                const int64_t h = x.g * a.p.G + hl;
                float dot = 0.0f;
                for (int64_t d = 0; d < a.p.D; d++)
                    dot += load_f(a.q.dtype, at_q(a.q, a.p, x.b, x.t, h, d)) * load_f(a.k.dtype, at_k(a.k, a.p, x.b, s, x.g, d));
                const float relu = dot > 0.0f ? dot : 0.0f;
                I += load_f(a.w.dtype, at_q(a.w, a.p, x.b, x.t, h, 0)) * relu;
            }
        a.score[i] = I;
    }
};

/* Candidate order: higher rank first (a NaN ranks as -inf), ties to the lower key. */
LIG_HD float rank_of(float s) { return is_nan(s) ? neg_inf() : s; }
LIG_HD bool better(float sa, int64_t ka, float sb, int64_t kb) {
    const float ra = rank_of(sa), rb = rank_of(sb);
    return ra > rb || (ra == rb && ka < kb);
}
LIG_HD void swap_candidates(float *sc, int64_t *ky, int64_t i, int64_t j) {
    const float ts = sc[i];
    sc[i] = sc[j];
    sc[j] = ts;
    swap_i64(ky, i, j);
}
/* Heap with the worst kept candidate at the root. */
LIG_HD void sift_down_worst(float *sc, int64_t *ky, int64_t root, int64_t n) {
    for (;;) {
        int64_t c = 2 * root + 1;
        if (c >= n) return;
        if (c + 1 < n && better(sc[c], ky[c], sc[c + 1], ky[c + 1])) c++; /* the worse child */
        if (!better(sc[root], ky[root], sc[c], ky[c])) return;
        swap_candidates(sc, ky, c, root);
        root = c;
    }
}

/* Top-k and the writes, one thread per (query-tensor row, key head): a bounded heap over the
 * visible keys, heapsorted best first; -1 / -inf after the selected slots and in invalid rows. */
struct k_fwd_select {
    fwd_args a;
    LIG_HD void operator()(int64_t i) const {
        const int64_t g = i % a.p.N2, r = i / a.p.N2;
        int64_t b, t, n = 0;
        float *sc = 0;
        int64_t *ky = 0;
        const bool valid = row_decode(a.p, r, &b, &t);
        if (valid) {
            const int64_t u = unit_of(a.p, b, t, g);
            const cu_unit x = unit_decode(a.p, u);
            sc = a.kept_score + u * a.cap;
            ky = a.kept_key + u * a.cap;
            const float *all = a.score + u * a.width;
            for (int64_t s = x.lo; s <= x.hi; s++) {
                const float v = all[s - x.lo];
                if (n < a.cap) { /* fill, then heapify once full */
                    sc[n] = v;
                    ky[n] = s;
                    if (++n == a.cap)
                        for (int64_t k = n / 2 - 1; k >= 0; k--) sift_down_worst(sc, ky, k, n);
                } else if (better(v, s, sc[0], ky[0])) {
                    sc[0] = v;
                    ky[0] = s;
                    sift_down_worst(sc, ky, 0, n);
                }
            }
            if (n < a.cap)
                for (int64_t k = n / 2 - 1; k >= 0; k--) sift_down_worst(sc, ky, k, n);
            for (int64_t end = n - 1; end > 0; end--) { /* worst to the back: best first */
                swap_candidates(sc, ky, 0, end);
                sift_down_worst(sc, ky, 0, end);
            }
        } else {
            b = a.p.tnd ? 0 : r / a.p.S1;
            t = a.p.tnd ? r : r - b * a.p.S1;
        }
        const int64_t row = a.p.tnd ? r : t;
        for (int64_t j = 0; j < a.p.K; j++) {
            char *ip = a.idx.data + (b * a.idx.batch + row * a.idx.row + g * a.idx.head + j * a.idx.dim) * (int64_t)a.idx.esize;
            store_i(a.idx.dtype, ip, j < n ? ky[j] : -1);
            if (a.has_values) {
                char *vp = a.val.data + (b * a.val.batch + row * a.val.row + g * a.val.head + j * a.val.dim) * (int64_t)a.val.esize;
                store_f(a.val.dtype, vp, j < n ? sc[j] : neg_inf());
            }
        }
    }
};

/* ---- the KL step (docs/contract.md 2.3) ------------------------------------------------------ */

enum { KL_MAX_DIMS = 8 };
struct slot_view {
    char *data;
    int32_t dtype, esize;
    int64_t strides[KL_MAX_DIMS];
};
struct kl_args {
    int64_t ndim, rows, K;
    int64_t shape[KL_MAX_DIMS];
    slot_view values, target, dy, indices;
    int32_t has_indices, pad;
    char *loss;
    cu_status *st;
    double *row_loss; /* [rows] */
};
LIG_HD char *slot_at(const kl_args &a, const slot_view &v, int64_t r, int64_t j) {
    int64_t off = j * v.strides[a.ndim - 1];
    for (int64_t d = a.ndim - 2; d >= 0; d--) {
        const int64_t i = r % a.shape[d];
        r /= a.shape[d];
        off += i * v.strides[d];
    }
    return v.data + off * (int64_t)v.esize;
}
LIG_HD bool kl_counts(const kl_args &a, int64_t r, int64_t j, float v) {
    if (a.has_indices) return load_i(a.indices.dtype, slot_at(a, a.indices, r, j)) >= 0;
    return v != neg_inf();
}
struct k_kl_check {
    kl_args a;
    LIG_HD void operator()(int64_t i) const {
        const int64_t r = i / a.K, j = i - r * a.K;
        const float v = load_f(a.values.dtype, slot_at(a, a.values, r, j));
        if (!kl_counts(a, r, j, v)) return;
        const float t = load_f(a.target.dtype, slot_at(a, a.target, r, j));
        if (!(t >= 0.0f)) atomic_min_u64(&a.st->first_bad, (unsigned long long)i);
    }
};
struct k_kl_report {
    kl_args a;
    LIG_HD void operator()(int64_t) const {
        if (!failed(a.st)) return;
        const int64_t i = (int64_t)a.st->first_bad, r = i / a.K, j = i - r * a.K;
        a.st->code = ST_BAD_TARGET;
        a.st->row = r;
        a.st->slot = j;
        a.st->fvalue = load_f(a.target.dtype, slot_at(a, a.target, r, j));
    }
};
/* One row: the softmax over its counted slots in double (src/backends/cpu/operators/
 * indexer_kl_grad.c, with the exponentials recomputed instead of kept). */
struct k_kl_rows {
    kl_args a;
    LIG_HD void operator()(int64_t r) const {
        double m = 0.0;
        bool any = false;
        for (int64_t j = 0; j < a.K; j++) {
            const float v = load_f(a.values.dtype, slot_at(a, a.values, r, j));
            if (!kl_counts(a, r, j, v)) continue;
            if (!any || v > m) m = v;
            any = true;
        }
        double z = 0.0, mass = 0.0;
        for (int64_t j = 0; any && j < a.K; j++) {
            const float v = load_f(a.values.dtype, slot_at(a, a.values, r, j));
            if (!kl_counts(a, r, j, v)) continue;
            z += exp((double)v - m);
            mass += load_f(a.target.dtype, slot_at(a, a.target, r, j));
        }
        const double log_z = any ? log(z) : 0.0;
        double loss = 0.0;
        for (int64_t j = 0; j < a.K; j++) {
            const float v = load_f(a.values.dtype, slot_at(a, a.values, r, j));
            float gr = 0.0f;
            if (any && kl_counts(a, r, j, v)) {
                const double t = load_f(a.target.dtype, slot_at(a, a.target, r, j));
                if (t > 0.0) loss += t * (log(t) - ((double)v - m - log_z));
                gr = (float)(exp((double)v - m) / z * mass - t);
            }
            store_f(a.dy.dtype, slot_at(a, a.dy, r, j), gr);
        }
        a.row_loss[r] = loss;
    }
};
struct k_kl_total {
    kl_args a;
    LIG_HD void operator()(int64_t) const {
        double total = 0.0;
        for (int64_t r = 0; r < a.rows; r++) total += a.row_loss[r];
        const float out = (float)total;
        memcpy(a.loss, &out, 4);
    }
};

/* ---- the pipelines ---------------------------------------------------------------------- */

template <class X>
void put_batches(X &x, int64_t *dst, const int64_t *src, int64_t n) {
    for (int64_t at = 0; at < n; at += CHUNK) {
        k_put_chunk c;
        c.dst = dst + at;
        c.n = n - at < CHUNK ? n - at : CHUNK;
        for (int64_t i = 0; i < c.n; i++) c.v[i] = src[at + i];
        x.launch(c.n, c);
    }
}

/* The first launches of the backward and the forward: the status, then the batches (`host_bt`,
 * 5B + 1 values, copied through launch parameters into a.p.bt). */
template <class X>
void run_prologue(X &x, cu_status *st, const cu_geom &p, const int64_t *host_bt) {
    x.launch(1, k_status_init{st, p.tnd});
    put_batches(x, const_cast<int64_t *>(p.bt), host_bt, 5 * p.B + 1);
}

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

template <class X>
void run_fwd(X &x, const fwd_args &a, const int64_t *host_bt) {
    run_prologue(x, a.st, a.p, host_bt);
    x.launch(a.p.units * a.width, after_checks(a.st, k_fwd_scores{a}));
    x.launch(a.p.q_rows * a.p.N2, after_checks(a.st, k_fwd_select{a}));
}

template <class X>
void run_kl(X &x, const kl_args &a) {
    x.launch(1, k_status_init{a.st, 0});
    x.launch(a.rows * a.K, k_kl_check{a});
    x.launch(1, k_kl_report{a});
    x.launch(a.rows, after_checks(a.st, k_kl_rows{a}));
    x.launch(1, after_checks(a.st, k_kl_total{a}));
}

} // namespace ligcu

#endif

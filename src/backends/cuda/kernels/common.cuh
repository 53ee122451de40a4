/* What every CUDA kernel body shares (the model is in cuda_kernels.cuh): dtypes and scalar
 * conversions, order-insensitive atomics, the status header, the geometry of a problem, the first
 * launches of every pipeline and the after_checks guard. */
#ifndef LIG_CUDA_KERNELS_COMMON_CUH
#define LIG_CUDA_KERNELS_COMMON_CUH

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
LIG_HD uint32_t atomic_add_u32(uint32_t *p, uint32_t v) { /* global or shared memory */
#ifdef __CUDA_ARCH__
    return atomicAdd((unsigned *)p, (unsigned)v);
#else
    const uint32_t old = *p;
    *p = old + v;
    return old;
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
/* The query-tensor row of a valid (b, t), as the output views address it. */
LIG_HD int64_t tensor_row(const cu_geom &p, int64_t b, int64_t t) { return p.tnd ? p.q_base(b) + t : t; }
/* Whether query-tensor row r is one no batch owns validly (past a batch's length, past the last TND
 * end), and then its (b, row) as the output views address it: the rows the invalid-row kernels fill. */
LIG_HD bool invalid_row(const cu_geom &p, int64_t r, int64_t *b, int64_t *row) {
    if (row_decode(p, r, b, row)) return false;
    *b = p.tnd ? 0 : r / p.S1;
    *row = p.tnd ? r : r - *b * p.S1;
    return true;
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

/* What the backward and the forward both carry: the geometry, the query, key, weights and slot
 * (index) views, the status and the score buffer. Filled once for both by plan_args_of
 * (cuda_plan.cuh). */
struct plan_args {
    cu_geom p;
    cu_view q, k, w, idx;
    cu_status *st;
    float *score; /* grad: [units][G][K], S of counted slots (0 for the others); fwd: [units][width] */
};

LIG_HD void swap_i64(int64_t *v, int64_t i, int64_t j) {
    const int64_t tmp = v[i];
    v[i] = v[j];
    v[j] = tmp;
}

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

} // namespace ligcu

#endif // LIG_CUDA_KERNELS_COMMON_CUH

/* The forward (docs/contract.md 2.1) as CUDA kernel bodies and its pipeline, run_fwd. */
#ifndef LIG_CUDA_KERNELS_FWD_CUH
#define LIG_CUDA_KERNELS_FWD_CUH

#include "backends/cuda/kernels/common.cuh"

namespace ligcu {


struct fwd_args : plan_args { /* score: [chunk][width], the score of key lo + i of unit unit0 + c */
    cu_view val;
    int32_t has_values, trivial; /* trivial: D or N1 is 0, every score is exactly 0 */
    int64_t width;               /* scores per unit: the longest batch's key count */
    int64_t cap;                 /* min(K, width): candidates kept per unit */
    int64_t chunk;               /* units per chunk (the regions below hold one chunk) */
    int64_t unit0;               /* the first unit of the chunk being run (set per chunk by run_fwd) */
    float *kept_score;           /* [chunk][cap] */
    int64_t *kept_key;           /* [chunk][cap] */
};

/* I = sum over the group's heads of w * ReLU(q . k), fp32, heads and d in order. */
struct k_fwd_scores {
    fwd_args a;
    LIG_HD void operator()(int64_t i) const {
        const int64_t c = i / a.width, o = i - c * a.width;
        const cu_unit x = unit_decode(a.p, a.unit0 + c);
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

/* Writes one (row, key head)'s K slots: the first n candidates, then -1 / -inf. */
LIG_HD void write_slots(const fwd_args &a, int64_t b, int64_t row, int64_t g, const float *sc, const int64_t *ky,
                        int64_t n) {
    for (int64_t j = 0; j < a.p.K; j++) {
        char *ip = a.idx.data + (b * a.idx.batch + row * a.idx.row + g * a.idx.head + j * a.idx.dim) * (int64_t)a.idx.esize;
        store_i(a.idx.dtype, ip, j < n ? ky[j] : -1);
        if (a.has_values) {
            char *vp = a.val.data + (b * a.val.batch + row * a.val.row + g * a.val.head + j * a.val.dim) * (int64_t)a.val.esize;
            store_f(a.val.dtype, vp, j < n ? sc[j] : neg_inf());
        }
    }
}

/* Top-k and the writes, one thread per unit of the chunk: a bounded heap over the unit's visible
 * keys, heapsorted best first, then its K slots. */
struct k_fwd_select {
    fwd_args a;
    LIG_HD void operator()(int64_t c) const {
        const cu_unit x = unit_decode(a.p, a.unit0 + c);
        float *sc = a.kept_score + c * a.cap;
        int64_t *ky = a.kept_key + c * a.cap;
        const float *all = a.score + c * a.width;
        int64_t n = 0;
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
        write_slots(a, x.b, tensor_row(a.p, x.b, x.t), x.g, sc, ky, n);
    }
};

/* The rows no batch owns validly (past a batch's length, past the last TND end): -1 / -inf, one
 * thread per (query-tensor row, key head). */
struct k_fwd_invalid_rows {
    fwd_args a;
    LIG_HD void operator()(int64_t i) const {
        const int64_t g = i % a.p.N2, r = i / a.p.N2;
        int64_t b, row;
        if (row_decode(a.p, r, &b, &row)) return;
        invalid_row(a.p, r, &b, &row);
        write_slots(a, b, row, g, 0, 0, 0);
    }
};

template <class X>
void run_fwd(X &x, const fwd_args &a, const int64_t *host_bt) {
    run_prologue(x, a.st, a.p, host_bt);
    /* the units in chunks of a.chunk, in order: the scores and candidates of one chunk at a time */
    fwd_args c = a;
    for (c.unit0 = 0; c.unit0 < a.p.units; c.unit0 += a.chunk) {
        const int64_t n = a.p.units - c.unit0 < a.chunk ? a.p.units - c.unit0 : a.chunk;
        x.launch(n * a.width, after_checks(a.st, k_fwd_scores{c}));
        x.launch(n, after_checks(a.st, k_fwd_select{c}));
    }
    x.launch(a.p.q_rows * a.p.N2, after_checks(a.st, k_fwd_invalid_rows{a}));
}

} // namespace ligcu

#endif // LIG_CUDA_KERNELS_FWD_CUH

/* The backward's dQ and dK products on tensor cores (the backward's products are its largest cost), for bf16 q and k with D up
 * to 256 (grad_tc_eligible); the others keep k_grad_dq and k_grad_contrib. The gate's coefficient
 * A = [S > 0] w dy is fp32; it enters the bf16 products as exact bf16 parts, A = hi + mid + lo
 * (8 significant bits each cover fp32's 24; two parts when w and dy are bf16, whose product has 16),
 * so every product is exact in fp32 and nothing is rounded to bf16 on the way (as the CPU's bf16
 * engine keeps its operands). Per 16 slots (dQ) or 16 heads (dK) the parts' products are added
 * part after part: the sums are fp32 sums of exact products, in another order than the CPU's, so
 * continuous data agrees within fp32 rounding and grid data bit for bit.
 *   k_grad_dq_tc       one block per (unit, group of 64 heads): dQ [heads][D] += A [heads][slots]
 *                      x K^T [slots][D], over tiles of 64 slots, gathered key rows staged transposed;
 *   k_grad_contrib_tc  one block per (unit, tile of 64 slots): C [slots][D] = A^T [slots][heads] x
 *                      Q [heads][D], over groups of 64 heads: each slot's dK contribution, into
 *                      contrib [chunk][K][D] (the dK sum reads it). */
#ifndef LIG_CUDA_KERNELS_GRAD_TC_CUH
#define LIG_CUDA_KERNELS_GRAD_TC_CUH

#include "backends/cuda/kernels/scores_tc.cuh"

namespace ligcu {

/* Splits a into exact bf16 parts (a = p[0] + p[1] + p[2] for a finite a above 2^-110; the parts
 * past `n` are dropped, exact when a has at most 8n significant bits). A non-finite a is p[0]. */
LIG_HD void split_bf16(float a, int n, uint16_t *p) {
    p[0] = p[1] = p[2] = 0;
    if (!(a - a == 0.0f)) { /* inf or NaN */
        p[0] = lig_f32_to_bf16(a);
        return;
    }
    float r = a;
    for (int i = 0; i < n; i++) {
        p[i] = lig_f32_to_bf16(r);
        r -= lig_bf16_to_f32(p[i]);
    }
}

enum { TC_T = 64, TC_LD = TC_T + 8, TC_THREADS = 256 }; /* tile edge (slots or heads), staged row length, block */

/* What both bodies share: the problem, the chunk, and the gate of (unit, head, slot). */
struct grad_tc_base {
    plan_args a;
    cu_view dy, out;     /* out: d_query (dq body) */
    float *contrib;      /* [chunk][K][D] (contrib body) */
    int64_t unit0;
    int32_t parts, pad;  /* bf16 parts of A: 2 or 3 */
    LIG_HD int64_t dpad() const { return (a.p.D + 15) / 16 * 16; }
    LIG_HD int64_t ldc() const { return dpad() + 4; }
    /* A of the chunk's unit c, head hl of its group, slot j, as `parts` bf16 parts */
    LIG_HD void gate_parts(const cu_unit &x, int64_t c, int64_t hl, int64_t j, uint16_t *p) const {
        const float S = a.score[(c * a.p.G + hl) * a.p.K + j];
        float A = 0.0f;
        if (S > 0.0f)
            A = load_f(a.w.dtype, at_q(a.w, a.p, x.b, x.t, x.g * a.p.G + hl, 0)) *
                load_f(dy.dtype, at_q(dy, a.p, x.b, x.t, x.g, j));
        split_bf16(A, parts, p);
    }
    /* c [TC_T][ldc] += sum over the parts i of A_i [TC_T][TC_T] x B^T, A_i = pa + i TC_T TC_LD and B
     * = b [Dp][TC_LD] (rows of length TC_T), parts after parts per 16-wide step; warp w does output
     * tiles w, w + 8, ... (a block of TC_THREADS) */
    LIG_HD void multiply_parts(int tid, float *c, const uint16_t *pa, const uint16_t *b) const {
        const int warp = tid / WARP, lane = tid % WARP, dtiles = (int)(dpad() / 16), LC = (int)ldc();
        for (int tile = warp; tile < (TC_T / 16) * dtiles; tile += TC_THREADS / WARP) {
            const int rt = tile / dtiles, dt = tile % dtiles;
            for (int ks = 0; ks < TC_T; ks += 16)
                for (int i = 0; i < parts; i++)
                    warp_mma_16x16x16(DT_BF16, c + rt * 16 * LC + dt * 16, LC, pa + (i * TC_T + rt * 16) * TC_LD + ks,
                                      TC_LD, b + dt * 16 * TC_LD + ks, TC_LD, lane);
        }
    }
    /* the key of slot j when it counts, else -1 */
    LIG_HD int64_t slot_key(const cu_unit &x, int64_t j) const {
        const int64_t s = load_i(a.idx.dtype, at_q(a.idx, a.p, x.b, x.t, x.g, j));
        return s >= x.lo && s <= x.hi ? s : -1;
    }
};

struct k_grad_dq_tc : grad_tc_base {
    enum { THREADS = TC_THREADS };
    struct local {
        int64_t tile;
    };
    int64_t groups; /* head groups per unit */
    /* kt [Dp][TC_LD] keys transposed, ap [3][TC_T heads][TC_LD] A parts, c [TC_T][ldc] fp32 dQ */
    LIG_HD uint64_t kbytes() const { return (uint64_t)dpad() * TC_LD * 2; }
    LIG_HD uint64_t abytes() const { return 3ull * TC_T * TC_LD * 2; }
    uint64_t smem_bytes() const { return kbytes() + abytes() + (uint64_t)TC_T * ldc() * 4; }

    LIG_HD int step(int phase, int64_t blk, int tid, char *smem, local &l) const {
        const int64_t c = blk / groups, hg = blk - c * groups, G = a.p.G, D = a.p.D, K = a.p.K, Dp = dpad(),
                      LC = ldc(), h0 = hg * TC_T, hn = G - h0 < (int64_t)TC_T ? G - h0 : (int64_t)TC_T;
        const cu_unit x = unit_decode(a.p, unit0 + c);
        uint16_t *kt = (uint16_t *)(void *)smem;
        uint16_t *ap = (uint16_t *)(void *)(smem + kbytes());
        float *cs = (float *)(void *)(smem + kbytes() + abytes());
        if (phase == 0) {
            if (failed(a.st)) return -1;
            for (int64_t e = tid; e < TC_T * LC; e += THREADS) cs[e] = 0.0f;
            l.tile = 0;
            return 1;
        }
        if (phase == 1) { /* stage slots 64 l.tile ..: their key rows (transposed) and A's parts */
            const int64_t j0 = l.tile * TC_T;
            for (int64_t e = tid; e < (int64_t)TC_T * Dp; e += THREADS) {
                const int64_t r = e / Dp, d = e - r * Dp, j = j0 + r;
                const int64_t s = j < K && d < D ? slot_key(x, j) : -1;
                kt[d * TC_LD + r] = s >= 0 ? raw16(at_k(a.k, a.p, x.b, s, x.g, d)) : 0;
            }
            for (int64_t e = tid; e < (int64_t)TC_T * TC_T; e += THREADS) {
                const int64_t hr = e / TC_T, r = e - hr * TC_T, j = j0 + r;
                uint16_t p[3] = {0, 0, 0};
                if (hr < hn && j < K) gate_parts(x, c, h0 + hr, j, p);
                for (int i = 0; i < 3; i++) ap[(i * TC_T + hr) * TC_LD + r] = p[i];
            }
            return 2;
        }
        if (phase == 2) {
            multiply_parts(tid, cs, ap, kt); /* [heads][Dp] */
            return 3;
        }
        if (phase == 3) return ++l.tile * TC_T < K ? 1 : 4;
        for (int64_t e = tid; e < hn * D; e += THREADS) { /* phase 4: the group's d_query rows */
            const int64_t hr = e / D, d = e - hr * D, h = x.g * G + h0 + hr;
            char *o = out.data + (x.b * out.batch + tensor_row(a.p, x.b, x.t) * out.row + h * out.head + d * out.dim) *
                                     (int64_t)out.esize;
            store_f(out.dtype, o, cs[hr * LC + d]);
        }
        return -1;
    }
};

struct k_grad_contrib_tc : grad_tc_base {
    enum { THREADS = TC_THREADS };
    struct local {
        int64_t group;
    };
    int64_t tiles; /* slot tiles per unit */
    /* at [3][TC_T slots][TC_LD] A parts, qt [Dp][TC_LD] query rows transposed, c [TC_T][ldc] */
    LIG_HD uint64_t abytes() const { return 3ull * TC_T * TC_LD * 2; }
    LIG_HD uint64_t qbytes() const { return (uint64_t)dpad() * TC_LD * 2; }
    uint64_t smem_bytes() const { return abytes() + qbytes() + (uint64_t)TC_T * ldc() * 4; }

    LIG_HD int step(int phase, int64_t blk, int tid, char *smem, local &l) const {
        const int64_t c = blk / tiles, st = blk - c * tiles, G = a.p.G, D = a.p.D, K = a.p.K, Dp = dpad(),
                      LC = ldc(), j0 = st * TC_T, jn = K - j0 < (int64_t)TC_T ? K - j0 : (int64_t)TC_T;
        const cu_unit x = unit_decode(a.p, unit0 + c);
        uint16_t *at = (uint16_t *)(void *)smem;
        uint16_t *qt = (uint16_t *)(void *)(smem + abytes());
        float *cs = (float *)(void *)(smem + abytes() + qbytes());
        if (phase == 0) {
            if (failed(a.st)) return -1;
            for (int64_t e = tid; e < TC_T * LC; e += THREADS) cs[e] = 0.0f;
            l.group = 0;
            return 1;
        }
        if (phase == 1) { /* stage heads 64 l.group ..: A's parts (slots x heads), q transposed */
            const int64_t h0 = l.group * TC_T;
            for (int64_t e = tid; e < (int64_t)TC_T * TC_T; e += THREADS) {
                const int64_t r = e / TC_T, hr = e - r * TC_T, hl = h0 + hr;
                uint16_t p[3] = {0, 0, 0};
                if (hl < G && r < jn) gate_parts(x, c, hl, j0 + r, p);
                for (int i = 0; i < 3; i++) at[(i * TC_T + r) * TC_LD + hr] = p[i];
            }
            for (int64_t e = tid; e < (int64_t)TC_T * Dp; e += THREADS) {
                const int64_t hr = e / Dp, d = e - hr * Dp, hl = h0 + hr;
                qt[d * TC_LD + hr] = hl < G && d < D ? raw16(at_q(a.q, a.p, x.b, x.t, x.g * G + hl, d)) : 0;
            }
            return 2;
        }
        if (phase == 2) {
            multiply_parts(tid, cs, at, qt); /* [slots][Dp] */
            return 3;
        }
        if (phase == 3) return ++l.group * TC_T < G ? 1 : 4;
        for (int64_t e = tid; e < jn * D; e += THREADS) { /* phase 4: the tile's contributions */
            const int64_t r = e / D, d = e - r * D;
            contrib[((c * K) + j0 + r) * D + d] = cs[r * LC + d];
        }
        return -1;
    }
};

/* Whether a problem's dQ and dK products run on tensor cores. */
LIG_HD bool tc_grad_eligible(int q_dtype, int k_dtype, int64_t D, int64_t G, int64_t K) {
    return q_dtype == DT_BF16 && tc_scores_eligible(q_dtype, k_dtype, D, G) && K > 0;
}
LIG_HD bool grad_tc_eligible(const plan_args &a) {
    return tc_grad_eligible(a.q.dtype, a.k.dtype, a.p.D, a.p.G, a.p.K);
}

LIG_HD grad_tc_base grad_tc_of(const plan_args &a, const cu_view &dy, const cu_view &dq, float *contrib,
                               int64_t unit0) {
    grad_tc_base b;
    b.a = a;
    b.dy = dy;
    b.out = dq;
    b.contrib = contrib;
    b.unit0 = unit0;
    b.parts = a.w.dtype == DT_BF16 && dy.dtype == DT_BF16 ? 2 : 3;
    b.pad = 0;
    return b;
}

} // namespace ligcu

#endif // LIG_CUDA_KERNELS_GRAD_TC_CUH

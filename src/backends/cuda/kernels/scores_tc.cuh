/* The scores' products on tensor cores (the scores are the forward's and the backward's largest product): a unit's heads against a tile of 64 key
 * rows staged in shared memory, 16 x 16 x 16 tiles by warp_mma_16x16x16 with fp32 accumulation.
 *   tc_tiles      the staging and the products, shared by the forward's top-k (fwd.cuh: the tile
 *                 is keys lo + 64 t ..; w * ReLU summed over the heads per key) and
 *   k_scores_tc   the backward's scores: one block per (unit, tile of 64 slots), the slots' keys
 *                 gathered through the indices, a slot that does not count a row of zeros (S = 0);
 *                 S per head into score [chunk][G][K].
 * For 16-bit q and k of one dtype and D up to 256 (tc_eligible); the others keep the
 * one-thread-per-score bodies. Every product is exact in fp32; on the device the tensor core adds
 * the 16 products of a step in its own order, so the scores can differ from the CPU's d-ordered
 * sums in the last bits (docs/cuda.md); the emulation's tile sums d in order, so there the scores
 * are the CPU's bits. */
#ifndef LIG_CUDA_KERNELS_SCORES_TC_CUH
#define LIG_CUDA_KERNELS_SCORES_TC_CUH

#include "backends/cuda/kernels/block.cuh"

namespace ligcu {

enum { TC_MAX_D = 256 };

LIG_HD uint16_t raw16(const char *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return h;
}

/* Whether a problem's scores run on tensor cores. */
LIG_HD bool tc_scores_eligible(int q_dtype, int k_dtype, int64_t D, int64_t G) {
    const bool half = q_dtype == DT_BF16 || q_dtype == DT_F16;
    return half && k_dtype == q_dtype && D > 0 && D <= TC_MAX_D && G > 0;
}
LIG_HD bool tc_eligible(const plan_args &a) { return tc_scores_eligible(a.q.dtype, a.k.dtype, a.p.D, a.p.G); }

/* One tile's staging and products, for a block of THREADS threads. Shared memory (from `smem`):
 * [KEYS][ld] key rows, [heads][ld] query rows of one head group, [heads][LDC] fp32 products;
 * rows padded with zeros past D (they add nothing) to a multiple of 16, plus 8 elements. */
template <bool Gathered> /* true: the tile's rows are the backward's slots, false: the forward's keys */
struct tc_tiles {
    enum { THREADS = 256, WARPS = THREADS / WARP, KEYS = 64, LDC = KEYS + 4, MAX_HEAD_TILES = 4 };
    plan_args a;
    int32_t head_tiles; /* 16-head tiles per group: min(4, ceil(G / 16)) */
    int32_t pad;

    LIG_HD int64_t dpad() const { return (a.p.D + 15) / 16 * 16; }
    LIG_HD int64_t ld() const { return dpad() + 8; } /* a multiple of 8 (WMMA) */
    LIG_HD int64_t heads() const { return 16 * (int64_t)head_tiles; }
    LIG_HD uint64_t kbytes() const { return (uint64_t)KEYS * ld() * 2; }
    LIG_HD uint64_t qbytes() const { return (uint64_t)heads() * ld() * 2; }
    LIG_HD uint64_t bytes() const { return kbytes() + qbytes() + (uint64_t)heads() * LDC * 4; }
    LIG_HD int64_t groups() const { return (a.p.G + heads() - 1) / heads(); }
    /* heads of group `group` (the last one may be short) */
    LIG_HD int64_t group_heads(int64_t group) const {
        const int64_t h0 = group * heads();
        return a.p.G - h0 < heads() ? a.p.G - h0 : heads();
    }
    LIG_HD float *products(char *smem) const { return (float *)(void *)(smem + kbytes() + qbytes()); }

    /* Key row r of tile kt: its key, or -1 for a row of zeros. */
    LIG_HD int64_t tile_key(const cu_unit &x, int64_t kt, int64_t r) const {
        const int64_t j = kt * KEYS + r;
        if (!Gathered) return x.lo + j <= x.hi ? x.lo + j : -1;
        if (j >= a.p.K) return -1;
        const int64_t s = load_i(a.idx.dtype, at_q(a.idx, a.p, x.b, x.t, x.g, j));
        return s >= x.lo && s <= x.hi ? s : -1;
    }
    /* Rows of tile kt that land in the output: the forward's keys up to hi, the backward's slots. */
    LIG_HD int64_t tile_rows(const cu_unit &x, int64_t kt) const {
        const int64_t n = Gathered ? a.p.K : x.hi - x.lo + 1, left = n - kt * KEYS;
        return left < 0 ? 0 : left < (int64_t)KEYS ? left : (int64_t)KEYS;
    }
    LIG_HD void stage_keys(int tid, char *smem, const cu_unit &x, int64_t kt) const {
        uint16_t *ks = (uint16_t *)(void *)smem;
        const int Dp = (int)dpad(), L = (int)ld(), D = (int)a.p.D; /* 32-bit: D <= TC_MAX_D (a 64-bit
                                                                      division is a call on the device) */
        for (int e = tid; e < KEYS * Dp; e += THREADS) {
            const int r = e / Dp, d = e - r * Dp;
            const int64_t s = d < D ? tile_key(x, kt, r) : -1;
            ks[r * L + d] = s >= 0 ? raw16(at_k(a.k, a.p, x.b, s, x.g, d)) : 0;
        }
    }
    /* the group's query rows (zero past G and D) and cleared products */
    LIG_HD void stage_queries(int tid, char *smem, const cu_unit &x, int64_t group) const {
        uint16_t *qs = (uint16_t *)(void *)(smem + kbytes());
        float *cs = products(smem);
        const int Dp = (int)dpad(), L = (int)ld(), D = (int)a.p.D, H = (int)heads();
        const int64_t G = a.p.G;
        for (int e = tid; e < H * Dp; e += THREADS) {
            const int hr = e / Dp, d = e - hr * Dp;
            const int64_t hl = group * H + hr;
            qs[hr * L + d] = hl < G && d < D ? raw16(at_q(a.q, a.p, x.b, x.t, x.g * G + hl, d)) : 0;
        }
        for (int e = tid; e < H * LDC; e += THREADS) cs[e] = 0.0f;
    }
    /* products [heads][KEYS] = queries x keys^T; warp w does output tiles w, w + WARPS, ..., each
     * the whole d loop */
    LIG_HD void multiply(int tid, char *smem) const {
        const uint16_t *ks = (const uint16_t *)(const void *)smem;
        const uint16_t *qs = (const uint16_t *)(const void *)(smem + kbytes());
        float *cs = products(smem);
        const int64_t Dp = dpad(), L = ld();
        const int warp = tid / WARP, lane = tid % WARP;
        for (int tile = warp; tile < head_tiles * (KEYS / 16); tile += WARPS) {
            const int ht = tile / (KEYS / 16), ct = tile % (KEYS / 16);
            for (int64_t kk = 0; kk < Dp; kk += 16)
                warp_mma_16x16x16(a.q.dtype, cs + ht * 16 * LDC + ct * 16, LDC, qs + ht * 16 * L + kk, (int)L,
                                  ks + ct * 16 * L + kk, (int)L, lane);
        }
    }
    /* the forward's epilogue for one head group: is[key] += w * ReLU(product), heads in order
     * (threads below KEYS) */
    LIG_HD void add_heads(int tid, char *smem, const cu_unit &x, int64_t group, float *is) const {
        if (tid >= KEYS) return;
        const float *cs = products(smem);
        const int64_t h0 = group * heads(), hn = group_heads(group);
        for (int64_t hr = 0; hr < hn; hr++) {
            const float dot = cs[hr * LDC + tid], relu = dot > 0.0f ? dot : 0.0f;
            is[tid] += load_f(a.w.dtype, at_q(a.w, a.p, x.b, x.t, x.g * a.p.G + h0 + hr, 0)) * relu;
        }
    }
};

template <bool Gathered>
LIG_HD tc_tiles<Gathered> tc_tiles_of(const plan_args &a) {
    tc_tiles<Gathered> t;
    t.a = a;
    const int64_t ht = (a.p.G + 15) / 16, most = tc_tiles<Gathered>::MAX_HEAD_TILES;
    t.head_tiles = (int32_t)(ht < most ? ht : most);
    t.pad = 0;
    return t;
}

/* The backward's scores of one chunk: blocks (unit of the chunk, tile of 64 slots). */
struct k_scores_tc {
    enum { THREADS = tc_tiles<true>::THREADS, KEYS = tc_tiles<true>::KEYS, LDC = tc_tiles<true>::LDC };
    struct local {
        int64_t group; /* the head group being multiplied */
    };
    tc_tiles<true> t;
    int64_t unit0; /* the chunk's first unit */
    int64_t tiles; /* slot tiles per unit */
    uint64_t smem_bytes() const { return t.bytes(); }

    LIG_HD int step(int phase, int64_t blk, int tid, char *smem, local &l) const {
        const int64_t c = blk / tiles, kt = blk - c * tiles, G = t.a.p.G, K = t.a.p.K;
        const cu_unit x = unit_decode(t.a.p, unit0 + c);
        if (phase == 0) {
            if (failed(t.a.st)) return -1;
            t.stage_keys(tid, smem, x, kt);
            l.group = 0;
            return 1;
        }
        if (phase == 1) {
            t.stage_queries(tid, smem, x, l.group);
            return 2;
        }
        if (phase == 2) {
            t.multiply(tid, smem);
            return 3;
        }
        /* phase 3: S of this head group */
        const float *cs = t.products(smem);
        const int hn = (int)t.group_heads(l.group), rows = (int)t.tile_rows(x, kt);
        float *out = t.a.score + (c * G + l.group * t.heads()) * K + kt * KEYS; /* head h0, slot 64 kt */
        for (int e = tid; e < hn * KEYS; e += THREADS) {
            const int hr = e / KEYS, r = e - hr * KEYS;
            if (r < rows) out[hr * K + r] = cs[hr * LDC + r];
        }
        return ++l.group < t.groups() ? 1 : -1;
    }
};

LIG_HD k_scores_tc scores_tc(const plan_args &a, int64_t unit0) {
    k_scores_tc f;
    f.t = tc_tiles_of<true>(a);
    f.unit0 = unit0;
    f.tiles = (a.p.K + k_scores_tc::KEYS - 1) / k_scores_tc::KEYS;
    return f;
}

} // namespace ligcu

#endif // LIG_CUDA_KERNELS_SCORES_TC_CUH

/* The scores' products on tensor cores (issue 20, item 3): one block per (unit, tile of 64 key
 * rows), the unit's heads against the tile's key rows, 16 x 16 x 16 tiles by warp_mma_16x16x16
 * with fp32 accumulation, staged in shared memory:
 *   forward  (gathered 0): the tile is keys lo + 64 kt ..; the epilogue adds, per key,
 *            w * ReLU(q . k) over the group's heads in head order: I into score [chunk][width];
 *   backward (gathered 1): the tile is slots 64 kt .. of the unit; a slot that does not count is a
 *            row of zeros (S = 0); S per head into score [chunk][G][K].
 * For 16-bit q and k of one dtype and D up to 256 (the tile-eligible problems, tc_eligible); the
 * others keep the one-thread-per-score bodies. Every product is exact in fp32; on the device the
 * tensor core adds the 16 products of a step in its own order, so the scores can differ from the
 * CPU's d-ordered sums in the last bits (docs/cuda.md); the emulation's tile sums d in order, so
 * there the scores are the CPU's bits. */
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

struct k_scores_tc {
    enum { THREADS = 256, WARPS = THREADS / WARP, KEYS = 64, LDC = KEYS + 4, MAX_HEAD_TILES = 4 };
    struct local {
        int64_t group; /* the head group being multiplied */
    };
    plan_args a;
    int64_t unit0;          /* the chunk's first unit */
    int64_t width;          /* forward: scores per unit (the score row's stride) */
    int64_t tiles;          /* key tiles per unit */
    int32_t gathered;       /* 1: the backward's slots, 0: the forward's key range */
    int32_t head_tiles;     /* 16-head tiles per group: min(4, ceil(G / 16)) */

    LIG_HD int64_t dpad() const { return (a.p.D + 15) / 16 * 16; }
    LIG_HD int64_t ld() const { return dpad() + 8; } /* 16-bit elements per staged row (a multiple of 8) */
    LIG_HD int64_t heads() const { return 16 * (int64_t)head_tiles; }
    /* [KEYS][ld] key rows, [heads][ld] query rows, [heads][LDC] fp32 products, [KEYS] fp32 I */
    LIG_HD uint64_t kbytes() const { return (uint64_t)KEYS * ld() * 2; }
    LIG_HD uint64_t qbytes() const { return (uint64_t)heads() * ld() * 2; }
    LIG_HD uint64_t cbytes() const { return (uint64_t)heads() * LDC * 4; }
    uint64_t smem_bytes() const { return kbytes() + qbytes() + cbytes() + KEYS * 4; }

    /* Key row r of the tile: its key, or -1 for a row of zeros. */
    LIG_HD int64_t tile_key(const cu_unit &x, int64_t kt, int64_t r) const {
        const int64_t j = kt * KEYS + r;
        if (!gathered) return x.lo + j <= x.hi ? x.lo + j : -1;
        if (j >= a.p.K) return -1;
        const int64_t s = load_i(a.idx.dtype, at_q(a.idx, a.p, x.b, x.t, x.g, j));
        return s >= x.lo && s <= x.hi ? s : -1;
    }
    /* Rows of the tile that land in the output: the forward's keys up to hi, the backward's slots. */
    LIG_HD int64_t tile_rows(const cu_unit &x, int64_t kt) const {
        const int64_t n = gathered ? a.p.K : x.hi - x.lo + 1, left = n - kt * KEYS;
        return left < 0 ? 0 : left < (int64_t)KEYS ? left : (int64_t)KEYS;
    }

    LIG_HD int step(int phase, int64_t blk, int tid, char *smem, local &l) const {
        const int64_t c = blk / tiles, kt = blk - c * tiles, G = a.p.G, D = a.p.D, Dp = dpad(), L = ld();
        const cu_unit x = unit_decode(a.p, unit0 + c);
        uint16_t *ks = (uint16_t *)(void *)smem;
        uint16_t *qs = (uint16_t *)(void *)(smem + kbytes());
        float *cs = (float *)(void *)(smem + kbytes() + qbytes());
        float *is = (float *)(void *)(smem + kbytes() + qbytes() + cbytes());
        const int64_t H = heads(), rows = tile_rows(x, kt);
        if (phase == 0) { /* the tile's key rows, zero past D and for rows that are not keys */
            if (failed(a.st) || rows == 0) return -1;
            for (int64_t e = tid; e < KEYS * Dp; e += THREADS) {
                const int64_t r = e / Dp, d = e - r * Dp, s = d < D ? tile_key(x, kt, r) : -1;
                ks[r * L + d] = s >= 0 ? raw16(at_k(a.k, a.p, x.b, s, x.g, d)) : 0;
            }
            if (tid < KEYS) is[tid] = 0.0f;
            l.group = 0;
            return 1;
        }
        if (phase == 1) { /* the group's query rows (zero past G and D) and a cleared product */
            for (int64_t e = tid; e < H * Dp; e += THREADS) {
                const int64_t hr = e / Dp, d = e - hr * Dp, hl = l.group * H + hr;
                qs[hr * L + d] = hl < G && d < D ? raw16(at_q(a.q, a.p, x.b, x.t, x.g * G + hl, d)) : 0;
            }
            for (int64_t e = tid; e < H * LDC; e += THREADS) cs[e] = 0.0f;
            return 2;
        }
        if (phase == 2) { /* warp w: output tiles w, w + WARPS, ..., each the whole d loop */
            const int warp = tid / WARP, lane = tid % WARP;
            for (int tile = warp; tile < head_tiles * (KEYS / 16); tile += WARPS) {
                const int ht = tile / (KEYS / 16), ct = tile % (KEYS / 16);
                for (int64_t kk = 0; kk < Dp; kk += 16)
                    warp_mma_16x16x16(a.q.dtype, cs + ht * 16 * LDC + ct * 16, LDC, qs + ht * 16 * L + kk, (int)L,
                                      ks + ct * 16 * L + kk, (int)L, lane);
            }
            return 3;
        }
        if (phase == 3) { /* the epilogue of this head group */
            const int64_t hl0 = l.group * H, hn = G - hl0 < H ? G - hl0 : H;
            if (!gathered) {
                if (tid < KEYS)
                    for (int64_t hr = 0; hr < hn; hr++) {
                        const float dot = cs[hr * LDC + tid], relu = dot > 0.0f ? dot : 0.0f;
                        is[tid] += load_f(a.w.dtype, at_q(a.w, a.p, x.b, x.t, x.g * G + hl0 + hr, 0)) * relu;
                    }
            } else {
                for (int64_t e = tid; e < hn * KEYS; e += THREADS) {
                    const int64_t hr = e / KEYS, r = e - hr * KEYS;
                    if (r < rows) a.score[(c * G + hl0 + hr) * a.p.K + kt * KEYS + r] = cs[hr * LDC + r];
                }
            }
            l.group++;
            if (l.group * H < G) return 1;
            return gathered ? -1 : 4;
        }
        if (tid < rows) a.score[c * width + kt * KEYS + tid] = is[tid]; /* phase 4, forward */
        return -1;
    }
};

/* The body for one chunk of n units. */
LIG_HD k_scores_tc scores_tc(const plan_args &a, int64_t unit0, int64_t width, bool gathered) {
    k_scores_tc f;
    f.a = a;
    f.unit0 = unit0;
    f.width = width;
    f.gathered = gathered;
    const int64_t n = gathered ? a.p.K : width;
    f.tiles = (n + k_scores_tc::KEYS - 1) / k_scores_tc::KEYS;
    const int64_t ht = (a.p.G + 15) / 16;
    f.head_tiles = (int32_t)(ht < (int64_t)k_scores_tc::MAX_HEAD_TILES ? ht : (int64_t)k_scores_tc::MAX_HEAD_TILES);
    return f;
}

} // namespace ligcu

#endif // LIG_CUDA_KERNELS_SCORES_TC_CUH

/* The forward (docs/contract.md 2.1) as CUDA kernel bodies and its pipeline, run_fwd. */
#ifndef LIG_CUDA_KERNELS_FWD_CUH
#define LIG_CUDA_KERNELS_FWD_CUH

#include "backends/cuda/kernels/scores_tc.cuh"

namespace ligcu {

struct fwd_args : plan_args { /* score: unused (the scores of a tile live in shared memory) */
    cu_view val;
    int32_t has_values, trivial; /* trivial: D or N1 is 0, every score is exactly 0 */
    int32_t tc, pad;             /* 1: the tile's scores on tensor cores (tc_eligible) */
    int64_t cap;                 /* candidates a unit's buffer holds: 2 * max(64, min(K, width)) up to a power of two */
    int64_t slots;               /* candidate buffers: body block u uses buffer u % slots */
    float *cand_score;           /* [slots][2][cap] */
    int64_t *cand_key;           /* [slots][2][cap] */
};

/* Candidate order: higher rank first (a NaN ranks as -inf), ties to the lower key. */
LIG_HD float rank_of(float s) { return is_nan(s) ? neg_inf() : s; }
LIG_HD bool better(float sa, int64_t ka, float sb, int64_t kb) {
    const float ra = rank_of(sa), rb = rank_of(sb);
    return ra > rb || (ra == rb && ka < kb);
}
/* The rank as an unsigned key whose order is the candidate order's on scores: larger is better,
 * a NaN ranks as -inf, -0 as +0 (they tie, as `better` has them). */
LIG_HD uint32_t rank_bits(float s) {
    float r = rank_of(s);
    if (r == 0.0f) r = 0.0f;
    const uint32_t u = f32_bits(r);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* Writes slot j of one (row, key head): the candidate, or -1 / -inf when not selected. */
LIG_HD void write_slot(const fwd_args &a, int64_t b, int64_t row, int64_t g, int64_t j, bool selected, float sc,
                       int64_t ky) {
    char *ip = a.idx.data + (b * a.idx.batch + row * a.idx.row + g * a.idx.head + j * a.idx.dim) * (int64_t)a.idx.esize;
    store_i(a.idx.dtype, ip, selected ? ky : -1);
    if (a.has_values) {
        char *vp = a.val.data + (b * a.val.batch + row * a.val.row + g * a.val.head + j * a.val.dim) * (int64_t)a.val.esize;
        store_f(a.val.dtype, vp, selected ? sc : neg_inf());
    }
}

/* I of key s of unit x in fp32, heads and d in order (the body for problems off the tensor cores). */
LIG_HD float score_simt(const fwd_args &a, const cu_unit &x, int64_t s) {
    float I = 0.0f;
    if (a.trivial) return I;
    for (int64_t hl = 0; hl < a.p.G; hl++) {
        const int64_t h = x.g * a.p.G + hl;
        float dot = 0.0f;
        for (int64_t d = 0; d < a.p.D; d++)
            dot += load_f(a.q.dtype, at_q(a.q, a.p, x.b, x.t, h, d)) * load_f(a.k.dtype, at_k(a.k, a.p, x.b, s, x.g, d));
        const float relu = dot > 0.0f ? dot : 0.0f;
        I += load_f(a.w.dtype, at_q(a.w, a.p, x.b, x.t, h, 0)) * relu;
    }
    return I;
}

/* Scores and top-k of one unit per block, never more than a tile of scores at a time (so
 * that the workspace does not grow with S1 x S2): the unit's keys in tiles of 64, each tile's scores in shared memory (tensor cores, or
 * one thread per key), then a running top-k in a candidate buffer (global memory, one per resident
 * block):
 *   admit   every key of the tile that beats the threshold (the K-th best kept so far, once known)
 *           is appended (positions from a shared counter: the buffer is a set);
 *   compact when the next tile might not fit, and at the end when more than K are held: the K
 *           best of the buffer in the candidate order, by radix select, into the other buffer:
 *           four 8-bit passes over the ranks find T, the K-th best rank, and how many ranked T are
 *           kept (`need`); four passes over the keys ranked T (as offsets from lo) find the need-th
 *           lowest of them; the kept set is every key ranked above T and those ranked T up to that
 *           key. Each pass is a shared histogram (integer atomics) and thread 0's walk of its 256
 *           bins. The K-th best becomes the threshold;
 *   finish  a bitonic sort of what is held, best first (padded to a power of two with a sentinel
 *           worse than any key: a NaN at key INT64_MAX), then the K slots, -1 / -inf past it.
 * The kept set is the first K of the candidate order whatever the thread schedule and tiling. */
struct k_fwd_topk {
    enum { THREADS = tc_tiles<false>::THREADS, KEYS = tc_tiles<false>::KEYS, BINS = 256 };
    enum { P_START = 0, P_TILE = 1, P_QUERIES = 2, P_MULTIPLY = 3, P_HEADS = 4, P_ADMIT = 5, P_NEXT = 6,
           P_COMPACT = 10, P_HIST = 11, P_PICK = 12, P_MOVE = 13, P_SWAP = 14, P_PAD = 20, P_WRITE = 99,
           P_SORT = 100 };
    struct local {
        int64_t tile, group;
        int pass;
    };
    struct state {
        uint32_t hist[BINS];
        float is[KEYS];           /* the tile's scores */
        uint32_t count, active;   /* candidates held, in buffer `active` */
        uint32_t have_threshold, threshold_rank;
        int64_t threshold_key;
        uint32_t prefix, mask, need, T, moved;
    };
    fwd_args a;
    tc_tiles<false> t;
    LIG_HD uint64_t state_bytes() const { return (sizeof(state) + 127) / 128 * 128; }
    uint64_t smem_bytes() const { return state_bytes() + (a.tc ? t.bytes() : 0); }

    LIG_HD static int stages(int64_t n) {
        int l = 0;
        while (((int64_t)1 << l) < n) l++;
        return l * (l + 1) / 2;
    }
    /* The (k, j) of bitonic stage s, stages in network order, for n (a power of two) items: k as
     * log2 in the low byte, j as log2 in the next. */
    LIG_HD static int stage(int s, int64_t n) {
        for (int kk = 1; ((int64_t)1 << kk) <= n; kk++)
            for (int jj = kk - 1; jj >= 0; jj--)
                if (s-- == 0) return kk | jj << 8;
        return 0;
    }
    /* the radix-select value of a candidate in pass p: its rank (0..3), its key's offset (4..7) */
    LIG_HD static uint32_t pass_value(int p, float sc, int64_t ky, int64_t lo) {
        return p < 4 ? rank_bits(sc) : (uint32_t)(ky - lo);
    }

    /* buffer `which` (0 or 1) of body block u's pair; read sh.active only in phases that do not
     * write it */
    LIG_HD float *cand_scores(int64_t u, uint32_t which) const {
        return a.cand_score + ((u % a.slots) * 2 + (int64_t)which) * a.cap;
    }
    LIG_HD int64_t *cand_keys(int64_t u, uint32_t which) const {
        return a.cand_key + ((u % a.slots) * 2 + (int64_t)which) * a.cap;
    }
    LIG_HD int step(int phase, int64_t u, int tid, char *smem, local &l) const {
        state &sh = *(state *)(void *)smem;
        char *tiles_smem = smem + state_bytes();
        const cu_unit x = unit_decode(a.p, u);
        const int64_t n = x.hi >= x.lo ? x.hi - x.lo + 1 : 0, K = a.p.K, ntiles = (n + KEYS - 1) / KEYS;

        if (phase == P_START) {
            if (failed(a.st)) return -1;
            if (tid == 0) {
                sh.count = sh.active = sh.have_threshold = 0;
                sh.threshold_rank = 0;
                sh.threshold_key = 0;
            }
            l.tile = 0;
            if (K == 0) return P_WRITE;
            return ntiles > 0 ? P_TILE : P_PAD;
        }
        /* ---- one tile's scores into sh.is */
        if (phase == P_TILE) {
            if (!a.tc) {
                if (tid < KEYS) {
                    const int64_t s = x.lo + l.tile * KEYS + tid;
                    sh.is[tid] = s <= x.hi ? score_simt(a, x, s) : 0.0f;
                }
                return P_ADMIT;
            }
            t.stage_keys(tid, tiles_smem, x, l.tile);
            if (tid < KEYS) sh.is[tid] = 0.0f;
            l.group = 0;
            return P_QUERIES;
        }
        if (phase == P_QUERIES) {
            t.stage_queries(tid, tiles_smem, x, l.group);
            return P_MULTIPLY;
        }
        if (phase == P_MULTIPLY) {
            t.multiply(tid, tiles_smem);
            return P_HEADS;
        }
        if (phase == P_HEADS) {
            t.add_heads(tid, tiles_smem, x, l.group, sh.is);
            return ++l.group < t.groups() ? P_QUERIES : P_ADMIT;
        }
        /* ---- the running top-k */
        if (phase == P_ADMIT) {
            if (tid < KEYS) {
                const int64_t s = x.lo + l.tile * KEYS + tid;
                const float v = sh.is[tid];
                const uint32_t r = rank_bits(v);
                const bool beats = !sh.have_threshold || r > sh.threshold_rank ||
                                   (r == sh.threshold_rank && s < sh.threshold_key);
                if (s <= x.hi && beats) {
                    const uint32_t at = atomic_add_u32(&sh.count, 1);
                    cand_scores(u, sh.active)[at] = v;
                    cand_keys(u, sh.active)[at] = s;
                }
            }
            return P_NEXT;
        }
        if (phase == P_NEXT) {
            if (++l.tile < ntiles) return (int64_t)sh.count + KEYS > a.cap ? P_COMPACT : P_TILE;
            return (int64_t)sh.count > K ? P_COMPACT : P_PAD;
        }
        if (phase == P_COMPACT) {
            if (tid < BINS) sh.hist[tid] = 0;
            if (tid == 0) {
                sh.prefix = sh.mask = 0;
                sh.need = (uint32_t)K;
                sh.moved = 0;
            }
            l.pass = 0;
            return P_HIST;
        }
        if (phase == P_HIST) {
            const int p = l.pass, shift = 24 - 8 * (p % 4);
            const float *cur_s = cand_scores(u, sh.active);
            const int64_t *cur_k = cand_keys(u, sh.active);
            for (int64_t e = tid; e < (int64_t)sh.count; e += THREADS) {
                if (p >= 4 && rank_bits(cur_s[e]) != sh.T) continue; /* the key passes: only ranks T */
                const uint32_t v = pass_value(p, cur_s[e], cur_k[e], x.lo);
                if ((v & sh.mask) == sh.prefix) atomic_add_u32(&sh.hist[(v >> shift) & 0xffu], 1);
            }
            return P_PICK;
        }
        if (phase == P_PICK) {
            const int p = l.pass, shift = 24 - 8 * (p % 4);
            if (tid == 0) { /* the digit holding the need-th: from the top for ranks, the bottom for keys */
                uint32_t before = 0;
                for (int i = 0; i < BINS; i++) {
                    const int d = p < 4 ? BINS - 1 - i : i;
                    if (before + sh.hist[d] >= sh.need) {
                        sh.prefix |= (uint32_t)d << shift;
                        sh.mask |= 0xffu << shift;
                        sh.need -= before;
                        break;
                    }
                    before += sh.hist[d];
                }
                for (int d = 0; d < BINS; d++) sh.hist[d] = 0;
                if (p == 3) { /* T found; the key passes start afresh over the keys ranked T */
                    sh.T = sh.prefix;
                    sh.prefix = sh.mask = 0;
                }
            }
            return ++l.pass < 8 ? P_HIST : P_MOVE;
        }
        if (phase == P_MOVE) { /* keep ranks above T, and ranks T up to the need-th lowest key (prefix) */
            const float *cur_s = cand_scores(u, sh.active);
            const int64_t *cur_k = cand_keys(u, sh.active);
            float *oth_s = cand_scores(u, sh.active ^ 1u);
            int64_t *oth_k = cand_keys(u, sh.active ^ 1u);
            for (int64_t e = tid; e < (int64_t)sh.count; e += THREADS) {
                const uint32_t r = rank_bits(cur_s[e]);
                if (r > sh.T || (r == sh.T && (uint32_t)(cur_k[e] - x.lo) <= sh.prefix)) {
                    const uint32_t at = atomic_add_u32(&sh.moved, 1);
                    oth_s[at] = cur_s[e];
                    oth_k[at] = cur_k[e];
                }
            }
            return P_SWAP;
        }
        if (phase == P_SWAP) {
            if (tid == 0) {
                sh.active ^= 1u;
                sh.count = sh.moved; /* K */
                sh.have_threshold = 1;
                sh.threshold_rank = sh.T;
                sh.threshold_key = x.lo + (int64_t)sh.prefix;
            }
            return l.tile < ntiles ? P_TILE : P_PAD;
        }
        /* ---- the finish: sort what is held, write the slots */
        const int64_t m = (int64_t)sh.count; /* at most K */
        float *cur_s = cand_scores(u, sh.active);
        int64_t *cur_k = cand_keys(u, sh.active);
        int64_t n2 = 1;
        while (n2 < m) n2 <<= 1;
        if (phase == P_PAD) {
            for (int64_t i = m + tid; i < n2; i += THREADS) {
                cur_s[i] = bits_f32(0x7fc00000u);
                cur_k[i] = INT64_MAX;
            }
            return stages(n2) > 0 ? P_SORT : P_WRITE;
        }
        if (phase >= P_SORT) {
            const int s = phase - P_SORT;
            const int kj = stage(s, n2);
            const int64_t k = (int64_t)1 << (kj & 0xff), j = (int64_t)1 << (kj >> 8);
            for (int64_t q = tid; q < n2 / 2; q += THREADS) { /* i: q with a 0 inserted at bit log2 j */
                const int64_t i = ((q & ~(j - 1)) << 1) | (q & (j - 1)), o = i + j;
                const bool best_first = (i & k) == 0;
                if (best_first ? better(cur_s[o], cur_k[o], cur_s[i], cur_k[i])
                               : better(cur_s[i], cur_k[i], cur_s[o], cur_k[o])) {
                    const float ts = cur_s[i];
                    cur_s[i] = cur_s[o];
                    cur_s[o] = ts;
                    swap_i64(cur_k, i, o);
                }
            }
            return s + 1 < stages(n2) ? phase + 1 : P_WRITE;
        }
        /* P_WRITE */
        const int64_t row = tensor_row(a.p, x.b, x.t);
        for (int64_t j = tid; j < K; j += THREADS)
            write_slot(a, x.b, row, x.g, j, j < m, j < m ? cur_s[j] : 0.0f, j < m ? cur_k[j] : -1);
        return -1;
    }
};

/* The rows no batch owns validly (past a batch's length, past the last TND end): -1 / -inf, one
 * thread per (query-tensor row, key head). */
struct k_fwd_invalid_rows {
    fwd_args a;
    LIG_HD void operator()(int64_t i) const {
        const int64_t g = i % a.p.N2, r = i / a.p.N2;
        int64_t b, row;
        if (!invalid_row(a.p, r, &b, &row)) return;
        for (int64_t j = 0; j < a.p.K; j++) write_slot(a, b, row, g, j, false, 0.0f, -1);
    }
};

/* Every unit's scores and top-k in one launch, a.slots candidate buffers: the grid holds at most
 * a.slots blocks, so blocks running at once never share one (body block u uses u % slots; the
 * device runs u and u + grid on the same CUDA block, one after the other). */
template <class X>
void run_fwd(X &x, const fwd_args &a, const int64_t *host_bt) {
    run_prologue(x, a.st, a.p, host_bt);
    k_fwd_topk f;
    f.a = a;
    f.t = tc_tiles_of<false>(a);
    x.launch_blocks(a.p.units, f, a.slots);
    x.launch(a.p.q_rows * a.p.N2, after_checks(a.st, k_fwd_invalid_rows{a}));
}

} // namespace ligcu

#endif // LIG_CUDA_KERNELS_FWD_CUH

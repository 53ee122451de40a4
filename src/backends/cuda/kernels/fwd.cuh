/* The forward (docs/contract.md 2.1) as CUDA kernel bodies and its pipeline, run_fwd. */
#ifndef LIG_CUDA_KERNELS_FWD_CUH
#define LIG_CUDA_KERNELS_FWD_CUH

#include "backends/cuda/kernels/scores_tc.cuh"

namespace ligcu {


struct fwd_args : plan_args { /* score: [chunk][width], the score of key lo + i of unit unit0 + c */
    cu_view val;
    int32_t has_values, trivial; /* trivial: D or N1 is 0, every score is exactly 0 */
    int64_t width;               /* scores per unit: the longest batch's key count */
    int64_t cap;                 /* candidates kept per unit: min(K, width) rounded up to a power of two */
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
/* The rank as an unsigned key whose order is the candidate order's on scores: larger is better,
 * a NaN ranks as -inf, -0 as +0 (they tie, as `better` has them). */
LIG_HD uint32_t rank_bits(float s) {
    float r = rank_of(s);
    if (r == 0.0f) r = 0.0f;
    const uint32_t u = f32_bits(r);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* Writes slot j of one (row, key head): the candidate, or -1 / -inf past the n selected. */
LIG_HD void write_slot(const fwd_args &a, int64_t b, int64_t row, int64_t g, int64_t j, bool selected, float sc,
                       int64_t ky) {
    char *ip = a.idx.data + (b * a.idx.batch + row * a.idx.row + g * a.idx.head + j * a.idx.dim) * (int64_t)a.idx.esize;
    store_i(a.idx.dtype, ip, selected ? ky : -1);
    if (a.has_values) {
        char *vp = a.val.data + (b * a.val.batch + row * a.val.row + g * a.val.head + j * a.val.dim) * (int64_t)a.val.esize;
        store_f(a.val.dtype, vp, selected ? sc : neg_inf());
    }
}

/* Top-k and the writes, one block per unit of the chunk, no thread walking more than its share:
 *   radix select (4 passes of 8 bits, most significant first): a shared histogram of the rank
 *     bits of the keys still in play, from which thread 0 picks the digit holding the K-th best;
 *     after the passes T = the K-th best rank, need = how many keys ranked T are kept;
 *   gather: every key ranked above T (positions by a shared counter: their order is fixed by the
 *     sort below), then the `need` lowest keys ranked T (each thread a contiguous slice of the keys;
 *     a block scan of the slices' counts of T gives each its first position), so the selected set
 *     is the candidate order's first K, ties to the lower key;
 *   bitonic sort of the K candidates (padded to a power of two with a sentinel worse than any key),
 *     best first, then the K slots, -1 / -inf past the selected ones.
 * A unit with at most K visible keys skips the select. The candidates live in [chunk][cap]. */
struct k_fwd_select {
    enum { THREADS = 512, LOG_THREADS = 9, BINS = 256 };
    enum { P_START = 0, P_HIST = 1, P_PICK = 2, P_COUNT_T = 3, P_SCAN = 10, P_GATHER = 30, P_COPY = 31,
           P_WRITE = 99, P_SORT = 100 };
    struct local {
        int pass;
        uint32_t ties; /* keys ranked T in this thread's slice */
    };
    struct shared {
        uint32_t hist[BINS];
        uint32_t scan[2][THREADS];
        uint32_t prefix, mask, need, above; /* the select's state; above: keys ranked above T placed */
    };
    fwd_args a;
    uint64_t smem_bytes() const { return (sizeof(shared) + 15) / 16 * 16; }

    /* The (k, j) of bitonic stage s, stages in network order, for n (a power of two) items. */
    LIG_HD static void stage(int s, int64_t n, int64_t *k, int64_t *j) {
        for (int64_t kk = 2; kk <= n; kk <<= 1)
            for (int64_t jj = kk >> 1; jj > 0; jj >>= 1)
                if (s-- == 0) {
                    *k = kk;
                    *j = jj;
                    return;
                }
        *k = *j = 0;
    }
    LIG_HD static int stages(int64_t n) {
        int l = 0;
        while (((int64_t)1 << l) < n) l++;
        return l * (l + 1) / 2;
    }
    LIG_HD int after_gather(int64_t n2) const { return stages(n2) > 0 ? P_SORT : P_WRITE; }

    LIG_HD int step(int phase, int64_t c, int tid, char *smem, local &l) const {
        shared &sh = *(shared *)(void *)smem;
        const cu_unit x = unit_decode(a.p, a.unit0 + c);
        const float *all = a.score + c * a.width;
        float *sc = a.kept_score + c * a.cap;
        int64_t *ky = a.kept_key + c * a.cap;
        const int64_t n = x.hi >= x.lo ? x.hi - x.lo + 1 : 0, K = a.p.K;
        const int64_t m = n < K ? n : K; /* selected */
        int64_t n2 = 1;
        while (n2 < m) n2 <<= 1;
        const int64_t per = (n + THREADS - 1) / THREADS, lo = tid * per < n ? tid * per : n;
        const int64_t hi = lo + per < n ? lo + per : n; /* this thread's slice [lo, hi) */
        if (phase == P_START) {
            if (failed(a.st)) return -1;
            if (n <= K || K == 0) return P_COPY;
            if (tid < BINS) sh.hist[tid] = 0;
            if (tid == 0) {
                sh.prefix = sh.mask = sh.above = 0;
                sh.need = (uint32_t)K;
            }
            return P_HIST;
        }
        if (phase == P_HIST) {
            const int shift = 24 - 8 * l.pass;
            for (int64_t i = tid; i < n; i += THREADS) { /* coalesced */
                const uint32_t u = rank_bits(all[i]);
                if ((u & sh.mask) == sh.prefix) atomic_add_u32(&sh.hist[(u >> shift) & 0xffu], 1);
            }
            return P_PICK;
        }
        if (phase == P_PICK) {
            const int shift = 24 - 8 * l.pass;
            if (tid == 0) {
                uint32_t above = 0;
                for (int d = BINS - 1; d >= 0; d--) {
                    if (above + sh.hist[d] >= sh.need) {
                        sh.prefix |= (uint32_t)d << shift;
                        sh.mask |= 0xffu << shift;
                        sh.need -= above;
                        break;
                    }
                    above += sh.hist[d];
                }
                for (int d = 0; d < BINS; d++) sh.hist[d] = 0;
            }
            return ++l.pass < 4 ? P_HIST : P_COUNT_T;
        }
        if (phase == P_COUNT_T) {
            uint32_t t = 0;
            for (int64_t i = lo; i < hi; i++) t += rank_bits(all[i]) == sh.prefix;
            l.ties = t;
            sh.scan[0][tid] = t;
            return P_SCAN;
        }
        if (phase >= P_SCAN && phase < P_SCAN + LOG_THREADS) { /* inclusive scan, one level per phase */
            const int level = phase - P_SCAN, off = 1 << level;
            const uint32_t *src = sh.scan[level & 1];
            sh.scan[(level + 1) & 1][tid] = src[tid] + (tid >= off ? src[tid - off] : 0);
            return phase + 1 < P_SCAN + LOG_THREADS ? phase + 1 : P_GATHER;
        }
        if (phase == P_GATHER) {
            const uint32_t T = sh.prefix, need = sh.need;
            uint32_t r = sh.scan[LOG_THREADS & 1][tid] - l.ties; /* ties in the slices before this one */
            for (int64_t i = lo; i < hi; i++) {
                const uint32_t u = rank_bits(all[i]);
                int64_t at = -1;
                if (u > T) at = atomic_add_u32(&sh.above, 1);
                else if (u == T && r < need) at = K - need + r++;
                if (at >= 0) {
                    sc[at] = all[i];
                    ky[at] = x.lo + i;
                }
            }
            for (int64_t i = m + tid; i < n2; i += THREADS) { /* no padding: m = K <= n2 */
                sc[i] = bits_f32(0x7fc00000u);
                ky[i] = INT64_MAX;
            }
            return after_gather(n2);
        }
        if (phase == P_COPY) {
            for (int64_t i = tid; i < n2; i += THREADS) {
                const bool real = i < m;
                sc[i] = real ? all[i] : bits_f32(0x7fc00000u); /* the sentinel: a NaN at the last key */
                ky[i] = real ? x.lo + i : INT64_MAX;
            }
            return after_gather(n2);
        }
        if (phase >= P_SORT) {
            const int s = phase - P_SORT;
            int64_t k, j;
            stage(s, n2, &k, &j);
            for (int64_t q = tid; q < n2 / 2; q += THREADS) {
                const int64_t i = (q / j) * 2 * j + q % j, o = i + j;
                const bool best_first = (i & k) == 0;
                if (best_first ? better(sc[o], ky[o], sc[i], ky[i]) : better(sc[i], ky[i], sc[o], ky[o])) {
                    const float ts = sc[i];
                    sc[i] = sc[o];
                    sc[o] = ts;
                    swap_i64(ky, i, o);
                }
            }
            return s + 1 < stages(n2) ? phase + 1 : P_WRITE;
        }
        /* P_WRITE */
        const int64_t row = tensor_row(a.p, x.b, x.t);
        for (int64_t j = tid; j < K; j += THREADS) write_slot(a, x.b, row, x.g, j, j < m, j < m ? sc[j] : 0.0f, j < m ? ky[j] : -1);
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
        if (row_decode(a.p, r, &b, &row)) return;
        invalid_row(a.p, r, &b, &row);
        for (int64_t j = 0; j < a.p.K; j++) write_slot(a, b, row, g, j, false, 0.0f, -1);
    }
};

template <class X>
void run_fwd(X &x, const fwd_args &a, const int64_t *host_bt) {
    run_prologue(x, a.st, a.p, host_bt);
    /* the units in chunks of a.chunk, in order: the scores and candidates of one chunk at a time */
    fwd_args c = a;
    for (c.unit0 = 0; c.unit0 < a.p.units; c.unit0 += a.chunk) {
        const int64_t n = a.p.units - c.unit0 < a.chunk ? a.p.units - c.unit0 : a.chunk;
        if (tc_eligible(c) && !c.trivial) {
            const k_scores_tc f = scores_tc(c, c.unit0, a.width, false);
            x.launch_blocks(n * f.tiles, f);
        } else {
            x.launch(n * a.width, after_checks(a.st, k_fwd_scores{c}));
        }
        x.launch_blocks(n, k_fwd_select{c});
    }
    x.launch(a.p.q_rows * a.p.N2, after_checks(a.st, k_fwd_invalid_rows{a}));
}

} // namespace ligcu

#endif // LIG_CUDA_KERNELS_FWD_CUH

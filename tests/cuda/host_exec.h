/* The host executor of the CUDA pipelines (the device's is src/backends/cuda/device_exec.cuh): runs
 * every flat launch's threads and every block launch's blocks and threads in one of three orders
 * (ascending, descending, a seeded shuffle per launch). A block runs phase by phase: every thread
 * finishes a phase before any starts the next, as at a barrier (kernels/block.cuh). It counts the
 * phases whose threads disagreed on the next phase (a barrier not every thread reaches on the
 * device) and the blocks that wrote past their shared memory (a guard after it). */
#ifndef LIG_TESTS_CUDA_HOST_EXEC_H
#define LIG_TESTS_CUDA_HOST_EXEC_H

#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <vector>

struct rng {
    uint64_t s;
    uint64_t next() {
        s += 0x9e3779b97f4a7c15ull;
        uint64_t z = s;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    int64_t range(int64_t lo, int64_t hi) { return lo + (int64_t)(next() % (uint64_t)(hi - lo + 1)); } /* inclusive */
    double uniform() { return (double)(next() >> 11) * 0x1p-53; }
};

struct host_exec {
    int order; /* 0 ascending, 1 descending, 2 shuffled (seeded per launch) */
    uint64_t seed;
    int64_t launches = 0, divergent = 0, smem_overruns = 0;
    std::vector<int64_t> perm;
    host_exec(int order_, uint64_t seed_) : order(order_), seed(seed_) {}

    /* perm = 0 .. n-1 in this executor's order for the current launch */
    void make_order(int64_t n) {
        perm.resize((size_t)n);
        for (int64_t i = 0; i < n; i++) perm[(size_t)i] = order == 1 ? n - 1 - i : i;
        if (order != 2) return;
        rng r = {seed * 1315423911ull + (uint64_t)launches};
        for (int64_t i = n - 1; i > 0; i--) {
            const int64_t j = r.range(0, i);
            const int64_t t = perm[(size_t)i];
            perm[(size_t)i] = perm[(size_t)j];
            perm[(size_t)j] = t;
        }
    }
    template <class F>
    void launch(int64_t n, const F &f) {
        if (n <= 0) return;
        launches++;
        make_order(n);
        for (int64_t i = 0; i < n; i++) f(perm[(size_t)i]);
    }
    /* max_grid: the device's bound on CUDA blocks at once; here the blocks run one at a time */
    template <class F>
    void launch_blocks(int64_t nblocks, const F &f, int64_t max_grid = 0) {
        (void)max_grid;
        if (nblocks <= 0) return;
        launches++;
        enum { GUARD = 64 };
        const size_t bytes = (size_t)f.smem_bytes();
        make_order(nblocks);
        const std::vector<int64_t> blocks = perm;
        make_order(F::THREADS);
        const std::vector<int64_t> threads = perm;
        std::vector<unsigned char> smem(bytes + GUARD);
        std::vector<typename F::local> locals((size_t)F::THREADS);
        for (int64_t blk : blocks) {
            memset(smem.data(), 0xa5, smem.size()); /* garbage: a body must not rely on zeros */
            for (auto &l : locals) l = typename F::local();
            for (int phase = 0; phase >= 0;) {
                int next = 0;
                bool first = true;
                for (int64_t t : threads) {
                    const int n = f.step(phase, blk, (int)t, (char *)smem.data(), locals[(size_t)t]);
                    if (!first && n != next) divergent++;
                    next = n;
                    first = false;
                }
                phase = next;
            }
            for (size_t i = bytes; i < smem.size(); i++)
                if (smem[i] != 0xa5) {
                    smem_overruns++;
                    break;
                }
        }
    }
    /* The device's CUB radix sort, as a stable sort by the low `bits` bits of the keys. The result
     * goes where CUB's onesweep would leave it (the buffer of the parity of its 8-bit passes), so a
     * pipeline that ignores the returned buffer fails; the other buffer is left as garbage. Writes
     * the whole temporary storage, as CUB may (the workspace's bounds are checked under ASan). */
    int64_t sorts = 0;
    int sort_pairs(uint64_t *const keys[2], uint32_t *const pos[2], int64_t n, int bits, void *temp,
                   uint64_t temp_bytes) {
        if (n <= 0) return 0;
        sorts++;
        memset(temp, 0x5a, (size_t)temp_bytes);
        const uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
        std::vector<int64_t> order((size_t)n);
        for (int64_t i = 0; i < n; i++) order[(size_t)i] = i;
        std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
            return (keys[0][x] & mask) < (keys[0][y] & mask);
        });
        const int out = ((bits + 7) / 8) & 1;
        std::vector<uint64_t> k((size_t)n);
        std::vector<uint32_t> v((size_t)n);
        for (int64_t i = 0; i < n; i++) {
            k[(size_t)i] = keys[0][order[(size_t)i]];
            v[(size_t)i] = pos[0][order[(size_t)i]];
        }
        if (out == 1) { /* the input buffers become garbage, as CUB may leave them */
            memset(keys[0], 0xa5, (size_t)n * 8);
            memset(pos[0], 0xa5, (size_t)n * 4);
        }
        memcpy(keys[out], k.data(), (size_t)n * 8);
        memcpy(pos[out], v.data(), (size_t)n * 4);
        return out;
    }
};

#endif

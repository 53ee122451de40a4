/*
 * Host emulation of the CUDA backend (docs/cuda.md, "What has been verified where"). Built by
 * nvcc as a host program: it runs the very __host__ __device__ kernel bodies and pipelines of
 * src/backends/cuda/cuda_kernels.cuh, with a host loop over each launch's threads in three orders
 * (ascending, descending, a seeded shuffle per launch), on host memory laid out as the device
 * workspace is (cuda_plan.cuh), on the problem lig's own phase 1 builds. It compares against the
 * CPU backend through the public API:
 *   - grid data (multiples of 1/8: every fp32 sum is exact) must give the CPU's outputs bit for bit,
 *     whole buffers compared (gaps between strided elements must keep their poison);
 *   - continuous data: deterministic backward bitwise identical across orders, every mode within
 *     fp32 rounding of the CPU;
 *   - bad indices / KL targets: the status in the workspace head gives the CPU's message and no
 *     output byte changes;
 * over layouts, sparse modes, dtypes, index dtypes, G, N2, D, K (K > S too), -1 padding, masked
 * slots (NaN dy there, never read), strides with gaps, sequence lengths, empty batches and
 * empty problems. Exit 0 when everything matched.
 */
/*
 * Compiled with -DLIG_CUDA_DEVICE_TEST=1 the same program is lig-cuda-device-tests: every case then
 * runs on the GPU through the public API (CUDA tensors, phase 2 on a stream, the status read with
 * lig_workspace_status), three runs per case (the third captured into a CUDA graph, which
 * fails if phase 2 synchronises or allocates), outputs poisoned before each run and compared with
 * the CPU backend as above, and the deterministic runs compared with each other (rerun + memcmp).
 * Without a device it prints "SKIPPED cuda-device-matrix: no CUDA device" and exits 77.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "backends/cuda/cuda_plan.cuh"

extern "C" {
#include "api/executor.h"
#include "backends/cuda/cuda_backend.h"
#include "lig.h"
}

using namespace ligcu;

#include "host_exec.h"

#ifdef LIG_CUDA_DEVICE_TEST
#include "cuda_check.h"
#endif

static int g_failures = 0, g_checks = 0, g_bad_planted = 0;
#define EXPECT(cond, ...)                                  \
    do {                                                   \
        g_checks++;                                        \
        if (!(cond)) {                                     \
            g_failures++;                                  \
            if (g_failures <= 30) {                        \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
                fprintf(stderr, __VA_ARGS__);              \
                fputc('\n', stderr);                       \
            }                                              \
        }                                                  \
    } while (0)

/* ---- strided buffers ------------------------------------------------------------------------- */
static const unsigned char POISON_OUT = 0x7b, POISON_IN = 0xff; /* outputs: a sentinel; inputs: NaN / -1 */

struct buf {
    std::vector<unsigned char> mem;
    lig_dtype dt;
    int nd;
    int64_t shape[8], strides[8];
    size_t es;
    lig_tensor *t;
    buf() : dt(LIG_FLOAT32), nd(0), es(4), t(0) {}
    ~buf() { lig_destroy_tensor(t); }
    buf(const buf &) = delete;
    buf &operator=(const buf &) = delete;
    void make(lig_dtype d, int n, const int64_t *sh, int64_t istride, int64_t pad, unsigned char poison) {
        dt = d;
        nd = n;
        es = d == LIG_FLOAT32 || d == LIG_INT32 ? 4 : d == LIG_INT64 ? 8 : 2;
        int64_t st = istride, numel = 1;
        for (int i = n - 1; i >= 0; i--) {
            shape[i] = sh[i];
            strides[i] = st;
            st = st * (sh[i] > 0 ? sh[i] : 1) + (i == n - 1 ? pad : 0);
            numel *= sh[i];
        }
        size_t span = 1;
        if (numel > 0)
            for (int i = 0; i < n; i++) span += (size_t)((shape[i] - 1) * strides[i]);
        mem.assign(span * es + 8, poison);
        lig_destroy_tensor(t);
        t = lig_create_tensor(numel > 0 ? mem.data() : NULL, d, n, shape, strides);
        if (!t) {
            fprintf(stderr, "lig_create_tensor: %s\n", lig_get_last_error());
            exit(2);
        }
    }
    char *at(const int64_t *i) {
        int64_t off = 0;
        for (int k = 0; k < nd; k++) off += i[k] * strides[k];
        return (char *)mem.data() + off * (int64_t)es;
    }
    void set_f(const int64_t *i, double v) { store_f((int)dt, at(i), (float)v); }
    void set_i(const int64_t *i, int64_t v) { store_i((int)dt, at(i), v); }
    double get_f(const int64_t *i) { return load_f((int)dt, at(i)); }
};

#ifdef LIG_CUDA_DEVICE_TEST
/* Device copies of host buffers: while alive, each buffer's tensor describes its device copy (same
 * shape and strides); fetch() copies device bytes back (gaps included); the destructor restores. */
struct mirror_set {
    struct item {
        buf *b;
        void *dev;
        lig_tensor *host_t;
    };
    std::vector<item> items;
    void add(buf &b) {
        void *d = 0;
        CUDA_OK(cudaMalloc(&d, b.mem.size()));
        CUDA_OK(cudaMemcpy(d, b.mem.data(), b.mem.size(), cudaMemcpyHostToDevice));
        int dev = 0;
        CUDA_OK(cudaGetDevice(&dev));
        item it = {&b, d, b.t};
        int64_t numel = 1;
        for (int k = 0; k < b.nd; k++) numel *= b.shape[k];
        b.t = lig_create_tensor_on(numel > 0 ? d : NULL, b.dt, b.nd, b.shape, b.strides, LIG_DEVICE_CUDA,
                                   dev);
        if (!b.t) {
            fprintf(stderr, "lig_create_tensor_on: %s\n", lig_get_last_error());
            exit(2);
        }
        items.push_back(it);
    }
    void fetch(buf &b) {
        for (item &it : items)
            if (it.b == &b) CUDA_OK(cudaMemcpy(b.mem.data(), it.dev, b.mem.size(), cudaMemcpyDeviceToHost));
    }
    ~mirror_set() {
        for (item &it : items) {
            lig_destroy_tensor(it.b->t);
            it.b->t = it.host_t;
            cudaFree(it.dev);
        }
    }
};

/* Phase 2 on a stream (order 2: captured into a graph and launched), then the status. */
template <class Phase2>
static lig_status device_phase2(uint64_t ws, int order, Phase2 phase2, std::string *msg) {
    void *dws = 0;
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUDA_OK(cudaMalloc(&dws, ws + 1));
    CUDA_OK(cudaMemset(dws, 0xa5, ws + 1));
    void *at = (char *)dws + 1; /* a misaligned caller pointer */
    lig_status st;
    if (order == 2) {
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        st = phase2(at, ws, (void *)stream);
        const cudaError_t ce = cudaStreamEndCapture(stream, &graph);
        EXPECT(ce == cudaSuccess, "phase 2 could not be captured into a CUDA graph: %s", cudaGetErrorString(ce));
        if (ce == cudaSuccess) {
            CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
            CUDA_OK(cudaGraphLaunch(exec, stream));
            CUDA_OK(cudaStreamSynchronize(stream));
            cudaGraphExecDestroy(exec);
            cudaGraphDestroy(graph);
        }
    } else {
        st = phase2(at, ws, (void *)stream);
    }
    if (st == LIG_SUCCESS) st = lig_workspace_status(LIG_DEVICE_CUDA, at, (void *)stream);
    *msg = st == LIG_SUCCESS ? "" : lig_get_last_error();
    CUDA_OK(cudaStreamSynchronize(stream));
    CUDA_OK(cudaGetLastError());
    cudaFree(dws);
    cudaStreamDestroy(stream);
    return st;
}
#endif

/* Logical element of a tensor with rows in front: idx = {b, t, head, d} (BSND) / {row, head, d} (TND),
 * with some axes absent (short forms, weights). */
static int64_t *ix(int64_t *out, bool tnd, int64_t b, int64_t t, int64_t head, int64_t d, bool has_head,
                   bool has_d) {
    int n = 0;
    if (!tnd) out[n++] = b;
    out[n++] = t;
    if (has_head) out[n++] = head;
    if (has_d) out[n++] = d;
    return out;
}

/* ---- a backward / forward case -------------------------------------------------------------- */
struct gcase {
    std::string name;
    bool tnd;
    int mode;
    int64_t pre, next;
    lig_dtype dt, idt, dwdt, valdt;
    int64_t B, S1, S2, N1, N2, D, K;
    std::vector<int64_t> aq, ak; /* BSND: lengths (empty: none); TND: cumulative ends */
    int64_t istride, pad;
    bool short_form, grid, det;
    bool fine; /* grid data in steps of 1/16 up to 31/16 (5 bits): the gate's w * dy needs two bf16 parts */
    int bad; /* backward: 1 = one index out of range, 2 = one index < -1 */
};

struct geo {
    std::vector<int64_t> lq, lk, qb, kb;
    int64_t B, qrows, krows;
};
static geo geometry(const gcase &c) {
    geo g;
    g.B = c.tnd ? (int64_t)c.aq.size() : c.B;
    for (int64_t b = 0; b < g.B; b++) {
        if (c.tnd) {
            g.qb.push_back(b ? c.aq[b - 1] : 0);
            g.kb.push_back(b ? c.ak[b - 1] : 0);
            g.lq.push_back(c.aq[b] - g.qb[b]);
            g.lk.push_back(c.ak[b] - g.kb[b]);
        } else {
            g.qb.push_back(0);
            g.kb.push_back(0);
            g.lq.push_back(c.aq.empty() ? c.S1 : c.aq[b]);
            g.lk.push_back(c.ak.empty() ? c.S2 : c.ak[b]);
        }
    }
    g.qrows = c.tnd ? c.S1 : c.B * c.S1;
    g.krows = c.tnd ? c.S2 : c.B * c.S2;
    return g;
}
static bool visible(const gcase &c, int64_t lq, int64_t lk, int64_t t, int64_t s) {
    if (s < 0 || s >= lk) return false;
    if (c.mode == 0) {
        const bool lo_ok = c.pre == INT64_MAX || s >= t - c.pre;
        const bool hi_ok = c.next == INT64_MAX || s <= t + c.next;
        return lo_ok && hi_ok;
    }
    const int64_t diag = lk - lq + t;
    return s <= diag && (c.pre == INT64_MAX || s >= diag - c.pre);
}
static double sample(rng &r, bool grid, bool fine = false) {
    if (grid && fine) return (double)r.range(-31, 31) / 16.0;
    return grid ? (double)r.range(-8, 8) / 8.0 : 2.0 * r.uniform() - 1.0;
}

/* Inputs of a case, filled once; outputs are made per run. */
struct inputs {
    buf q, k, w, dy, idx, aq, ak;
};

static void fill_qkw(const gcase &c, const geo &g, rng &r, inputs &in) {
    int64_t e[4];
    const int64_t qsh4[4] = {c.B, c.S1, c.N1, c.D}, qsh3[3] = {c.S1, c.N1, c.D};
    const int64_t ksh4[4] = {c.B, c.S2, c.N2, c.D}, ksh3[3] = {c.S2, c.N2, c.D};
    const int64_t wsh3[3] = {c.B, c.S1, c.N1}, wsh2[2] = {c.S1, c.N1};
    in.q.make(c.dt, c.tnd ? 3 : 4, c.tnd ? qsh3 : qsh4, c.istride, c.pad, POISON_IN);
    in.k.make(c.dt, c.tnd ? 3 : 4, c.tnd ? ksh3 : ksh4, c.istride, c.pad, POISON_IN);
    in.w.make(c.dt, c.tnd ? 2 : 3, c.tnd ? wsh2 : wsh3, c.istride, c.pad, POISON_IN);
    const int64_t nb = c.tnd ? 1 : c.B;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t t = 0; t < c.S1; t++)
            for (int64_t h = 0; h < c.N1; h++) {
                in.w.set_f(ix(e, c.tnd, b, t, h, 0, true, false), sample(r, c.grid, c.fine));
                for (int64_t d = 0; d < c.D; d++) in.q.set_f(ix(e, c.tnd, b, t, h, d, true, true), sample(r, c.grid, c.fine));
            }
    for (int64_t b = 0; b < nb; b++)
        for (int64_t s = 0; s < c.S2; s++)
            for (int64_t h = 0; h < c.N2; h++)
                for (int64_t d = 0; d < c.D; d++) in.k.set_f(ix(e, c.tnd, b, s, h, d, true, true), sample(r, c.grid, c.fine));
    if (!c.aq.empty()) {
        const int64_t n[1] = {(int64_t)c.aq.size()};
        in.aq.make(LIG_INT64, 1, n, 1, 0, 0);
        in.ak.make(LIG_INT32, 1, n, 1, 0, 0);
        for (int64_t b = 0; b < n[0]; b++) {
            in.aq.set_i(&b, c.aq[b]);
            in.ak.set_i(&b, c.ak[b]);
        }
    }
    (void)g;
}

/* The (b, t) of query-tensor row r, or false when no batch owns it validly. */
static bool row_of(const gcase &c, const geo &g, int64_t r, int64_t *b, int64_t *t) {
    if (!c.tnd) {
        *b = r / c.S1;
        *t = r % c.S1;
        return *t < g.lq[*b];
    }
    for (int64_t x = 0; x < g.B; x++)
        if (r >= g.qb[x] && r < g.qb[x] + g.lq[x]) {
            *b = x;
            *t = r - g.qb[x];
            return true;
        }
    return false;
}

/* Returns whether the bad index of c.bad was planted (it needs a valid row late enough). */
static bool fill_slots(const gcase &c, const geo &g, rng &r, inputs &in) {
    const int64_t ssh4[4] = {c.B, c.S1, c.N2, c.K}, ssh3[3] = {c.S1, c.N2, c.K};
    const int64_t ssh3s[3] = {c.B, c.S1, c.K}, ssh2s[2] = {c.S1, c.K};
    const int nd = (c.tnd ? 3 : 4) - (c.short_form ? 1 : 0);
    const int64_t *sh = c.short_form ? (c.tnd ? ssh2s : ssh3s) : (c.tnd ? ssh3 : ssh4);
    in.idx.make(c.idt, nd, sh, c.istride, c.pad, POISON_IN);
    in.dy.make(c.dt, nd, sh, c.istride, c.pad, POISON_IN);
    const double nan = NAN;
    int64_t e[4];
    bool bad_done = c.bad == 0;
    for (int64_t row = 0; row < g.qrows; row++) {
        int64_t b = 0, t = 0;
        const bool valid = row_of(c, g, row, &b, &t);
        const int64_t tb = c.tnd ? 0 : row / c.S1, tt = c.tnd ? row : row % c.S1;
        for (int64_t h = 0; h < c.N2; h++)
            for (int64_t j = 0; j < c.K; j++) {
                ix(e, c.tnd, tb, tt, h, j, !c.short_form, true);
                if (!valid) { /* never read: garbage */
                    in.idx.set_i(e, r.range(0, 1) ? 1000000 : -5);
                    in.dy.set_f(e, nan);
                    continue;
                }
                const int64_t lk = g.lk[b];
                int64_t s = -1;
                const int64_t pick = r.range(0, 99);
                if (lk > 0 && pick >= 15) {
                    if (pick < 85) { /* a visible key when there is one */
                        int64_t lo = -1, hi = -2;
                        for (int64_t x = 0; x < lk; x++)
                            if (visible(c, g.lq[b], lk, t, x)) {
                                if (lo < 0) lo = x;
                                hi = x;
                            }
                        s = lo >= 0 ? r.range(lo, hi) : r.range(0, lk - 1);
                    } else {
                        s = r.range(0, lk - 1); /* maybe masked */
                    }
                }
                if (!bad_done && row * 7 + j >= g.qrows * 3) { /* plant the bad index once */
                    s = c.bad == 1 ? lk + r.range(0, 3) : -2 - r.range(0, 5);
                    bad_done = true;
                }
                in.idx.set_i(e, s);
                in.dy.set_f(e, visible(c, g.lq[b], lk, t, s) ? sample(r, c.grid, c.fine) : nan);
            }
    }
    return c.bad != 0 && bad_done;
}

/* Output buffers of the backward. */
struct gouts {
    buf dq, dk, dw;
};
static void make_gouts(const gcase &c, gouts &o, const inputs &in) {
    o.dq.make(c.dt, in.q.nd, in.q.shape, c.istride, c.pad + 1, POISON_OUT);
    o.dk.make(c.dt, in.k.nd, in.k.shape, c.istride, c.pad, POISON_OUT);
    o.dw.make(c.dwdt, in.w.nd, in.w.shape, c.istride, c.pad, POISON_OUT);
}
static lig_status grad_phase1(const gcase &c, inputs &in, gouts &o, uint64_t *ws, lig_executor **e) {
    return lig_indexer_grad_get_workspace_size(in.q.t, in.k.t, in.dy.t, in.idx.t, in.w.t, c.aq.empty() ? NULL : in.aq.t,
                                               c.aq.empty() ? NULL : in.ak.t, 0, c.tnd ? "TND" : "BSND", c.mode, c.pre,
                                               c.next, c.det, o.dq.t, o.dk.t, o.dw.t, ws, e);
}

/* Runs the emulated CUDA pipeline on the problem of a (CPU) executor, in `order`; the executor is
 * destroyed. Returns the verdict of the workspace status. */
struct emu_result {
    lig_status st;
    std::string msg;
};
template <class Run>
static emu_result emulate(lig_executor *e, uint64_t bytes, Run run) {
    std::vector<unsigned char> ws(bytes + 64, 0xa5); /* garbage: the pipeline must not rely on zeros */
    unsigned char *at = ws.data() + 1;                /* a misaligned caller pointer, as lig allows */
    char *base = lig_ws_base(at);
    run(e->problem, base);
    emu_result r;
    /* the public reading of a host copy (here the emulated workspace itself), alignment included */
    r.st = lig_workspace_status_from_copy(LIG_DEVICE_CUDA, at, at);
    r.msg = r.st == LIG_SUCCESS ? "" : lig_get_last_error();
    lig_destroy_executor(e);
    return r;
}

/* emulate() for an executor whose problem is a P: the problem's workspace layout (layout_of fails on
 * overflow), then run(x, problem, base, layout) on the emulated workspace, x launching in `order`. */
template <class P, class Run>
static emu_result emulate_problem(lig_executor *e, const std::string &name, int order, uint64_t seed,
                                  bool (*layout_of)(const P *, layout *), Run run) {
    const P *pb = (const P *)e->problem;
    layout l;
    EXPECT(layout_of(pb, &l), "%s: layout overflow", name.c_str());
    return emulate(e, l.bytes, [&](void *, char *base) {
        host_exec x(order, seed);
        run(x, pb, base, l);
        EXPECT(x.divergent == 0, "%s order %d: %lld block phases where threads disagreed on the next phase",
               name.c_str(), order, (long long)x.divergent);
        EXPECT(x.smem_overruns == 0, "%s order %d: %lld blocks wrote past their shared memory", name.c_str(), order,
               (long long)x.smem_overruns);
    });
}

/* Whole buffers, gaps included; `b` is the CPU backend's (or, for determinism, the first order's). */
static bool same_bytes(const buf &a, const buf &b, const char *what, const std::string &name) {
    g_checks++;
    if (a.mem == b.mem) return true;
    size_t i = 0;
    while (a.mem[i] == b.mem[i]) i++;
    EXPECT(false, "%s: %s differs from the reference at byte %zu of %zu (element %zu)", name.c_str(), what, i,
           a.mem.size(), i / a.es);
    return false;
}

/* Elementwise closeness over the logical elements (continuous data). */
static void close_enough(buf &a, buf &b, const char *what, const std::string &name) {
    const double rel = a.dt == LIG_BFLOAT16 ? 1.0 / 64 : a.dt == LIG_FLOAT16 ? 1.0 / 512 : 1e-4;
    int64_t i[8] = {0};
    int64_t n = 1;
    for (int k = 0; k < a.nd; k++) n *= a.shape[k];
    for (int64_t x = 0; x < n; x++) {
        int64_t rem = x;
        for (int k = a.nd - 1; k >= 0; k--) {
            i[k] = rem % a.shape[k];
            rem /= a.shape[k];
        }
        const double u = a.get_f(i), v = b.get_f(i);
        if (!(u == v || (isnan(u) && isnan(v)) || fabs(u - v) <= rel * (1.0 + fabs(v)))) {
            EXPECT(false, "%s: %s element %lld: emulated %.9g, CPU %.9g", name.c_str(), what, (long long)x, u, v);
            return;
        }
    }
    g_checks++;
}

#ifndef LIG_CUDA_DEVICE_TEST
/* The layouts with one unit per chunk: run_grad's and run_fwd's chunk walks at their finest. */
static bool grad_layout_unit_chunks(const lig_grad_problem *pb, layout *l) { return grad_layout_budget(pb, 0, l); }
static bool fwd_layout_unit_chunks(const lig_fwd_problem *pb, layout *l) { return fwd_layout_budget(pb, 0, l); }
#endif

static void run_grad_case(const gcase &c, uint64_t seed) {
    rng r = {seed};
    const geo g = geometry(c);
    inputs in;
    fill_qkw(c, g, r, in);
    const int bad = fill_slots(c, g, r, in) ? c.bad : 0;
    g_bad_planted += bad != 0;
    gouts cpu;
    make_gouts(c, cpu, in);
    uint64_t ws = 0;
    lig_executor *e = 0;
    lig_status st = grad_phase1(c, in, cpu, &ws, &e);
    EXPECT(st == LIG_SUCCESS, "%s: CPU phase 1: %s", c.name.c_str(), lig_get_last_error());
    if (st != LIG_SUCCESS) return;
    std::vector<unsigned char> cws(ws + 64);
    st = lig_indexer_grad(cws.data(), ws, e, NULL);
    const std::string cpu_msg = st == LIG_SUCCESS ? "" : lig_get_last_error();
    EXPECT((st == LIG_SUCCESS) == (bad == 0), "%s: CPU phase 2 returned %d (%s)", c.name.c_str(), (int)st,
           cpu_msg.c_str());
    std::vector<gouts *> runs;
    for (int order = 0; order < 3; order++) {
        gouts *o = new gouts;
        make_gouts(c, *o, in);
        emu_result res;
#ifdef LIG_CUDA_DEVICE_TEST
        {
            mirror_set ms;
            buf *all[8] = {&in.q, &in.k, &in.w, &in.dy, &in.idx, &o->dq, &o->dk, &o->dw};
            for (buf *b : all) ms.add(*b);
            st = grad_phase1(c, in, *o, &ws, &e);
            EXPECT(st == LIG_SUCCESS, "%s: CUDA phase 1: %s", c.name.c_str(), lig_get_last_error());
            if (st != LIG_SUCCESS) {
                delete o;
                break;
            }
            {
                const bool tc = c.D > 0 && c.D <= 256 && c.N1 > 0;
                const char *want = !tc ? "cuda-simt" : c.dt == LIG_BFLOAT16 ? "cuda-wmma"
                                                     : c.dt == LIG_FLOAT16  ? "cuda-wmma-scores"
                                                                            : "cuda-simt";
                EXPECT(strcmp(lig_executor_kernel_set(e), want) == 0, "%s: plan runs %s, expected %s", c.name.c_str(),
                       lig_executor_kernel_set(e), want);
            }
            res.st = device_phase2(
                ws, order, [&](void *w, uint64_t nb, void *sm) { return lig_indexer_grad(w, nb, e, sm); }, &res.msg);
            ms.fetch(o->dq);
            ms.fetch(o->dk);
            ms.fetch(o->dw);
        }
#else
        st = grad_phase1(c, in, *o, &ws, &e);
        EXPECT(st == LIG_SUCCESS, "%s: phase 1 (emulation): %s", c.name.c_str(), lig_get_last_error());
        if (st != LIG_SUCCESS) {
            delete o;
            break;
        }
        /* order 1 runs every unit as its own chunk, the others in the default chunks */
        res = emulate_problem(e, c.name, order, seed, order == 1 ? grad_layout_unit_chunks : grad_layout,
                              [](host_exec &x, const lig_grad_problem *pb, char *base, const layout &l) {
                                  run_grad(x, grad_args_of(pb, base, l), pb->deterministic, pb->pr.bt.lq);
                              });
#endif
        EXPECT(res.st == (bad ? LIG_ERR_PARAM_INVALID : LIG_SUCCESS) && res.msg == cpu_msg,
               "%s order %d: status %d \"%s\", CPU \"%s\"", c.name.c_str(), order, (int)res.st, res.msg.c_str(),
               cpu_msg.c_str());
        const std::string tag = c.name + " order " + std::to_string(order);
        if (bad) { /* nothing written: every byte still the poison the CPU's refused run left too */
            same_bytes(o->dq, cpu.dq, "d_query", tag);
            same_bytes(o->dk, cpu.dk, "d_key", tag);
            same_bytes(o->dw, cpu.dw, "d_weights", tag);
        } else if (c.grid) {
            same_bytes(o->dq, cpu.dq, "d_query", tag);
            same_bytes(o->dk, cpu.dk, "d_key", tag);
            same_bytes(o->dw, cpu.dw, "d_weights", tag);
        } else {
            close_enough(o->dq, cpu.dq, "d_query", tag);
            close_enough(o->dk, cpu.dk, "d_key", tag);
            close_enough(o->dw, cpu.dw, "d_weights", tag);
        }
        runs.push_back(o);
    }
    /* determinism: the deterministic pipeline gives the same bytes whatever the thread order */
    if (c.det)
        for (size_t i = 1; i < runs.size(); i++) {
            const std::string tag = c.name + " (determinism, order " + std::to_string(i) + " vs 0)";
            same_bytes(runs[i]->dq, runs[0]->dq, "d_query", tag);
            same_bytes(runs[i]->dk, runs[0]->dk, "d_key", tag);
            same_bytes(runs[i]->dw, runs[0]->dw, "d_weights", tag);
        }
    for (gouts *o : runs) delete o;
}

/* ---- forward ---------------------------------------------------------------------------------- */
struct fouts {
    buf idx, val;
};
static void make_fouts(const gcase &c, fouts &o) {
    const int64_t ssh4[4] = {c.B, c.S1, c.N2, c.K}, ssh3[3] = {c.S1, c.N2, c.K};
    const int64_t ssh3s[3] = {c.B, c.S1, c.K}, ssh2s[2] = {c.S1, c.K};
    const int nd = (c.tnd ? 3 : 4) - (c.short_form ? 1 : 0);
    const int64_t *sh = c.short_form ? (c.tnd ? ssh2s : ssh3s) : (c.tnd ? ssh3 : ssh4);
    o.idx.make(c.idt, nd, sh, c.istride, c.pad, POISON_OUT);
    o.val.make(c.valdt, nd, sh, c.istride, c.pad + 2, POISON_OUT);
}
static lig_status fwd_phase1(const gcase &c, inputs &in, fouts &o, bool values, uint64_t *ws, lig_executor **e) {
    return lig_indexer_get_workspace_size(in.q.t, in.k.t, in.w.t, c.aq.empty() ? NULL : in.aq.t,
                                          c.aq.empty() ? NULL : in.ak.t, c.tnd ? "TND" : "BSND", c.K, c.mode, c.pre,
                                          c.next, o.idx.t, values ? o.val.t : NULL, ws, e);
}
static void run_fwd_case(const gcase &c, uint64_t seed) {
    rng r = {seed};
    const geo g = geometry(c);
    inputs in;
    fill_qkw(c, g, r, in);
    for (int values = 0; values < 2; values++) {
        fouts cpu;
        make_fouts(c, cpu);
        uint64_t ws = 0;
        lig_executor *e = 0;
        lig_status st = fwd_phase1(c, in, cpu, values, &ws, &e);
        EXPECT(st == LIG_SUCCESS, "%s: CPU forward phase 1: %s", c.name.c_str(), lig_get_last_error());
        if (st != LIG_SUCCESS) return;
        std::vector<unsigned char> cws(ws + 64);
        st = lig_indexer(cws.data(), ws, e, NULL);
        EXPECT(st == LIG_SUCCESS, "%s: CPU forward: %s", c.name.c_str(), lig_get_last_error());
        for (int order = 0; order < 3; order++) {
            fouts o;
            make_fouts(c, o);
            emu_result res;
#ifdef LIG_CUDA_DEVICE_TEST
            {
                mirror_set ms;
                buf *all[5] = {&in.q, &in.k, &in.w, &o.idx, &o.val};
                for (buf *b : all) ms.add(*b);
                st = fwd_phase1(c, in, o, values, &ws, &e);
                EXPECT(st == LIG_SUCCESS, "%s: CUDA forward phase 1: %s", c.name.c_str(), lig_get_last_error());
                if (st != LIG_SUCCESS) return;
                res.st = device_phase2(
                    ws, order, [&](void *w, uint64_t nb, void *sm) { return lig_indexer(w, nb, e, sm); }, &res.msg);
                ms.fetch(o.idx);
                ms.fetch(o.val);
            }
#else
            st = fwd_phase1(c, in, o, values, &ws, &e);
            if (st != LIG_SUCCESS) return;
            /* order 1 runs every unit as its own chunk, the others in the default chunks */
            res = emulate_problem(e, c.name, order, seed, order == 1 ? fwd_layout_unit_chunks : fwd_layout,
                                  [](host_exec &x, const lig_fwd_problem *pb, char *base, const layout &l) {
                                      run_fwd(x, fwd_args_of(pb, base, l), pb->pr.bt.lq);
                                  });
#endif
            EXPECT(res.st == LIG_SUCCESS, "%s: forward status %d %s", c.name.c_str(), (int)res.st, res.msg.c_str());
            const std::string tag = c.name + " forward order " + std::to_string(order) + (values ? " +values" : "");
            same_bytes(o.idx, cpu.idx, "sparse_indices", tag); /* continuous data, fixed seed: no near ties */
            if (c.grid) same_bytes(o.val, cpu.val, "sparse_values", tag);
            else if (values) close_enough(o.val, cpu.val, "sparse_values", tag);
        }
    }
}

/* ---- the KL step ------------------------------------------------------------------------------ */
struct klcase {
    std::string name;
    int nd;
    int64_t shape[4];
    lig_dtype vdt, tdt, dydt, idt;
    bool has_idx;
    int64_t istride, pad;
    int bad; /* 1: a negative target, 2: a NaN target, in a counted slot */
};
static void run_kl_case(const klcase &c, uint64_t seed) {
    rng r = {seed};
    buf val, tgt, idx;
    val.make(c.vdt, c.nd, c.shape, c.istride, c.pad, POISON_IN);
    tgt.make(c.tdt, c.nd, c.shape, c.istride, c.pad, POISON_IN);
    idx.make(c.idt, c.nd, c.shape, c.istride, c.pad, POISON_IN);
    int64_t n = 1;
    for (int k = 0; k < c.nd; k++) n *= c.shape[k];
    const int64_t K = c.shape[c.nd - 1];
    bool planted = c.bad == 0;
    for (int64_t x = 0; x < n; x++) {
        int64_t i[4], rem = x;
        for (int k = c.nd - 1; k >= 0; k--) {
            i[k] = rem % c.shape[k];
            rem /= c.shape[k];
        }
        const bool counted = r.range(0, 9) >= 2 && (x / K) % 5 != 3; /* every fifth row has no counted slot */
        idx.set_i(i, counted ? r.range(0, 100) : -1);
        val.set_f(i, counted || c.has_idx ? 4.0 * r.uniform() - 2.0 : -INFINITY);
        double t = counted ? (r.range(0, 5) == 0 ? 0.0 : r.uniform()) : (r.range(0, 1) ? NAN : -3.0);
        if (counted && !planted && x >= n / 2) {
            t = c.bad == 1 ? -0.25 : NAN;
            planted = true;
        }
        tgt.set_f(i, t);
    }
    const int64_t one[1] = {1};
    auto run_one = [&](buf &loss, buf &dy, uint64_t *ws, lig_executor **e) {
        loss.make(LIG_FLOAT32, 1, one, 1, 0, POISON_OUT);
        dy.make(c.dydt, c.nd, c.shape, c.istride, c.pad + 1, POISON_OUT);
        return lig_kl_loss_and_dy_get_workspace_size(val.t, c.has_idx ? idx.t : NULL, tgt.t, loss.t, dy.t, ws, e);
    };
    buf closs, cdy;
    uint64_t ws = 0;
    lig_executor *e = 0;
    lig_status st = run_one(closs, cdy, &ws, &e);
    EXPECT(st == LIG_SUCCESS, "%s: KL phase 1: %s", c.name.c_str(), lig_get_last_error());
    if (st != LIG_SUCCESS) return;
    std::vector<unsigned char> cws(ws + 64);
    st = lig_kl_loss_and_dy(cws.data(), ws, e, NULL);
    const std::string cpu_msg = st == LIG_SUCCESS ? "" : lig_get_last_error();
    EXPECT((st == LIG_SUCCESS) == (c.bad == 0), "%s: CPU KL returned %d", c.name.c_str(), (int)st);
    for (int order = 0; order < 3; order++) {
        buf loss, dy;
        emu_result res;
#ifdef LIG_CUDA_DEVICE_TEST
        {
            const int64_t one1[1] = {1};
            loss.make(LIG_FLOAT32, 1, one1, 1, 0, POISON_OUT);
            dy.make(c.dydt, c.nd, c.shape, c.istride, c.pad + 1, POISON_OUT);
            mirror_set ms;
            buf *all[5] = {&val, &tgt, &idx, &loss, &dy};
            for (buf *b : all) ms.add(*b);
            st = lig_kl_loss_and_dy_get_workspace_size(val.t, c.has_idx ? idx.t : NULL, tgt.t, loss.t, dy.t, &ws, &e);
            EXPECT(st == LIG_SUCCESS, "%s: CUDA KL phase 1: %s", c.name.c_str(), lig_get_last_error());
            if (st != LIG_SUCCESS) return;
            res.st = device_phase2(
                ws, order, [&](void *w, uint64_t nb, void *sm) { return lig_kl_loss_and_dy(w, nb, e, sm); }, &res.msg);
            ms.fetch(loss);
            ms.fetch(dy);
        }
#else
        st = run_one(loss, dy, &ws, &e);
        if (st != LIG_SUCCESS) return;
        res = emulate_problem(e, c.name, order, seed, kl_layout,
                              [](host_exec &x, const lig_kl_dy_problem *pb, char *base, const layout &l) {
                                  run_kl(x, kl_args_of(pb, base, l));
                              });
#endif
        EXPECT(res.st == (c.bad ? LIG_ERR_PARAM_INVALID : LIG_SUCCESS) && res.msg == cpu_msg,
               "%s order %d: status %d \"%s\", CPU \"%s\"", c.name.c_str(), order, (int)res.st, res.msg.c_str(),
               cpu_msg.c_str());
        const std::string tag = c.name + " order " + std::to_string(order);
#ifdef LIG_CUDA_DEVICE_TEST
        close_enough(loss, closs, "loss", tag); /* the device's exp and log may differ in the last bits */
        close_enough(dy, cdy, "dy", tag);
        if (c.bad) same_bytes(dy, cdy, "dy", tag);
#else
        close_enough(loss, closs, "loss", tag); /* the rows' losses are summed in a tree, the CPU's in row order */
        same_bytes(dy, cdy, "dy", tag);
#endif
    }
}

#ifndef LIG_CUDA_DEVICE_TEST
/* ---- the warp tile product ------------------------------------------------------------------ */
/* One block of two warps, each C (16 x 16 fp32) += A * B^T over K = 32 (two 16-deep steps, two
 * phases), operands at padded leading dimensions; grid values, so the fp32 sums are exact in any
 * order and must equal the float64 reference. */
struct k_mma_probe {
    enum { THREADS = 64, LDA = 40, LDC = 20 };
    struct local {};
    int dtype;
    uint16_t *a, *b; /* per warp: [16][LDA] */
    float *c;        /* per warp: [16][LDC] */
    uint64_t smem_bytes() const { return 16; }
    LIG_HD int step(int phase, int64_t, int tid, char *, local &) const {
        const int w = tid / WARP, lane = tid % WARP;
        warp_mma_16x16x16(dtype, c + w * 16 * LDC, LDC, a + w * 16 * LDA + phase * 16, LDA, b + w * 16 * LDA + phase * 16,
                          LDA, lane);
        return phase == 0 ? 1 : -1;
    }
};
static void check_warp_mma(uint64_t seed) {
    for (int dt = 0; dt < 2; dt++) {
        const int dtype = dt ? DT_F16 : DT_BF16;
        rng r = {seed + (uint64_t)dt};
        std::vector<uint16_t> a(2 * 16 * k_mma_probe::LDA), b(a.size());
        std::vector<float> c(2 * 16 * k_mma_probe::LDC);
        for (size_t i = 0; i < a.size(); i++) {
            const float x = (float)r.range(-16, 16) / 8.0f, y = (float)r.range(-16, 16) / 8.0f;
            a[i] = dtype == DT_BF16 ? lig_f32_to_bf16(x) : lig_f32_to_f16(x);
            b[i] = dtype == DT_BF16 ? lig_f32_to_bf16(y) : lig_f32_to_f16(y);
        }
        for (size_t i = 0; i < c.size(); i++) c[i] = (float)r.range(-8, 8) / 4.0f;
        std::vector<float> c0 = c;
        for (int order = 0; order < 3; order++) {
            c = c0;
            host_exec x(order, seed);
            x.launch_blocks(1, k_mma_probe{dtype, a.data(), b.data(), c.data()});
            int bad = 0;
            for (int w = 0; w < 2; w++)
                for (int i = 0; i < 16; i++)
                    for (int j = 0; j < 16; j++) {
                        double ref = c0[(w * 16 + i) * k_mma_probe::LDC + j];
                        for (int k = 0; k < 32; k++) {
                            const uint16_t u = a[(w * 16 + i) * k_mma_probe::LDA + k], v = b[(w * 16 + j) * k_mma_probe::LDA + k];
                            ref += (double)(dtype == DT_BF16 ? lig_bf16_to_f32(u) : lig_f16_to_f32(u)) *
                                   (double)(dtype == DT_BF16 ? lig_bf16_to_f32(v) : lig_f16_to_f32(v));
                        }
                        bad += (double)c[(w * 16 + i) * k_mma_probe::LDC + j] != ref;
                    }
            EXPECT(bad == 0 && x.divergent == 0, "warp_mma_16x16x16 dtype %d order %d: %d of 512 sums differ from float64",
                   dtype, order, bad);
        }
    }
}
#endif

#ifndef LIG_CUDA_DEVICE_TEST
/* split_bf16 (kernels/grad_tc.cuh): the parts add up to the value exactly (float64), for values of
 * every magnitude fp32 keeps above 2^-110, two parts for products of two bf16 values; a non-finite
 * value is its first part. */
static void check_split_bf16(uint64_t seed) {
    rng r = {seed};
    int bad = 0;
    for (int i = 0; i < 20000; i++) {
        const int two = i % 2;
        float a;
        if (two) {
            const float x = lig_bf16_to_f32((uint16_t)r.range(0, 0xffff)), y = lig_bf16_to_f32((uint16_t)r.range(0, 0xffff));
            a = x * y;
        } else {
            a = bits_f32((uint32_t)r.range(0, 0xffffffffll));
        }
        uint16_t p[3];
        split_bf16(a, two ? 2 : 3, p);
        if (!(a - a == 0.0f)) {
            bad += p[0] != lig_f32_to_bf16(a) || p[1] || p[2];
            continue;
        }
        if (fabsf(a) < 0x1p-110f) continue;
        const double sum = (double)lig_bf16_to_f32(p[0]) + (double)lig_bf16_to_f32(p[1]) + (double)lig_bf16_to_f32(p[2]);
        bad += sum != (double)a;
    }
    EXPECT(bad == 0, "split_bf16: %d of 20000 values are not the exact sum of their parts", bad);
}
#endif

/* ---- the matrix ------------------------------------------------------------------------------- */
static gcase base_case() {
    gcase c;
    c.name = "base";
    c.tnd = false;
    c.mode = 3;
    c.pre = c.next = INT64_MAX;
    c.dt = LIG_FLOAT32;
    c.idt = LIG_INT32;
    c.dwdt = LIG_FLOAT32;
    c.valdt = LIG_FLOAT32;
    c.B = 2;
    c.S1 = 5;
    c.S2 = 7;
    c.N1 = 2;
    c.N2 = 1;
    c.D = 8;
    c.K = 4;
    c.istride = 1;
    c.pad = 0;
    c.short_form = false;
    c.grid = true;
    c.det = true;
    c.fine = false;
    c.bad = 0;
    return c;
}

/* A random valid case (grid data unless `continuous`). */
static gcase random_case(rng &r, int i, bool continuous) {
    gcase c = base_case();
    const lig_dtype dts[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    c.tnd = r.range(0, 1);
    c.mode = r.range(0, 1) ? 3 : 0;
    c.pre = r.range(0, 2) ? INT64_MAX : r.range(0, 4);
    c.next = r.range(0, 2) ? INT64_MAX : r.range(0, 4);
    c.dt = dts[r.range(0, 2)];
    c.idt = r.range(0, 1) ? LIG_INT32 : LIG_INT64;
    c.dwdt = r.range(0, 1) ? c.dt : LIG_FLOAT32;
    c.valdt = r.range(0, 1) ? c.dt : LIG_FLOAT32;
    c.N2 = r.range(1, 3);
    c.N1 = c.N2 * r.range(1, 3);
    c.D = r.range(0, 9) == 0 ? 0 : r.range(1, 20);
    c.K = r.range(1, 12);
    c.short_form = c.N2 == 1 && r.range(0, 1);
    c.istride = r.range(1, 2);
    c.pad = r.range(0, 3);
    c.det = r.range(0, 1);
    c.grid = !continuous;
    if (continuous) c.det = true;
    if (c.tnd) {
        const int64_t B = r.range(1, 3);
        c.S1 = r.range(0, 12);
        c.S2 = r.range(0, 12);
        int64_t eq = 0, ek = 0;
        for (int64_t b = 0; b < B; b++) {
            eq = r.range(eq, c.S1);
            ek = r.range(ek, c.S2);
            c.aq.push_back(eq);
            c.ak.push_back(ek);
        }
        c.B = B;
    } else {
        c.B = r.range(0, 3);
        c.S1 = r.range(0, 9);
        c.S2 = r.range(0, 9);
        if (c.B > 0 && r.range(0, 1))
            for (int64_t b = 0; b < c.B; b++) {
                c.aq.push_back(r.range(0, c.S1));
                c.ak.push_back(r.range(0, c.S2));
            }
    }
    c.bad = r.range(0, 7) == 0 ? (int)r.range(1, 2) : 0;
    char nm[200];
    snprintf(nm, sizeof nm, "random %d: %s mode %d pre %lld next %lld dt %d idx %d B %lld S1 %lld S2 %lld N1 %lld N2 %lld D %lld K %lld%s%s%s%s",
             i, c.tnd ? "TND" : "BSND", c.mode, c.pre == INT64_MAX ? -1LL : (long long)c.pre,
             c.next == INT64_MAX ? -1LL : (long long)c.next, (int)c.dt, (int)c.idt, (long long)c.B, (long long)c.S1,
             (long long)c.S2, (long long)c.N1, (long long)c.N2, (long long)c.D, (long long)c.K,
             c.short_form ? " short" : "", c.det ? " det" : " nondet", continuous ? " continuous" : "",
             c.bad ? " bad" : "");
    c.name = nm;
    return c;
}

int main(int argc, char **argv) {
    const bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
#ifdef LIG_CUDA_DEVICE_TEST
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("SKIPPED cuda-device-matrix: no CUDA device\n");
        return 77;
    }
#endif
    lig_set_num_threads(1);
    std::vector<gcase> cases;
    const lig_dtype dts[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    int n = 0;
    for (int tnd = 0; tnd < 2; tnd++)
        for (int mode = 0; mode < 2; mode++)
            for (int di = 0; di < 3; di++)
                for (int shape = 0; shape < 4; shape++) {
                    gcase c = base_case();
                    c.tnd = tnd;
                    c.mode = mode ? 3 : 0;
                    c.dt = dts[di];
                    c.valdt = shape % 2 ? LIG_FLOAT32 : c.dt;
                    c.dwdt = shape % 2 ? c.dt : LIG_FLOAT32;
                    c.idt = (n % 2) ? LIG_INT64 : LIG_INT32;
                    const int64_t N2s[4] = {1, 2, 1, 2}, Gs[4] = {1, 3, 2, 1}, Ds[4] = {1, 5, 16, 3},
                                  Ks[4] = {3, 2, 9, 1};
                    c.N2 = N2s[shape];
                    c.N1 = c.N2 * Gs[shape];
                    c.D = Ds[shape];
                    c.K = Ks[shape]; /* K 9 > S2 */
                    c.short_form = c.N2 == 1 && shape == 2;
                    c.istride = shape == 1 ? 2 : 1;
                    c.pad = shape == 3 ? 3 : 0;
                    if (c.mode == 0) {
                        c.pre = shape % 2 ? 2 : INT64_MAX;
                        c.next = shape >= 2 ? 1 : INT64_MAX;
                    } else {
                        c.pre = shape == 3 ? 1 : INT64_MAX;
                    }
                    if (tnd) {
                        c.aq = shape == 0 ? std::vector<int64_t>{3, 3, 8} : std::vector<int64_t>{2, 6};
                        c.ak = shape == 0 ? std::vector<int64_t>{4, 4, 9} : std::vector<int64_t>{3, 7};
                        c.S1 = 9; /* rows past the last end are invalid */
                        c.S2 = 10;
                        c.B = (int64_t)c.aq.size();
                    } else if (shape >= 2) {
                        c.aq = {c.S1, 2};
                        c.ak = {3, 0};
                    }
                    c.det = n % 3 != 2;
                    c.name = std::string(tnd ? "TND" : "BSND") + " mode " + std::to_string(c.mode) + " " +
                             lig_status_string(LIG_SUCCESS) + "";
                    char nm[160];
                    snprintf(nm, sizeof nm, "%s mode %d dt %d idx %d N1 %lld N2 %lld D %lld K %lld%s%s%s",
                             tnd ? "TND" : "BSND", c.mode, (int)c.dt, (int)c.idt, (long long)c.N1, (long long)c.N2,
                             (long long)c.D, (long long)c.K, c.short_form ? " short" : "",
                             c.istride > 1 || c.pad ? " strided" : "", c.det ? " det" : " nondet");
                    c.name = nm;
                    cases.push_back(c);
                    n++;
                }
    /* empty problems and edge shapes: base_case() with one change each */
    struct edge {
        const char *name;
        int64_t B, S1, S2, D, K, N1, N2;
        bool tnd, det;
    } edges[] = {
        {"BSND B 0", 0, 5, 7, 8, 4, 2, 1, false, true},
        {"BSND D 0", 2, 5, 7, 0, 4, 2, 1, false, true},
        {"BSND S1 0", 2, 0, 7, 8, 4, 2, 1, false, true},
        {"BSND S2 0", 2, 5, 0, 8, 4, 2, 1, false, true},
        {"TND all batches empty", 2, 3, 2, 8, 4, 2, 1, true, true},
        {"BSND large K, dK hot keys (nondet)", 2, 12, 3, 8, 6, 4, 2, false, false},
    };
    for (const edge &x : edges) {
        gcase c = base_case();
        c.name = x.name;
        c.B = x.B;
        c.S1 = x.S1;
        c.S2 = x.S2;
        c.D = x.D;
        c.K = x.K;
        c.N1 = x.N1;
        c.N2 = x.N2;
        c.tnd = x.tnd;
        c.det = x.det;
        if (c.tnd) c.aq = c.ak = {0, 0};
        cases.push_back(c);
    }
    const size_t grid_cases = cases.size();
    /* continuous data: determinism across orders, closeness to the CPU */
    for (int i = 0; i < (quick ? 2 : 6); i++) {
        gcase c = cases[(size_t)(i * 7) % grid_cases];
        if (c.B == 0 || c.D == 0 || c.S1 == 0 || c.S2 == 0) c = base_case();
        c.grid = false;
        c.det = i % 3 != 2;
        c.S2 = c.tnd ? c.S2 : 4; /* few keys: many contributions per key */
        if (!c.tnd && !c.ak.empty())
            for (auto &v : c.ak) v = v > 4 ? 4 : v;
        c.name += " continuous";
        cases.push_back(c);
    }
    /* bad indices */
    for (int i = 0; i < 4; i++) {
        gcase c = cases[(size_t)(i * 11 + 1) % grid_cases];
        if (c.B == 0 || c.S1 == 0 || c.S2 == 0) c = base_case();
        c.bad = 1 + i % 2;
        c.name += i % 2 ? " bad index < -1" : " bad index >= Lk";
        cases.push_back(c);
    }
    /* random cases: grid data, then continuous data (determinism across orders) */
    {
        rng r = {777};
        const int n_random = quick ? 24 : 300;
        for (int i = 0; i < n_random; i++) cases.push_back(random_case(r, i, i % 6 == 5));
    }
    /* long rows: the forward's radix select and bitonic sort over slices of several keys per thread
     * (1500 keys, 512 threads), ties across slices (grid data, and D 0: every score 0), K not a
     * power of two, below and above the block's thread count */
    {
        const int64_t Ks[5] = {37, 700, 1300, 37, 700};
        for (int i = 0; i < 5; i++) {
            gcase c = base_case();
            c.B = 1;
            c.S1 = 3;
            c.S2 = 1500;
            c.N1 = 2;
            c.D = i == 3 ? 0 : 4;
            c.K = Ks[i];
            c.mode = i % 2 ? 0 : 3;
            c.grid = i != 4;
            c.det = i != 1;
            c.dt = i == 1 || i == 2 ? LIG_BFLOAT16 : i == 4 ? LIG_FLOAT16 : LIG_FLOAT32; /* tiles past slot 64 */
            c.name = "BSND long rows S2 1500 K " + std::to_string(c.K) + (c.D ? "" : " D 0") + " dt " +
                     std::to_string((int)c.dt) + (c.grid ? "" : " continuous");
            cases.push_back(c);
        }
    }
    /* many heads: the tensor-core scores' head groups (70 heads: groups of 64 and 6) and several
     * 16-wide steps of d (D 40: 48 padded), 16-bit data only (the tile-eligible dtypes) */
    for (int i = 0; i < 4; i++) {
        gcase c = base_case();
        c.B = 2;
        c.S1 = 4;
        c.S2 = 150;
        c.N1 = i >= 2 ? 140 : 70;
        c.N2 = i >= 2 ? 2 : 1;
        c.D = 40;
        c.K = 45;
        c.dt = i == 1 ? LIG_FLOAT16 : LIG_BFLOAT16;
        c.grid = i != 1;
        c.fine = i == 3;
        c.det = true;
        c.name = std::string(c.fine ? "fine grid " : "") + "BSND many heads N1 " + std::to_string(c.N1) + " N2 " + std::to_string(c.N2) + " D 40 " +
                 (c.dt == LIG_FLOAT16 ? "f16" : "bf16") + (c.grid ? "" : " continuous");
        cases.push_back(c);
    }
    uint64_t seed = 12345;
    for (size_t i = 0; i < cases.size(); i++) {
        if (quick && i % 4 != 0 && cases[i].bad == 0 && cases[i].grid && i < grid_cases) continue;
        run_grad_case(cases[i], seed + i);
        if (cases[i].bad == 0) run_fwd_case(cases[i], seed + 1000 + i);
    }
#ifndef LIG_CUDA_DEVICE_TEST
    check_warp_mma(seed + 9000);
    check_split_bf16(seed + 9100);
#endif
    /* a workspace no phase 2 completed in has no status */
    {
        unsigned char none[LIG_CUDA_STATUS_BYTES];
        memset(none, 0, sizeof none);
        const lig_status st = lig_cuda_status_verdict(none);
        EXPECT(st == LIG_ERR_PARAM_INVALID && strstr(lig_get_last_error(), "without a status") != NULL,
               "a status-less workspace: got %d \"%s\"", (int)st, lig_get_last_error());
    }
    /* KL */
    const klcase kls[] = {
        {"KL [3,4,6] f32", 3, {3, 4, 6, 0}, LIG_FLOAT32, LIG_FLOAT32, LIG_FLOAT32, LIG_INT32, true, 1, 0, 0},
        {"KL [10,5] bf16 values, no indices", 2, {10, 5, 0, 0}, LIG_BFLOAT16, LIG_FLOAT32, LIG_FLOAT16, LIG_INT64, false, 2, 1, 0},
        {"KL [2,3,1,7] f16 strided", 4, {2, 3, 1, 7}, LIG_FLOAT16, LIG_BFLOAT16, LIG_BFLOAT16, LIG_INT64, true, 1, 2, 0},
        {"KL [0,4] empty", 2, {0, 4, 0, 0}, LIG_FLOAT32, LIG_FLOAT32, LIG_FLOAT32, LIG_INT32, true, 1, 0, 0},
        {"KL negative target", 2, {6, 5, 0, 0}, LIG_FLOAT32, LIG_FLOAT32, LIG_FLOAT32, LIG_INT32, true, 1, 0, 1},
        {"KL NaN target", 3, {2, 3, 4, 0}, LIG_BFLOAT16, LIG_FLOAT16, LIG_FLOAT32, LIG_INT32, false, 1, 1, 2},
    };
    for (size_t i = 0; i < sizeof kls / sizeof kls[0]; i++) run_kl_case(kls[i], seed + 5000 + i);

    EXPECT(g_bad_planted >= 4, "only %d cases had a bad index planted", g_bad_planted);
#ifdef LIG_CUDA_DEVICE_TEST
    const char *what = "cuda-device-matrix", *runs = "3 runs each (the third in a CUDA graph)";
#else
    const char *what = "cuda-emulation", *runs = "3 thread orders each";
#endif
    printf("%s: %zu backward/forward cases (%d with a bad index), %zu KL cases, %s: %d checks, %d failed\n", what,
           cases.size(), g_bad_planted, sizeof kls / sizeof kls[0], runs, g_checks, g_failures);
    return g_failures ? 1 : 0;
}

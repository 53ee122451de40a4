/* The KL step (docs/contract.md 2.3) as CUDA kernel bodies and its pipeline, run_kl. */
#ifndef LIG_CUDA_KERNELS_KL_CUH
#define LIG_CUDA_KERNELS_KL_CUH

#include "backends/cuda/kernels/block.cuh"

namespace ligcu {


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
 * kl_loss_and_dy.c, with the exponentials recomputed instead of kept). */
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
/* The loss: one block; thread t adds the row losses t, t + THREADS, ... in row order, then a
 * fixed tree (tree_sum_level) adds the threads' sums, so the loss is the same on every run and
 * device. A failed check leaves the loss unwritten (every thread reads the same status). */
struct k_kl_total {
    enum { THREADS = 256 };
    struct local {};
    kl_args a;
    uint64_t smem_bytes() const { return THREADS * sizeof(double); }
    LIG_HD int step(int phase, int64_t, int tid, char *smem, local &) const {
        double *v = (double *)(void *)smem;
        if (phase == 0) {
            if (failed(a.st)) return -1;
            double s = 0.0;
            for (int64_t r = tid; r < a.rows; r += THREADS) s += a.row_loss[r];
            v[tid] = s;
            return 1;
        }
        if (tree_sum_level<THREADS>(phase - 1, tid, v)) return phase + 1;
        if (tid == 0) {
            const float out = (float)v[0];
            memcpy(a.loss, &out, 4);
        }
        return -1;
    }
};

template <class X>
void run_kl(X &x, const kl_args &a) {
    x.launch(1, k_status_init{a.st, 0});
    x.launch(a.rows * a.K, k_kl_check{a});
    x.launch(1, k_kl_report{a});
    x.launch(a.rows, after_checks(a.st, k_kl_rows{a}));
    x.launch_blocks(1, k_kl_total{a});
}

} // namespace ligcu

#endif // LIG_CUDA_KERNELS_KL_CUH

/* The CUDA backend: planners (phase 1: workspace layout, nothing touches the device) and runs
 * (phase 2: kernels enqueued on the caller's stream, no allocation, no synchronisation). The
 * kernels are the __host__ __device__ bodies of cuda_kernels.cuh, launched as grid-stride loops.
 * docs/cuda.md: design, the status protocol, determinism. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/cuda/cuda_plan.cuh"
#include "backends/cuda/device_exec.cuh"

extern "C" {
#include "backends/cuda/cuda_backend.h"
#include "core/error.h"
}

namespace ligcu {

static_assert(sizeof(cu_status) <= LIG_CUDA_STATUS_BYTES, "the status header fits its bytes");
static_assert(LIG_CUDA_STATUS_BYTES + LIG_WS_ALIGN - 1 <= LIG_WORKSPACE_STATUS_BYTES,
              "a copy of LIG_WORKSPACE_STATUS_BYTES holds the status whatever the workspace's alignment");

static lig_status launch_status(const device_exec &x, const char *op) {
    if (x.err == cudaSuccess) return LIG_SUCCESS;
    if (x.sort_needed)
        return lig_fail(LIG_ERR_RUNTIME,
                        "workspace: expected CUB's radix sort to fit the temporary storage phase 1 reserves for it "
                        "(cuda_plan.cuh sort_temp_bound), got a device on which it needs %llu bytes",
                        (unsigned long long)x.sort_needed);
    return lig_fail(LIG_ERR_RUNTIME, "stream: expected %s's kernels to launch, got CUDA error %d (%s)", op, (int)x.err,
                    cudaGetErrorString(x.err));
}

struct grad_plan {
    const lig_grad_problem *pb;
    layout l;
};
struct fwd_plan {
    const lig_fwd_problem *pb;
    layout l;
};
struct kl_plan {
    const lig_kl_dy_problem *pb;
    layout l;
};

static lig_status run_grad_plan(void *plan, void *workspace, void *stream) {
    const grad_plan *p = (const grad_plan *)plan;
    char *base = lig_ws_base(workspace);
    device_exec x = {(cudaStream_t)stream, cudaSuccess};
    run_grad(x, grad_args_of(p->pb, base, p->l), p->pb->deterministic, p->pb->pr.bt.lq);
    return launch_status(x, "lig_indexer_grad");
}
static lig_status run_fwd_plan(void *plan, void *workspace, void *stream) {
    const fwd_plan *p = (const fwd_plan *)plan;
    char *base = lig_ws_base(workspace);
    device_exec x = {(cudaStream_t)stream, cudaSuccess};
    run_fwd(x, fwd_args_of(p->pb, base, p->l), p->pb->pr.bt.lq);
    return launch_status(x, "lig_indexer");
}
static lig_status run_kl_plan(void *plan, void *workspace, void *stream) {
    const kl_plan *p = (const kl_plan *)plan;
    char *base = lig_ws_base(workspace);
    device_exec x = {(cudaStream_t)stream, cudaSuccess};
    run_kl(x, kl_args_of(p->pb, base, p->l));
    return launch_status(x, "lig_kl_loss_and_dy");
}

static void free_plan(void *plan) { free(plan); }

static lig_status too_large(void) {
    return lig_fail(LIG_ERR_PARAM_INVALID, "workspace_size: expected a CUDA workspace below 2^63 bytes, got an overflow");
}

template <class P, class Pb>
static lig_status publish(const Pb *pb, bool ok, lig_status (*run)(void *, void *, void *), lig_backend_plan *out,
                          const layout &l, const char *kernel_set) {
    if (!ok) return too_large();
    P *p = (P *)calloc(1, sizeof(P));
    if (!p) return lig_fail(LIG_ERR_RUNTIME, "executor: expected memory for a plan, got none");
    p->pb = pb;
    p->l = l;
    out->plan = p;
    out->workspace_size = l.bytes;
    out->kernel_set = kernel_set;
    out->run = run;
    out->free = free_plan;
    return LIG_SUCCESS;
}

} // namespace ligcu

using namespace ligcu;

static lig_status cuda_check_stream(void *stream) {
    (void)stream; /* any cudaStream_t, NULL for the legacy default stream */
    return LIG_SUCCESS;
}

static lig_status cuda_plan_grad(const lig_grad_problem *pb, lig_backend_plan *out) {
    layout l;
    const bool ok = grad_layout(pb, &l);
    return publish<grad_plan>(pb, ok, run_grad_plan, out, l, kernel_set_name(&pb->pr, pb->q, pb->k, true));
}

/* The plain forward only: the slots of the paged and quantized forwards are NULL (api/ refuses them
 * by name), so that the problem has none of their parts here. */
static lig_status cuda_plan_fwd(const lig_fwd_problem *pb, lig_backend_plan *out) {
    layout l;
    const bool ok = fwd_layout(pb, &l);
    return publish<fwd_plan>(pb, ok, run_fwd_plan, out, l, kernel_set_name(&pb->pr, pb->q, pb->k, false));
}

static lig_status cuda_plan_kl(const lig_kl_dy_problem *pb, lig_backend_plan *out) {
    layout l;
    const bool ok = kl_layout(pb, &l);
    return publish<kl_plan>(pb, ok, run_kl_plan, out, l, "cuda-simt");
}

/* Phase 2 enqueues on a stream of the current device: the tensors must live on that device. */
static lig_status cuda_check_device(int device_index) {
    int current = -1;
    const cudaError_t e = cudaGetDevice(&current);
    if (e != cudaSuccess)
        return lig_fail(LIG_ERR_RUNTIME, "device_index: expected to read the current CUDA device, got CUDA error %d (%s)",
                        (int)e, cudaGetErrorString(e));
    if (current != device_index)
        return lig_fail(LIG_ERR_PARAM_INVALID,
                        "device_index: expected the tensors on the current CUDA device %d (phase 2 runs on it: make "
                        "device %d current first), got tensors on device %d",
                        current, device_index, device_index);
    return LIG_SUCCESS;
}

/* The operators without a CUDA form yet (the paged and quantized forwards, the quantized logits, the
 * KL loss with the main attention's target) keep their slots NULL: api/ refuses them by name. A
 * slot backend.h gains is NULL here too until this backend fills it: the host compiler's warning
 * about the members left out (C++ warns where C does not) is that rule, not a slip. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
extern "C" const lig_backend lig_cuda_backend = {
    .name = "cuda",
    .device = LIG_DEVICE_CUDA,
    .check_stream = cuda_check_stream,
    .check_device = cuda_check_device,
    .plan_indexer_grad = cuda_plan_grad,
    .plan_indexer = cuda_plan_fwd,
    .plan_kl_loss_and_dy = cuda_plan_kl,
    .workspace_status = lig_cuda_workspace_status_read,
    .status_verdict = lig_cuda_status_verdict,
};
#pragma GCC diagnostic pop

extern "C" lig_status lig_cuda_status_verdict(const void *status_host) {
    cu_status s;
    memcpy(&s, status_host, sizeof s);
    if (s.magic != STATUS_MAGIC)
        return lig_fail(LIG_ERR_PARAM_INVALID,
                        "workspace: expected the workspace of a completed CUDA phase 2, got one without a status "
                        "(not run, not completed, or overwritten)");
    if (s.first_bad == NONE) return LIG_SUCCESS;
    if (s.code == ST_BAD_INDEX) {
        char where[96];
        if (s.tnd)
            snprintf(where, sizeof where, "[%lld,%lld,%lld]", (long long)s.row, (long long)s.g, (long long)s.slot);
        else
            snprintf(where, sizeof where, "[%lld,%lld,%lld,%lld]", (long long)s.b, (long long)s.row, (long long)s.g,
                     (long long)s.slot);
        return lig_fail(LIG_ERR_PARAM_INVALID,
                        "sparse_indices: expected values in [-1, %lld) (-1 or a key of batch %lld, whose length is "
                        "%lld) at %s (b,row,key head,slot), got %lld",
                        (long long)s.limit, (long long)s.b, (long long)s.limit, where, (long long)s.ivalue);
    }
    if (s.code == ST_BAD_TARGET)
        return lig_fail(LIG_ERR_PARAM_INVALID,
                        "target: expected probabilities >= 0 in counted slots, got %g at row %lld slot %lld", s.fvalue,
                        (long long)s.row, (long long)s.slot);
    return lig_fail(LIG_ERR_INNER, "workspace: expected a decoded failure in the status, got code %d", (int)s.code);
}

extern "C" lig_status lig_cuda_workspace_status_read(const void *workspace, void *stream) {
    cudaError_t e = cudaSuccess;
    if (stream) e = cudaStreamSynchronize((cudaStream_t)stream);
    unsigned char host[LIG_CUDA_STATUS_BYTES];
    if (e == cudaSuccess)
        e = cudaMemcpy(host, lig_ws_base((void *)workspace), sizeof host, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess)
        return lig_fail(LIG_ERR_RUNTIME, "workspace: expected to read the status from device memory, got CUDA error %d (%s)",
                        (int)e, cudaGetErrorString(e));
    return lig_cuda_status_verdict(host);
}

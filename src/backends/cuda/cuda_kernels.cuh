/* The CUDA backend's kernels, written once as __host__ __device__ bodies and run by an executor:
 * the device's (device_exec.cuh) or the host emulation's (tests/cuda/host_exec.h). Two kinds:
 *   flat bodies   a function of one thread index, X::launch(n, body): a grid-stride loop on the
 *                 device, a host loop in any order in the emulation; it owns the outputs it
 *                 writes and synchronises with no other thread;
 *   block bodies  THREADS threads sharing memory and meeting at barriers, phase by phase,
 *                 X::launch_blocks(nblocks, body) (the model is in kernels/block.cuh).
 * A pipeline (run_grad, run_fwd, run_kl) is a sequence of launches templated on the executor;
 * stream order makes each launch see the previous ones' writes, as the host loop does.
 *
 * The status protocol (docs/cuda.md): the workspace starts with a cu_status; the first launch
 * clears it, the checks record the lowest failing position with an atomic minimum, a one-thread
 * launch decodes it, and every later body (launched through after_checks, or testing failed()
 * itself) returns at once when it is set: nothing is written. */
#ifndef LIG_CUDA_KERNELS_CUH
#define LIG_CUDA_KERNELS_CUH

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/block.cuh"
#include "backends/cuda/kernels/scores_tc.cuh"
#include "backends/cuda/kernels/fwd.cuh"
#include "backends/cuda/kernels/grad.cuh"
#include "backends/cuda/kernels/kl.cuh"

#endif

/* The device executor of the pipelines (kernels/common.cuh, block.cuh): flat bodies as grid-stride
 * kernels, block bodies as one CUDA block per body block, all on the plan's stream. The host
 * emulation's executor (tests/cuda/host_exec.h) has the same members. */
#ifndef LIG_CUDA_DEVICE_EXEC_CUH
#define LIG_CUDA_DEVICE_EXEC_CUH

#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>

#include "backends/cuda/cuda_kernels.cuh"

namespace ligcu {

enum { FLAT_THREADS = 256 };
static const int64_t MAX_BLOCKS = 1 << 20;

template <class F>
__global__ void __launch_bounds__(FLAT_THREADS) grid_kernel(const F f, int64_t n) {
    const int64_t step = (int64_t)gridDim.x * FLAT_THREADS;
    for (int64_t i = (int64_t)blockIdx.x * FLAT_THREADS + threadIdx.x; i < n; i += step) f(i);
}

/* Body blocks beyond the grid are taken by the same CUDA blocks in turn (a block-stride loop): the
 * barrier after each phase also separates one body block from the next. */
template <class F>
__global__ void __launch_bounds__(F::THREADS) block_kernel(const F f, int64_t nblocks) {
    extern __shared__ __align__(128) unsigned char smem[]; /* WMMA tiles need 32-byte alignment */
    for (int64_t blk = blockIdx.x; blk < nblocks; blk += gridDim.x) {
        typename F::local l = typename F::local();
        for (int phase = 0; phase >= 0;) {
            const int next = f.step(phase, blk, (int)threadIdx.x, (char *)smem, l);
            __syncthreads();
            phase = next;
        }
    }
}

/* Launches on one stream; the first launch error is kept and the later launches are skipped.
 * cudaLaunchKernel returns the launch's own error, so lig never reads (and never clears, as
 * cudaGetLastError would) an error another library left in the runtime's last-error state. */
struct device_exec {
    cudaStream_t stream;
    cudaError_t err;
    uint64_t sort_needed = 0; /* set when CUB would need more temporary storage than phase 1 reserved */
    template <class F>
    void launch(int64_t n, const F &f) {
        if (n <= 0 || err != cudaSuccess) return;
        int64_t blocks = (n + FLAT_THREADS - 1) / FLAT_THREADS;
        if (blocks > MAX_BLOCKS) blocks = MAX_BLOCKS;
        F body = f;
        void *args[] = {(void *)&body, (void *)&n};
        err = cudaLaunchKernel((const void *)grid_kernel<F>, dim3((unsigned)blocks), dim3(FLAT_THREADS), args, 0,
                               stream);
    }
    /* at most max_grid CUDA blocks (a body that keeps per-block scratch in global memory indexes
     * it by body block % max_grid: blocks running at once never share it) */
    template <class F>
    void launch_blocks(int64_t nblocks, const F &f, int64_t max_grid = MAX_BLOCKS) {
        if (nblocks <= 0 || err != cudaSuccess) return;
        const uint64_t smem = f.smem_bytes();
        /* above the 48 KiB default a kernel must opt in (a function attribute: no stream work, so
         * it is allowed while a stream is being captured) */
        if (smem > 48 * 1024)
            err = cudaFuncSetAttribute((const void *)block_kernel<F>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)smem);
        if (err != cudaSuccess) return;
        const int64_t cap = max_grid < MAX_BLOCKS ? max_grid : MAX_BLOCKS;
        const int64_t blocks = nblocks < cap ? nblocks : cap;
        F body = f;
        void *args[] = {(void *)&body, (void *)&nblocks};
        err = cudaLaunchKernel((const void *)block_kernel<F>, dim3((unsigned)blocks), dim3(F::THREADS), args,
                               (size_t)smem, stream);
    }
    /* Stable sort of n pairs by the low `bits` bits of the keys: CUB's radix sort on double buffers
     * (keys[0] / pos[0] hold the input; nothing is allocated: its temporary storage is phase 1's
     * `temp`). Returns the buffer that holds the result, which CUB decides on the host. CUB checks
     * its own launches with cudaPeekAtLastError, which leaves the runtime's error state as it is. */
    int sort_pairs(uint64_t *const keys[2], uint32_t *const pos[2], int64_t n, int bits, void *temp,
                   uint64_t temp_bytes) {
        if (n <= 0 || err != cudaSuccess) return 0;
        cub::DoubleBuffer<uint64_t> k(keys[0], keys[1]);
        cub::DoubleBuffer<uint32_t> v(pos[0], pos[1]);
        size_t need = 0;
        err = cub::DeviceRadixSort::SortPairs(nullptr, need, k, v, (int)n, 0, bits, stream);
        if (err != cudaSuccess) return 0;
        if (need > temp_bytes) {
            sort_needed = need;
            err = cudaErrorInvalidValue;
            return 0;
        }
        size_t have = (size_t)temp_bytes;
        err = cub::DeviceRadixSort::SortPairs(temp, have, k, v, (int)n, 0, bits, stream);
        return k.selector;
    }
};

} // namespace ligcu

#endif

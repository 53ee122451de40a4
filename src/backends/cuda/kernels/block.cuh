/* Block-level kernel bodies: THREADS threads of one block that share memory and meet at barriers,
 * written once for the device and for the host emulation (tests/cuda/host_exec.h).
 *
 * A block body F is a struct with
 *   enum { THREADS = n };                      threads per block (a multiple of 32, at most 1024)
 *   struct local { ... };                      one thread's values kept across barriers (registers
 *                                              on the device), value-initialised per block
 *   uint64_t smem_bytes() const;               dynamic shared memory per block (16-byte aligned)
 *   LIG_HD int step(int phase, int64_t block, int tid, char *smem, local &l) const;
 * and is launched with X::launch_blocks(nblocks, body). A block runs phase 0, then the phase step
 * returned, until it returns -1; between two phases every thread of the block waits for all others
 * (__syncthreads on the device). So a loop over tiles is a cycle of phases, and every value a later
 * phase needs is in shared memory or in `local`. The next phase must be the same for every thread
 * of a block (a barrier that not all threads reach is undefined on the device): compute it from
 * shared memory or from values every thread holds. The emulation runs each phase for every thread
 * before any thread starts the next, in ascending, descending or shuffled thread order, and fails a
 * case when the threads disagree on the next phase; within a phase a thread must therefore neither
 * read what another thread writes in the same phase nor write what another writes.
 *
 * Warp collectives (warp_mma_16x16x16) are called by all 32 lanes of a warp in the same phase; the
 * emulation does the warp's whole operation in lane 0's call and nothing in the other lanes', so
 * their operands and result must not be touched by other lanes of that warp in that phase. */
#ifndef LIG_CUDA_KERNELS_BLOCK_CUH
#define LIG_CUDA_KERNELS_BLOCK_CUH

#include "backends/cuda/kernels/common.cuh"

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#endif

namespace ligcu {

enum { WARP = 32 };

/* C (16 x 16 fp32, row-major, leading dimension ldc) += A (16 x 16, row-major, lda) * B^T, where B
 * is 16 x 16 row-major (ldb): C[i][j] += sum_k A[i][k] * B[j][k]. A and B are 16-bit (`dtype`
 * DT_BF16 or DT_F16, raw bits) in shared memory; every product is exact in fp32 and the sum is fp32
 * (on the device the tensor core's fp32 sum, whose last bits may differ from a sequential sum; the
 * emulation sums k in order). Pointers 32-byte aligned, lda and ldb multiples of 8, ldc of 4. */
LIG_HD void warp_mma_16x16x16(int dtype, float *c, int ldc, const uint16_t *a, int lda, const uint16_t *b, int ldb,
                              int lane) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    (void)lane;
    using namespace nvcuda;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(acc, c, (unsigned)ldc, wmma::mem_row_major);
    if (dtype == DT_BF16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
        wmma::load_matrix_sync(fa, (const __nv_bfloat16 *)a, (unsigned)lda);
        wmma::load_matrix_sync(fb, (const __nv_bfloat16 *)b, (unsigned)ldb);
        wmma::mma_sync(acc, fa, fb, acc);
    } else {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
        wmma::load_matrix_sync(fa, (const __half *)a, (unsigned)lda);
        wmma::load_matrix_sync(fb, (const __half *)b, (unsigned)ldb);
        wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(c, acc, (unsigned)ldc, wmma::mem_row_major);
#elif defined(__CUDA_ARCH__)
    (void)dtype, (void)c, (void)ldc, (void)a, (void)lda, (void)b, (void)ldb, (void)lane;
    __trap(); /* lig's device code targets sm_80 and later (CMakeLists.txt); a host-only build never gets here */
#else
    if (lane != 0) return;
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) {
            float s = c[i * ldc + j];
            for (int k = 0; k < 16; k++) {
                const uint16_t x = a[i * lda + k], y = b[j * ldb + k];
                const float fx = dtype == DT_BF16 ? lig_bf16_to_f32(x) : lig_f16_to_f32(x);
                const float fy = dtype == DT_BF16 ? lig_bf16_to_f32(y) : lig_f16_to_f32(y);
                s += fx * fy;
            }
            c[i * ldc + j] = s;
        }
#endif
}

/* Level `level` (0, 1, ...) of a fixed-order pairwise sum of N values in shared memory (`v`, one
 * per thread, N a power of two): its pairing depends only on N, so the sum is the same on every
 * device, launch and in the emulation. Run one level per phase; after the level that returns false,
 * v[0] holds the sum. */
template <int N>
LIG_HD bool tree_sum_level(int level, int tid, double *v) {
    const int stride = (N >> 1) >> level;
    if (tid < stride) v[tid] += v[tid + stride];
    return stride > 1;
}

} // namespace ligcu

#endif // LIG_CUDA_KERNELS_BLOCK_CUH

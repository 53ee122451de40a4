/*
 * lig-cuda-bench: the CUDA backend at the DeepSeek shape (N1 64, N2 1, D 128, K 2048, bf16, causal
 * sparse_mode 3, B 1) for each S given, forward (2 * G * D flops per visible pair) and backward
 * (6 * G * D per counted slot) in both determinism modes, against the bf16 cuBLAS GEMM rate measured
 * on the same GPU (8192^3, fp32 accumulation). Prints a table; without a device it prints
 * "SKIPPED cuda-bench: no CUDA device" and exits 77.
 *   lig-cuda-bench [S ...]            default 4096 8192 16384
 *   LIG_BENCH_BUDGET_S=120            larger S are skipped once a single call took 1/8 of this
 */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"
#include "lig.h"

#define LK(call)                                                                                       \
    do {                                                                                               \
        lig_status s_ = (call);                                                                        \
        if (s_ != LIG_SUCCESS) {                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, lig_get_last_error());       \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)

__device__ __forceinline__ float hash_unit(unsigned long long i, unsigned salt) {
    unsigned long long z = i * 0x9e3779b97f4a7c15ull + salt;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (float)((z ^ (z >> 31)) >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
}
__global__ void fill_bf16(__nv_bfloat16 *p, long long n, unsigned salt, float scale) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        p[i] = __float2bfloat16(hash_unit((unsigned long long)i, salt) * scale);
}
/* Row t sees keys 0..t (causal, S1 == S2): K distinct visible keys, or all of them then -1. */
__global__ void fill_indices(int *idx, long long S, long long K) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < S * K; i += (long long)gridDim.x * blockDim.x) {
        const long long t = i / K, j = i % K, vis = t + 1;
        idx[i] = vis <= K ? (j < vis ? (int)j : -1) : (int)((j * vis) / K);
    }
}

static double gemm_tflops(void) {
    const int n = 8192;
    __nv_bfloat16 *a, *b;
    float *c;
    CUDA_OK(cudaMalloc(&a, sizeof(__nv_bfloat16) * n * n));
    CUDA_OK(cudaMalloc(&b, sizeof(__nv_bfloat16) * n * n));
    CUDA_OK(cudaMalloc(&c, sizeof(float) * n * n));
    fill_bf16<<<4096, 256>>>(a, (long long)n * n, 1, 1.0f);
    fill_bf16<<<4096, 256>>>(b, (long long)n * n, 2, 1.0f);
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 0.0;
    const float one = 1.0f, zero = 0.0f;
    cudaEvent_t e0, e1;
    CUDA_OK(cudaEventCreate(&e0));
    CUDA_OK(cudaEventCreate(&e1));
    float best = 1e30f;
    for (int rep = 0; rep < 6; rep++) {
        CUDA_OK(cudaEventRecord(e0));
        cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_16BF, n, b, CUDA_R_16BF, n, &zero, c,
                     CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        CUDA_OK(cudaEventRecord(e1));
        CUDA_OK(cudaEventSynchronize(e1));
        float ms;
        CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
        if (rep > 0 && ms < best) best = ms;
    }
    cublasDestroy(h);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    return 2.0 * n * (double)n * n / (best * 1e-3) / 1e12;
}

typedef struct bench_row {
    const char *op;
    long long S;
    const char *mode;
    double ms, tflops;
} bench_row;

int main(int argc, char **argv) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("SKIPPED cuda-bench: no CUDA device\n");
        return 77;
    }
    long long seqs[8] = {4096, 8192, 16384};
    int nseq = 3;
    if (argc > 1) {
        nseq = 0;
        for (int i = 1; i < argc && nseq < 8; i++) seqs[nseq++] = atoll(argv[i]);
    }
    const char *budget_env = getenv("LIG_BENCH_BUDGET_S");
    const double budget = budget_env ? atof(budget_env) : 120.0;
    cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    const double peak = gemm_tflops();
    printf("device: %s; bf16 cuBLAS GEMM 8192^3: %.1f TFLOP/s\n", prop.name, peak);
    const long long N1 = 64, D = 128, K = 2048;
    bench_row rows[64];
    int nrows = 0;
    bool stop = false;
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreate(&stream));
    cudaEvent_t e0, e1;
    CUDA_OK(cudaEventCreate(&e0));
    CUDA_OK(cudaEventCreate(&e1));
    for (int si = 0; si < nseq && !stop; si++) {
        const long long S = seqs[si];
        __nv_bfloat16 *q, *k, *w, *dy, *dq, *dk, *dw, *val;
        int *idx, *oidx;
        CUDA_OK(cudaMalloc(&q, 2 * S * N1 * D));
        CUDA_OK(cudaMalloc(&dq, 2 * S * N1 * D));
        CUDA_OK(cudaMalloc(&k, 2 * S * D));
        CUDA_OK(cudaMalloc(&dk, 2 * S * D));
        CUDA_OK(cudaMalloc(&w, 2 * S * N1));
        CUDA_OK(cudaMalloc(&dw, 2 * S * N1));
        CUDA_OK(cudaMalloc(&dy, 2 * S * K));
        CUDA_OK(cudaMalloc(&val, 2 * S * K));
        CUDA_OK(cudaMalloc(&idx, 4 * S * K));
        CUDA_OK(cudaMalloc(&oidx, 4 * S * K));
        fill_bf16<<<4096, 256>>>(q, S * N1 * D, 11, 1.0f);
        fill_bf16<<<4096, 256>>>(k, S * D, 12, 1.0f);
        fill_bf16<<<4096, 256>>>(w, S * N1, 13, 0.125f);
        fill_bf16<<<4096, 256>>>(dy, S * K, 14, 1.0f);
        fill_indices<<<4096, 256>>>(idx, S, K);
        CUDA_OK(cudaDeviceSynchronize());
        const int64_t qs[4] = {1, S, N1, D}, ks[4] = {1, S, 1, D}, ws_[3] = {1, S, N1}, ss[3] = {1, S, K};
        lig_tensor *tq = lig_create_tensor_on(q, LIG_BFLOAT16, 4, qs, NULL, LIG_DEVICE_CUDA, 0);
        lig_tensor *tk = lig_create_tensor_on(k, LIG_BFLOAT16, 4, ks, NULL, LIG_DEVICE_CUDA, 0);
        lig_tensor *tw = lig_create_tensor_on(w, LIG_BFLOAT16, 3, ws_, NULL, LIG_DEVICE_CUDA, 0);
        lig_tensor *tdy = lig_create_tensor_on(dy, LIG_BFLOAT16, 3, ss, NULL, LIG_DEVICE_CUDA, 0);
        lig_tensor *tidx = lig_create_tensor_on(idx, LIG_INT32, 3, ss, NULL, LIG_DEVICE_CUDA, 0);
        lig_tensor *toidx = lig_create_tensor_on(oidx, LIG_INT32, 3, ss, NULL, LIG_DEVICE_CUDA, 0);
        lig_tensor *tval = lig_create_tensor_on(val, LIG_BFLOAT16, 3, ss, NULL, LIG_DEVICE_CUDA, 0);
        lig_tensor *tdq = lig_create_tensor_on(dq, LIG_BFLOAT16, 4, qs, NULL, LIG_DEVICE_CUDA, 0);
        lig_tensor *tdk = lig_create_tensor_on(dk, LIG_BFLOAT16, 4, ks, NULL, LIG_DEVICE_CUDA, 0);
        lig_tensor *tdw = lig_create_tensor_on(dw, LIG_BFLOAT16, 3, ws_, NULL, LIG_DEVICE_CUDA, 0);
        double visible = 0, counted = 0;
        for (long long t = 0; t < S; t++) {
            visible += (double)(t + 1);
            counted += (double)(t + 1 < K ? t + 1 : K);
        }
        const size_t grad_bytes = (size_t)(2 * S * N1 * D + 2 * S * D + 2 * S * N1);
        unsigned char *first = (unsigned char *)malloc(grad_bytes), *again = (unsigned char *)malloc(grad_bytes);
        for (int op = 0; op < 3 && !stop; op++) { /* forward, backward deterministic, backward not */
            float best = 1e30f;
            for (int rep = 0; rep < 2; rep++) {
                uint64_t wsz = 0;
                lig_executor *e = NULL;
                if (op == 0)
                    LK(lig_indexer_get_workspace_size(tq, tk, tw, NULL, NULL, "BSND", K, 3, INT64_MAX, INT64_MAX, toidx,
                                                      tval, &wsz, &e));
                else
                    LK(lig_indexer_grad_get_workspace_size(tq, tk, tdy, tidx, tw, NULL, NULL, 0, "BSND", 3, INT64_MAX,
                                                           INT64_MAX, op == 1, tdq, tdk, tdw, &wsz, &e));
                void *ws = NULL;
                CUDA_OK(cudaMalloc(&ws, wsz));
                CUDA_OK(cudaEventRecord(e0, stream));
                if (op == 0) LK(lig_indexer(ws, wsz, e, stream));
                else LK(lig_indexer_grad(ws, wsz, e, stream));
                CUDA_OK(cudaEventRecord(e1, stream));
                LK(lig_workspace_status(LIG_DEVICE_CUDA, ws, stream));
                float ms;
                CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
                if (ms < best) best = ms;
                CUDA_OK(cudaFree(ws));
                if (op == 1) { /* determinism: rerun + memcmp of d_query, d_key, d_weights */
                    unsigned char *h = rep == 0 ? first : again;
                    CUDA_OK(cudaMemcpy(h, dq, 2 * S * N1 * D, cudaMemcpyDeviceToHost));
                    CUDA_OK(cudaMemcpy(h + 2 * S * N1 * D, dk, 2 * S * D, cudaMemcpyDeviceToHost));
                    CUDA_OK(cudaMemcpy(h + 2 * S * N1 * D + 2 * S * D, dw, 2 * S * N1, cudaMemcpyDeviceToHost));
                    if (rep == 1) {
                        if (memcmp(first, again, grad_bytes) != 0) {
                            printf("FAIL determinism: S %lld deterministic backward differs between two runs\n", S);
                            return 1;
                        }
                        printf("determinism: S %lld deterministic backward bitwise identical across 2 runs\n", S);
                    }
                    CUDA_OK(cudaMemset(dq, 0xff, 2 * S * N1 * D)); /* poison before the next call */
                    CUDA_OK(cudaMemset(dk, 0xff, 2 * S * D));
                    CUDA_OK(cudaMemset(dw, 0xff, 2 * S * N1));
                }
                if (ms * 1e-3 > budget / 8 && op != 1) break; /* one run is enough at this speed */
            }
            const double flops = op == 0 ? 2.0 * N1 * D * visible : 6.0 * N1 * D * counted;
            rows[nrows++] = (bench_row){op == 0 ? "forward" : "backward", S,
                                        op == 0 ? "-" : op == 1 ? "deterministic" : "atomic", best,
                                        flops / (best * 1e-3) / 1e12};
            printf("S %lld %s %s: %.2f ms\n", S, rows[nrows - 1].op, rows[nrows - 1].mode, best);
            fflush(stdout);
            if (best * 1e-3 > budget / 8 && si + 1 < nseq) {
                printf("budget: S %lld took %.1f s for one call; larger S skipped\n", S, best * 1e-3);
                stop = true;
            }
        }
        free(first);
        free(again);
        lig_tensor *all[] = {tq, tk, tw, tdy, tidx, toidx, tval, tdq, tdk, tdw};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) lig_destroy_tensor(all[i]);
        void *mem[] = {q, k, w, dy, dq, dk, dw, val, idx, oidx};
        for (size_t i = 0; i < sizeof mem / sizeof mem[0]; i++) cudaFree(mem[i]);
    }
    printf("\n| op | S | dK mode | ms | TFLOP/s | vs bf16 GEMM (%.0f TFLOP/s) |\n|---|---|---|---|---|---|\n", peak);
    for (int i = 0; i < nrows; i++)
        printf("| %s | %lld | %s | %.2f | %.2f | %.1f%% |\n", rows[i].op, rows[i].S, rows[i].mode, rows[i].ms,
               rows[i].tflops, peak > 0 ? 100.0 * rows[i].tflops / peak : 0.0);
    return 0;
}

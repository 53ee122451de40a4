/*
 * lig-cuda-bench: the CUDA backend at the DeepSeek shape (N1 64, N2 1, D 128, K 2048, bf16, causal
 * sparse_mode 3) for each problem given, forward (2 * G * D flops per visible pair) and backward
 * (6 * G * D per counted slot) in both determinism modes, against the bf16 cuBLAS GEMM rate measured
 * on the same GPU in the same run (8192^3, fp32 accumulation). Per row it prints the time (best of
 * the runs), TFLOP/s, the share of the GEMM rate, the workspace phase 1 asked for (the device memory
 * the operator needs beyond its tensors), and for the backward the determinism cost (deterministic /
 * atomic time). The deterministic backward runs twice and its outputs are compared byte for byte; a
 * sample of forward rows is checked (a row t < K selects keys 0..t by descending value); either
 * failing exits 1. Without a device it prints "SKIPPED cuda-bench: no CUDA device" and exits 77.
 *   lig-cuda-bench [S | BxS ...]      default 4096 8192 16384 32768 65536 131072 16x4096
 *   LIG_BENCH_BUDGET_S=120            a problem is skipped (said so) when the time spent so far plus
 *                                     its projection from the last problem run (forward ~ B S^2,
 *                                     backward ~ B S) exceeds this; a problem or workspace larger
 *                                     than the free device memory is skipped too
 */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
/* Row t of each batch sees keys 0..t (causal, S1 == S2): K distinct visible keys, or all of them then -1. */
__global__ void fill_indices(int *idx, long long B, long long S, long long K) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < B * S * K; i += (long long)gridDim.x * blockDim.x) {
        const long long t = (i / K) % S, j = i % K, vis = t + 1;
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
    const char *op, *mode;
    long long B, S;
    double ms, tflops;
    uint64_t workspace;  /* bytes phase 1 asked for */
    double det_ratio;    /* deterministic / atomic backward time (on the deterministic row), else < 0 */
    const char *rerun;   /* deterministic backward: "identical" (a difference exits 1), else "-" */
} bench_row;

typedef struct problem {
    long long B, S;
} problem;

/* "S" (B 1) or "BxS". */
static bool parse_problem(const char *arg, problem *p) {
    char *end = NULL;
    const long long a = strtoll(arg, &end, 10);
    p->B = 1;
    p->S = a;
    if (*end == 'x') {
        p->B = a;
        p->S = strtoll(end + 1, &end, 10);
    }
    return *end == 0 && p->B >= 1 && p->S >= 1;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double gib(double bytes) { return bytes / (double)(1ull << 30); }

/* A sample of the forward's own results, checked independently of lig: a row t < K sees keys 0..t,
 * all of them selected (a permutation of 0..t, then -1), by descending value, -inf after. */
static bool forward_sample_ok(const int *oidx, const __nv_bfloat16 *val, long long B, long long S, long long K) {
    int *h = (int *)malloc(sizeof(int) * K);
    __nv_bfloat16 *v = (__nv_bfloat16 *)malloc(sizeof(__nv_bfloat16) * K);
    unsigned char *seen = (unsigned char *)malloc(K);
    const long long last = (S < K ? S : K) - 1;
    const long long rows[3] = {0, last / 2, last};
    bool ok = true;
    for (long long b = 0; b < B && ok; b += (B > 1 ? B - 1 : 1))
        for (int r = 0; r < 3 && ok; r++) {
            const long long t = rows[r], at = (b * S + t) * K;
            CUDA_OK(cudaMemcpy(h, oidx + at, sizeof(int) * K, cudaMemcpyDeviceToHost));
            CUDA_OK(cudaMemcpy(v, val + at, sizeof(__nv_bfloat16) * K, cudaMemcpyDeviceToHost));
            memset(seen, 0, K);
            for (long long j = 0; j < K && ok; j++) {
                const float x = __bfloat162float(v[j]);
                if (j <= t) {
                    ok = h[j] >= 0 && h[j] <= t && !seen[h[j]] && (j == 0 || x <= __bfloat162float(v[j - 1]));
                    if (ok) seen[h[j]] = 1;
                } else {
                    ok = h[j] == -1 && x < -3e38f;
                }
                if (!ok)
                    printf("FAIL forward sample: B %lld S %lld batch %lld row %lld slot %lld: index %d value %g\n", B,
                           S, b, t, j, h[j], x);
            }
        }
    free(h);
    free(v);
    free(seen);
    return ok;
}

int main(int argc, char **argv) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("SKIPPED cuda-bench: no CUDA device\n");
        return 77;
    }
    problem probs[16] = {{1, 4096}, {1, 8192}, {1, 16384}, {1, 32768}, {1, 65536}, {1, 131072}, {16, 4096}};
    int nprob = 7;
    if (argc > 1) {
        nprob = 0;
        for (int i = 1; i < argc && nprob < 16; i++) {
            if (!parse_problem(argv[i], &probs[nprob])) {
                fprintf(stderr, "lig-cuda-bench: expected S or BxS (positive integers), got \"%s\"\n", argv[i]);
                return 2;
            }
            nprob++;
        }
    }
    const char *budget_env = getenv("LIG_BENCH_BUDGET_S");
    const double budget = budget_env ? atof(budget_env) : 120.0;
    const double t_start = now_s();
    cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    const double peak = gemm_tflops();
    size_t free_mem = 0, total_mem = 0;
    CUDA_OK(cudaMemGetInfo(&free_mem, &total_mem));
    printf("device: %s, %.1f GiB; bf16 cuBLAS GEMM 8192^3: %.1f TFLOP/s; budget %.0f s\n", prop.name,
           gib((double)total_mem), peak, budget);
    const long long N1 = 64, D = 128, K = 2048;
    bench_row rows[64];
    int nrows = 0;
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreate(&stream));
    cudaEvent_t e0, e1;
    CUDA_OK(cudaEventCreate(&e0));
    CUDA_OK(cudaEventCreate(&e1));
    double last_s = 0, last_work2 = 0, last_work1 = 0; /* the last problem run: wall time, B*S^2, B*S */
    for (int pi = 0; pi < nprob; pi++) {
        const long long B = probs[pi].B, S = probs[pi].S, R = B * S;
        const double work2 = (double)B * S * S, work1 = (double)R;
        if (last_s > 0) {
            const double r2 = work2 / last_work2, r1 = work1 / last_work1;
            const double projected = last_s * (r2 > r1 ? r2 : r1);
            if (now_s() - t_start + projected > budget) {
                printf("budget: B %lld S %lld skipped (projected %.0f s, %.0f s of %.0f s spent)\n", B, S, projected,
                       now_s() - t_start, budget);
                continue;
            }
        }
        const double tensor_bytes = (double)R * (2.0 * (2 * N1 * D + 2 * D + 2 * N1 + 2 * K) + 4.0 * 2 * K);
        CUDA_OK(cudaMemGetInfo(&free_mem, &total_mem));
        if (tensor_bytes > 0.9 * (double)free_mem) {
            printf("memory: B %lld S %lld skipped (tensors %.1f GiB, %.1f GiB free)\n", B, S, gib(tensor_bytes),
                   gib((double)free_mem));
            continue;
        }
        const double t_problem = now_s();
        __nv_bfloat16 *q, *k, *w, *dy, *dq, *dk, *dw, *val;
        int *idx, *oidx;
        CUDA_OK(cudaMalloc(&q, 2 * R * N1 * D));
        CUDA_OK(cudaMalloc(&dq, 2 * R * N1 * D));
        CUDA_OK(cudaMalloc(&k, 2 * R * D));
        CUDA_OK(cudaMalloc(&dk, 2 * R * D));
        CUDA_OK(cudaMalloc(&w, 2 * R * N1));
        CUDA_OK(cudaMalloc(&dw, 2 * R * N1));
        CUDA_OK(cudaMalloc(&dy, 2 * R * K));
        CUDA_OK(cudaMalloc(&val, 2 * R * K));
        CUDA_OK(cudaMalloc(&idx, 4 * R * K));
        CUDA_OK(cudaMalloc(&oidx, 4 * R * K));
        fill_bf16<<<4096, 256>>>(q, R * N1 * D, 11, 1.0f);
        fill_bf16<<<4096, 256>>>(k, R * D, 12, 1.0f);
        fill_bf16<<<4096, 256>>>(w, R * N1, 13, 0.125f);
        fill_bf16<<<4096, 256>>>(dy, R * K, 14, 1.0f);
        fill_indices<<<4096, 256>>>(idx, B, S, K);
        CUDA_OK(cudaDeviceSynchronize());
        const int64_t qs[4] = {B, S, N1, D}, ks[4] = {B, S, 1, D}, ws_[3] = {B, S, N1}, ss[3] = {B, S, K};
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
        visible *= (double)B;
        counted *= (double)B;
        const size_t grad_bytes = (size_t)(2 * R * N1 * D + 2 * R * D + 2 * R * N1);
        unsigned char *first = (unsigned char *)malloc(grad_bytes), *again = (unsigned char *)malloc(grad_bytes);
        if (!first || !again) {
            fprintf(stderr, "lig-cuda-bench: expected %.1f GiB of host memory for the rerun check, got none\n",
                    gib(2.0 * grad_bytes));
            return 1;
        }
        int det_row = -1;
        for (int op = 0; op < 3; op++) { /* forward, backward deterministic, backward atomic */
            float best = 1e30f;
            uint64_t wsz = 0;
            bool skipped = false;
            for (int rep = 0; rep < 2; rep++) {
                lig_executor *e = NULL;
                if (op == 0)
                    LK(lig_indexer_get_workspace_size(tq, tk, tw, NULL, NULL, "BSND", K, 3, INT64_MAX, INT64_MAX, toidx,
                                                      tval, &wsz, &e));
                else
                    LK(lig_indexer_grad_get_workspace_size(tq, tk, tdy, tidx, tw, NULL, NULL, 0, "BSND", 3, INT64_MAX,
                                                           INT64_MAX, op == 1, tdq, tdk, tdw, &wsz, &e));
                CUDA_OK(cudaMemGetInfo(&free_mem, &total_mem));
                if ((double)wsz > 0.95 * (double)free_mem) {
                    printf("memory: B %lld S %lld %s: workspace %.1f GiB, %.1f GiB free: skipped\n", B, S,
                           op == 0 ? "forward" : "backward", gib((double)wsz), gib((double)free_mem));
                    lig_destroy_executor(e);
                    skipped = true;
                    break;
                }
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
                if (op == 0 && rep == 0 && !forward_sample_ok(oidx, val, B, S, K)) return 1;
                if (op == 1) { /* determinism: rerun + memcmp of d_query, d_key, d_weights */
                    unsigned char *h = rep == 0 ? first : again;
                    CUDA_OK(cudaMemcpy(h, dq, 2 * R * N1 * D, cudaMemcpyDeviceToHost));
                    CUDA_OK(cudaMemcpy(h + 2 * R * N1 * D, dk, 2 * R * D, cudaMemcpyDeviceToHost));
                    CUDA_OK(cudaMemcpy(h + 2 * R * N1 * D + 2 * R * D, dw, 2 * R * N1, cudaMemcpyDeviceToHost));
                    if (rep == 1) {
                        if (memcmp(first, again, grad_bytes) != 0) {
                            printf("FAIL determinism: B %lld S %lld deterministic backward differs between two runs\n",
                                   B, S);
                            return 1;
                        }
                        printf("determinism: B %lld S %lld deterministic backward bitwise identical across 2 runs\n",
                               B, S);
                    }
                    CUDA_OK(cudaMemset(dq, 0xff, 2 * R * N1 * D)); /* poison before the next call */
                    CUDA_OK(cudaMemset(dk, 0xff, 2 * R * D));
                    CUDA_OK(cudaMemset(dw, 0xff, 2 * R * N1));
                }
                if (ms * 1e-3 > budget / 8 && op != 1) break; /* one run is enough at this speed */
            }
            if (skipped) continue;
            const double flops = op == 0 ? 2.0 * N1 * D * visible : 6.0 * N1 * D * counted;
            rows[nrows] = (bench_row){op == 0 ? "forward" : "backward", op == 0 ? "-" : op == 1 ? "deterministic" : "atomic",
                                      B, S, best, flops / (best * 1e-3) / 1e12, wsz, -1.0,
                                      op == 1 ? "identical" : "-"};
            if (op == 1) det_row = nrows;
            if (op == 2 && det_row >= 0) rows[det_row].det_ratio = rows[det_row].ms / best;
            printf("B %lld S %lld %s %s: %.2f ms, workspace %.3f GiB\n", B, S, rows[nrows].op, rows[nrows].mode, best,
                   gib((double)wsz));
            fflush(stdout);
            nrows++;
        }
        free(first);
        free(again);
        lig_tensor *all[] = {tq, tk, tw, tdy, tidx, toidx, tval, tdq, tdk, tdw};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) lig_destroy_tensor(all[i]);
        void *mem[] = {q, k, w, dy, dq, dk, dw, val, idx, oidx};
        for (size_t i = 0; i < sizeof mem / sizeof mem[0]; i++) cudaFree(mem[i]);
        last_s = now_s() - t_problem;
        last_work2 = work2;
        last_work1 = work1;
    }
    printf("\n| op | B | S | dK mode | ms | TFLOP/s | vs bf16 GEMM (%.0f TFLOP/s) | workspace GiB | det / atomic | "
           "rerun |\n|---|---|---|---|---|---|---|---|---|---|\n",
           peak);
    for (int i = 0; i < nrows; i++) {
        char ratio[32] = "-";
        if (rows[i].det_ratio > 0) snprintf(ratio, sizeof ratio, "%.2fx", rows[i].det_ratio);
        printf("| %s | %lld | %lld | %s | %.2f | %.2f | %.1f%% | %.3f | %s | %s |\n", rows[i].op, rows[i].B, rows[i].S,
               rows[i].mode, rows[i].ms, rows[i].tflops, peak > 0 ? 100.0 * rows[i].tflops / peak : 0.0,
               gib((double)rows[i].workspace), ratio, rows[i].rerun);
    }
    return 0;
}

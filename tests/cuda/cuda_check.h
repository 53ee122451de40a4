/* CUDA_OK(call): a failing CUDA runtime call in a test or benchmark prints where and why, then
 * exits 1 (the harness has nothing sensible to continue with). */
#ifndef LIG_TESTS_CUDA_CHECK_H
#define LIG_TESTS_CUDA_CHECK_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CUDA_OK(call)                                                                               \
    do {                                                                                            \
        cudaError_t e_ = (call);                                                                    \
        if (e_ != cudaSuccess) {                                                                    \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)

#endif

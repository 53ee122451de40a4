/* fp32 GEMM for the operators' small block products, AVX2 + FMA:
 *   C[m][n] (+)= sum_k a[m*a_rs + k*a_cs] * B[k*ldb + n]
 * `a` is read by broadcasts, so any strides work (the operators pass a matrix or its
 * transpose without copying); B rows and C rows are unit-stride.
 * Micro-kernel: 6 rows x 16 columns = 12 ymm accumulators + 2 B vectors + 1 broadcast;
 * per k step 2 B loads and 6 broadcasts feed 12 FMAs. A last column tile of 8 or fewer
 * (e.g. the scores of a group of 8 heads) uses 12 rows x 8 columns instead, so that half of
 * every FMA is not spent on masked-off lanes. Columns are tiled outermost so that the B
 * panel of a column tile stays in L1 across the row tiles. */
#include <immintrin.h>
#include <stdbool.h>

#include "kernels/kernels.h"

#define MR 6
#define NR 16
#define MR8 12 /* rows of the 8-column micro-kernel */

static inline __attribute__((always_inline)) void tile(const int mr, const bool full, int64_t K, const float *a,
                                                       int64_t a_rs, int64_t a_cs, const float *b, int64_t ldb,
                                                       float *c, int64_t ldc, bool accumulate, __m256i mask0,
                                                       __m256i mask1) {
    __m256 acc[MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) {
        if (accumulate) {
            acc[i][0] = full ? _mm256_loadu_ps(c + i * ldc) : _mm256_maskload_ps(c + i * ldc, mask0);
            acc[i][1] = full ? _mm256_loadu_ps(c + i * ldc + 8) : _mm256_maskload_ps(c + i * ldc + 8, mask1);
        } else {
            acc[i][0] = _mm256_setzero_ps();
            acc[i][1] = _mm256_setzero_ps();
        }
    }
    for (int64_t k = 0; k < K; k++) {
        const float *bk = b + k * ldb;
        const __m256 b0 = full ? _mm256_loadu_ps(bk) : _mm256_maskload_ps(bk, mask0);
        const __m256 b1 = full ? _mm256_loadu_ps(bk + 8) : _mm256_maskload_ps(bk + 8, mask1);
        const float *ak = a + k * a_cs;
#pragma GCC unroll 6
        for (int i = 0; i < mr; i++) {
            const __m256 x = _mm256_broadcast_ss(ak + i * a_rs);
            acc[i][0] = _mm256_fmadd_ps(x, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(x, b1, acc[i][1]);
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) {
        if (full) {
            _mm256_storeu_ps(c + i * ldc, acc[i][0]);
            _mm256_storeu_ps(c + i * ldc + 8, acc[i][1]);
        } else {
            _mm256_maskstore_ps(c + i * ldc, mask0, acc[i][0]);
            _mm256_maskstore_ps(c + i * ldc + 8, mask1, acc[i][1]);
        }
    }
}

/* Rows of a tile: one specialised body per count, so the accumulators stay in registers. */
static inline __attribute__((always_inline)) void tile_rows(int64_t mr, const bool full, int64_t K, const float *a,
                                                            int64_t a_rs, int64_t a_cs, const float *b, int64_t ldb,
                                                            float *c, int64_t ldc, bool accumulate, __m256i m0,
                                                            __m256i m1) {
    switch (mr) {
    case 6: tile(6, full, K, a, a_rs, a_cs, b, ldb, c, ldc, accumulate, m0, m1); break;
    case 5: tile(5, full, K, a, a_rs, a_cs, b, ldb, c, ldc, accumulate, m0, m1); break;
    case 4: tile(4, full, K, a, a_rs, a_cs, b, ldb, c, ldc, accumulate, m0, m1); break;
    case 3: tile(3, full, K, a, a_rs, a_cs, b, ldb, c, ldc, accumulate, m0, m1); break;
    case 2: tile(2, full, K, a, a_rs, a_cs, b, ldb, c, ldc, accumulate, m0, m1); break;
    default: tile(1, full, K, a, a_rs, a_cs, b, ldb, c, ldc, accumulate, m0, m1); break;
    }
}

/* The 8-column micro-kernel: mr <= 12 rows, 12 accumulators, 1 B load per k step. */
static inline __attribute__((always_inline)) void tile8(const int mr, const bool full, int64_t K, const float *a,
                                                        int64_t a_rs, int64_t a_cs, const float *b, int64_t ldb,
                                                        float *c, int64_t ldc, bool accumulate, __m256i mask) {
    __m256 acc[MR8];
#pragma GCC unroll 12
    for (int i = 0; i < mr; i++)
        acc[i] = !accumulate ? _mm256_setzero_ps()
                 : full      ? _mm256_loadu_ps(c + i * ldc)
                             : _mm256_maskload_ps(c + i * ldc, mask);
    for (int64_t k = 0; k < K; k++) {
        const __m256 b0 = full ? _mm256_loadu_ps(b + k * ldb) : _mm256_maskload_ps(b + k * ldb, mask);
        const float *ak = a + k * a_cs;
#pragma GCC unroll 12
        for (int i = 0; i < mr; i++) acc[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(ak + i * a_rs), b0, acc[i]);
    }
#pragma GCC unroll 12
    for (int i = 0; i < mr; i++) {
        if (full) _mm256_storeu_ps(c + i * ldc, acc[i]);
        else _mm256_maskstore_ps(c + i * ldc, mask, acc[i]);
    }
}

static void columns8(int64_t M, int64_t nr, int64_t K, const float *a, int64_t a_rs, int64_t a_cs, const float *b,
                     int64_t ldb, float *c, int64_t ldc, bool accumulate) {
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)nr), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const bool full = nr == 8;
    int64_t m = 0;
    for (; m + MR8 <= M; m += MR8) {
        if (full) tile8(MR8, true, K, a + m * a_rs, a_rs, a_cs, b, ldb, c + m * ldc, ldc, accumulate, mask);
        else tile8(MR8, false, K, a + m * a_rs, a_rs, a_cs, b, ldb, c + m * ldc, ldc, accumulate, mask);
    }
    for (; m < M; m += 4) { /* the remaining rows, four at a time */
        const int64_t mr = M - m < 4 ? M - m : 4;
        const float *am = a + m * a_rs;
        float *cm = c + m * ldc;
        switch (mr) {
        case 4: tile8(4, false, K, am, a_rs, a_cs, b, ldb, cm, ldc, accumulate, mask); break;
        case 3: tile8(3, false, K, am, a_rs, a_cs, b, ldb, cm, ldc, accumulate, mask); break;
        case 2: tile8(2, false, K, am, a_rs, a_cs, b, ldb, cm, ldc, accumulate, mask); break;
        default: tile8(1, false, K, am, a_rs, a_cs, b, ldb, cm, ldc, accumulate, mask); break;
        }
    }
}

void lig_sgemm__avx2(int64_t M, int64_t N, int64_t K, const float *a, int64_t a_rs, int64_t a_cs, const float *b,
                     int64_t ldb, float *c, int64_t ldc, bool accumulate) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int64_t n0 = 0; n0 < N; n0 += NR) {
        const int64_t nr = N - n0 < NR ? N - n0 : NR;
        if (nr <= 8) {
            columns8(M, nr, K, a, a_rs, a_cs, b + n0, ldb, c + n0, ldc, accumulate);
            break;
        }
        const bool full = nr == NR;
        /* lane i of a partial tile is live when i < nr (low half) or i + 8 < nr (high half) */
        const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)nr), lanes);
        const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)nr - 8), lanes);
        for (int64_t m0r = 0; m0r < M; m0r += MR) {
            const int64_t mr = M - m0r < MR ? M - m0r : MR;
            const float *am = a + m0r * a_rs;
            float *cm = c + m0r * ldc + n0;
            if (full && mr == MR) tile(MR, true, K, am, a_rs, a_cs, b + n0, ldb, cm, ldc, accumulate, m0, m1);
            else if (full) tile_rows(mr, true, K, am, a_rs, a_cs, b + n0, ldb, cm, ldc, accumulate, m0, m1);
            else tile_rows(mr, false, K, am, a_rs, a_cs, b + n0, ldb, cm, ldc, accumulate, m0, m1);
        }
    }
}

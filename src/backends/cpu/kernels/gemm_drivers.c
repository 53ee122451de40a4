/* The macro loops over a set's GEMM micro-kernels (see kernel_set.h), and the int8 kernels' shared packing. */
#include <stddef.h>
#include <string.h>

#include "backends/cpu/kernels/kernel_set.h"

void lig_f32_gemm(const lig_f32_gemm_config *cfg, int64_t M, int64_t N, int64_t K, const float *a, int64_t a_rs,
                  int64_t a_cs, const float *b, int64_t ldb, float *c, int64_t ldc, bool accumulate) {
    for (int64_t n0 = 0; n0 < N; n0 += cfg->nr) {
        const int64_t nr = N - n0 < cfg->nr ? N - n0 : cfg->nr;
        const bool narrowest = nr <= cfg->narrowest_nr, narrow = nr <= cfg->narrow_nr;
        const int64_t mr = narrowest ? cfg->narrowest_mr : narrow ? cfg->narrow_mr : cfg->mr;
        const lig_f32_gemm_ukernel_fn ukernel = narrowest ? cfg->narrowest_ukernel : narrow ? cfg->narrow_ukernel : cfg->ukernel;
        for (int64_t m0 = 0; m0 < M; m0 += mr)
            ukernel(M - m0 < mr ? M - m0 : mr, nr, K, a + m0 * a_rs, a_rs, a_cs, b + n0, ldb, c + m0 * ldc + n0, ldc,
                    accumulate);
    }
}

void lig_bf16_gemm(const lig_bf16_gemm_config *cfg, int64_t M, int64_t N, int64_t K, const uint16_t *a, int64_t lda,
                   const uint16_t *b, int64_t ldb, float *c, int64_t ldc, bool accumulate) {
    if (cfg->tiles && M % cfg->mr == 0 && N % cfg->nr == 0 && K % cfg->kr == 0) {
        cfg->tiles(M, N, K, a, lda, b, ldb, c, ldc, accumulate);
        return;
    }
    for (int64_t n0 = 0; n0 < N; n0 += cfg->nr) {
        const int64_t nr = N - n0 < cfg->nr ? N - n0 : cfg->nr;
        for (int64_t m0 = 0; m0 < M; m0 += cfg->mr)
            cfg->ukernel(M - m0 < cfg->mr ? M - m0 : cfg->mr, nr, K, a + m0 * lda, lda, b + 2 * n0, ldb,
                         c + m0 * ldc + n0, ldc, accumulate);
    }
}

int64_t lig_i8_panel_bytes(const lig_i8_gemm_config *cfg, int64_t K) {
    const int64_t kp = (K + cfg->kr - 1) / cfg->kr * cfg->kr;
    const int64_t bytes = kp * cfg->nr * cfg->b_elem_bytes + cfg->b_panel_extra;
    return (bytes + 63) / 64 * 64;
}

int64_t lig_i8_packed_b_bytes(const lig_i8_gemm_config *cfg, int64_t K, int64_t N) {
    return (N + cfg->nr - 1) / cfg->nr * lig_i8_panel_bytes(cfg, K);
}

void lig_i8_gemm(const lig_i8_gemm_config *cfg, int64_t M, int64_t N, int64_t K, const int8_t *a, int64_t lda,
                 const void *b_packed, int32_t *c, int64_t ldc, bool accumulate) {
    const int64_t panel = lig_i8_panel_bytes(cfg, K);
    for (int64_t n0 = 0, p = 0; n0 < N; n0 += cfg->nr, p++) {
        const int64_t nr = N - n0 < cfg->nr ? N - n0 : cfg->nr;
        const void *bp = (const unsigned char *)b_packed + p * panel;
        for (int64_t m0 = 0; m0 < M; m0 += cfg->mr)
            cfg->ukernel(M - m0 < cfg->mr ? M - m0 : cfg->mr, nr, K, a + m0 * lda, lda, bp, c + m0 * ldc + n0, ldc,
                         accumulate);
    }
}

void lig_i8_pack_int16_pairs(int64_t nr, int64_t K, int64_t N, const int8_t *src, int64_t ld, void *packed,
                             int64_t panel_bytes) {
    const int64_t np = (K + 1) / 2;
    for (int64_t n0 = 0, p = 0; n0 < N; n0 += nr, p++) {
        int16_t *o = (int16_t *)(void *)((char *)packed + p * panel_bytes);
        for (int64_t j = 0; j < nr; j++) {
            const int8_t *col = n0 + j < N ? src + (n0 + j) * ld : NULL;
            if (col && K % 2 == 0) /* a whole column (the usual case): no test per value */
                for (int64_t q = 0; q < np; q++) {
                    o[(q * nr + j) * 2] = col[2 * q];
                    o[(q * nr + j) * 2 + 1] = col[2 * q + 1];
                }
            else
                for (int64_t q = 0; q < np; q++)
                    for (int64_t e = 0; e < 2; e++)
                        o[(q * nr + j) * 2 + e] = col && 2 * q + e < K ? col[2 * q + e] : 0;
        }
    }
}

void lig_i8_pack_u8s8_quads(int64_t nr, int64_t K, int64_t N, const int8_t *src, int64_t ld, void *packed,
                            int64_t panel_bytes) {
    const int64_t nq = (K + 3) / 4;
    for (int64_t n0 = 0, p = 0; n0 < N; n0 += nr, p++) {
        int8_t *o = (int8_t *)packed + p * panel_bytes;
        for (int64_t j = 0; j < nr; j++) {
            const int8_t *col = n0 + j < N ? src + (n0 + j) * ld : NULL;
            int32_t sum = 0;
            if (col && K % 4 == 0) { /* a whole column: quads copied as they are (the usual case, D % 4 == 0) */
                for (int64_t q = 0; q < nq; q++) memcpy(o + (q * nr + j) * 4, col + 4 * q, 4);
                for (int64_t k = 0; k < K; k++) sum += col[k];
            } else {
                for (int64_t q = 0; q < nq; q++)
                    for (int64_t e = 0; e < 4; e++) {
                        const int8_t v = col && 4 * q + e < K ? col[4 * q + e] : 0;
                        o[(q * nr + j) * 4 + e] = v;
                        sum += v;
                    }
            }
            /* |sum| <= 128 K <= 2^23 for K <= 65536: 128 * sum fits int32 (|.| <= 2^30) */
            const int32_t corr = 128 * sum;
            memcpy(o + nq * nr * 4 + j * (int64_t)sizeof corr, &corr, sizeof corr);
        }
    }
}

void lig_i8_pack_runs(const lig_i8_run_layout *layout, int64_t K, int64_t N, const int8_t *src, int64_t ld,
                      void *packed, int64_t panel_bytes) {
    const int64_t nr = layout->nr, run = layout->run, cols = layout->cols;
    const int64_t kp = (K + layout->kr - 1) / layout->kr * layout->kr;
    for (int64_t n0 = 0, p = 0; n0 < N; n0 += nr, p++) {
        char *o = (char *)packed + p * panel_bytes;
        for (int64_t j = 0; j < nr; j++) {
            const int8_t *col = n0 + j < N ? src + (n0 + j) * ld : NULL;
            for (int64_t k = 0; k < kp; k++) {
                const int8_t v = col && k < K ? col[k] : 0;
                const int64_t at = ((k / run) * (nr / cols) + j / cols) * run * cols + (j % cols) * run + k % run;
                if (layout->int16) ((int16_t *)(void *)o)[at] = v;
                else ((int8_t *)o)[at] = v;
            }
        }
    }
}

int64_t lig_mxfp4_panel_bytes(int64_t nr, int64_t nblk) {
    /* the values, then one int32 per column and block; a multiple of 64 bytes when nr is a multiple of 16 */
    return nblk * 32 * nr + nblk * nr * (int64_t)sizeof(int32_t);
}

void lig_mxfp4_pack_q(int64_t nr, int32_t q_offset, int64_t nblk, int64_t ncols, const int8_t *src, int64_t ld,
                      const uint8_t *exp, void *packed, int64_t panel_bytes) {
    const int64_t nq = nblk * 8;
    for (int64_t n0 = 0, p = 0; n0 < ncols; n0 += nr, p++) {
        uint8_t *o = (uint8_t *)packed + p * panel_bytes;
        for (int64_t j = 0; j < nr; j++) {
            const int8_t *col = n0 + j < ncols ? src + (n0 + j) * ld : NULL;
            /* doubled e2m1 values lie in [-12, 12]: + q_offset stays a byte */
            for (int64_t k = 0; k < nq * 4; k++)
                o[((k / 4) * nr + j) * 4 + k % 4] = (uint8_t)((col ? col[k] : 0) + q_offset);
            for (int64_t b = 0; b < nblk; b++) {
                /* a missing column gets a harmless exponent (its values are zero, its dots unread) */
                const int32_t e = col ? (int32_t)exp[(n0 + j) * nblk + b] - 129 : 0;
                const int32_t bits = (int32_t)((uint32_t)e << 23);
                memcpy(o + nq * nr * 4 + (b * nr + j) * (int64_t)sizeof bits, &bits, sizeof bits);
            }
        }
    }
}

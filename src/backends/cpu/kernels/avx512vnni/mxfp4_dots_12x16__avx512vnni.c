/* MXFP4 block-dot micro-kernel, 12 key rows x 16 query columns, AVX-512 VNNI (see kernels.h,
 * lig_mxfp4_dots_kernel).
 *
 * vpdpbusd multiplies unsigned by signed bytes: the packed query values are Q + 12 (in [0, 24]) and
 * the key values K (signed, [-12, 12]) are each one 32-bit broadcast folded into the instruction
 * ({1to16}, in asm); each block's accumulator starts at the key row's correction -12 * sum K, so after the
 * block's 8 quads it holds P = sum Q K exactly (every partial sum is within 32 * 24 * 12 + 12 * 384).
 * Then one vcvtdq2ps (exact: |P| <= 4608), one vpaddd making the bits of 2^(e + f) (the query
 * panel's per-column exponents plus the key row's, broadcast) and one vfmadd231ps into the row's
 * fp32 sum: the product is exact (the engine's check), so the fused add rounds as the portable
 * engine's separate add does. Registers: 12 accumulators, 12 sums, the query quad. */
#include <immintrin.h>

#include "backends/cpu/kernels/avx512vnni/avx512vnni.h"
#include "backends/cpu/kernels/tile_rows.h"

#define MR 12
#define NR 16

/* acc += q (u8) . the key quad at k (s8, broadcast {1to16} inside the instruction), as
 * _mm512_dpbusd_epi32(acc, q, _mm512_set1_epi32(quad)); in asm because GCC 12 kept the broadcast
 * apart (a vpbroadcastd and a register copy per vpdpbusd) */
static inline __attribute__((always_inline)) void dot_quad(__m512i *acc, __m512i q, const int8_t *k) {
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(*acc) : "v"(q), "m"(*(const int32_t *)(const void *)k));
}

/* A whole block (8 quads) of 6 rows in one statement, the quads of Q loaded into zmm31: with the
 * multiply-adds as separate statements GCC 12 copied accumulators between registers (a dozen
 * moves per 12 multiply-adds at some quads). The six key rows are addressed from two bases and the
 * row stride (k, k + ldk, k + 2 ldk; k3 = k + 3 ldk, ...), four general registers in all: with a
 * register and an "m" operand per row, clang's sanitizer builds ran out of registers. The "memory"
 * clobber stands for the reads (the operands no longer name them). */
static inline __attribute__((always_inline)) void block_6(__m512i acc[6], const uint8_t *qb, const int8_t *k,
                                                          int64_t ldk) {
    __asm__("vmovdqu64 0(%[q]), %%zmm31\n\t"
            "vpdpbusd 0(%[k])%{1to16%}, %%zmm31, %[a0]\n\t"
            "vpdpbusd 0(%[k],%[l],1)%{1to16%}, %%zmm31, %[a1]\n\t"
            "vpdpbusd 0(%[k],%[l],2)%{1to16%}, %%zmm31, %[a2]\n\t"
            "vpdpbusd 0(%[k3])%{1to16%}, %%zmm31, %[a3]\n\t"
            "vpdpbusd 0(%[k3],%[l],1)%{1to16%}, %%zmm31, %[a4]\n\t"
            "vpdpbusd 0(%[k3],%[l],2)%{1to16%}, %%zmm31, %[a5]\n\t"
            "vmovdqu64 64(%[q]), %%zmm31\n\t"
            "vpdpbusd 4(%[k])%{1to16%}, %%zmm31, %[a0]\n\t"
            "vpdpbusd 4(%[k],%[l],1)%{1to16%}, %%zmm31, %[a1]\n\t"
            "vpdpbusd 4(%[k],%[l],2)%{1to16%}, %%zmm31, %[a2]\n\t"
            "vpdpbusd 4(%[k3])%{1to16%}, %%zmm31, %[a3]\n\t"
            "vpdpbusd 4(%[k3],%[l],1)%{1to16%}, %%zmm31, %[a4]\n\t"
            "vpdpbusd 4(%[k3],%[l],2)%{1to16%}, %%zmm31, %[a5]\n\t"
            "vmovdqu64 128(%[q]), %%zmm31\n\t"
            "vpdpbusd 8(%[k])%{1to16%}, %%zmm31, %[a0]\n\t"
            "vpdpbusd 8(%[k],%[l],1)%{1to16%}, %%zmm31, %[a1]\n\t"
            "vpdpbusd 8(%[k],%[l],2)%{1to16%}, %%zmm31, %[a2]\n\t"
            "vpdpbusd 8(%[k3])%{1to16%}, %%zmm31, %[a3]\n\t"
            "vpdpbusd 8(%[k3],%[l],1)%{1to16%}, %%zmm31, %[a4]\n\t"
            "vpdpbusd 8(%[k3],%[l],2)%{1to16%}, %%zmm31, %[a5]\n\t"
            "vmovdqu64 192(%[q]), %%zmm31\n\t"
            "vpdpbusd 12(%[k])%{1to16%}, %%zmm31, %[a0]\n\t"
            "vpdpbusd 12(%[k],%[l],1)%{1to16%}, %%zmm31, %[a1]\n\t"
            "vpdpbusd 12(%[k],%[l],2)%{1to16%}, %%zmm31, %[a2]\n\t"
            "vpdpbusd 12(%[k3])%{1to16%}, %%zmm31, %[a3]\n\t"
            "vpdpbusd 12(%[k3],%[l],1)%{1to16%}, %%zmm31, %[a4]\n\t"
            "vpdpbusd 12(%[k3],%[l],2)%{1to16%}, %%zmm31, %[a5]\n\t"
            "vmovdqu64 256(%[q]), %%zmm31\n\t"
            "vpdpbusd 16(%[k])%{1to16%}, %%zmm31, %[a0]\n\t"
            "vpdpbusd 16(%[k],%[l],1)%{1to16%}, %%zmm31, %[a1]\n\t"
            "vpdpbusd 16(%[k],%[l],2)%{1to16%}, %%zmm31, %[a2]\n\t"
            "vpdpbusd 16(%[k3])%{1to16%}, %%zmm31, %[a3]\n\t"
            "vpdpbusd 16(%[k3],%[l],1)%{1to16%}, %%zmm31, %[a4]\n\t"
            "vpdpbusd 16(%[k3],%[l],2)%{1to16%}, %%zmm31, %[a5]\n\t"
            "vmovdqu64 320(%[q]), %%zmm31\n\t"
            "vpdpbusd 20(%[k])%{1to16%}, %%zmm31, %[a0]\n\t"
            "vpdpbusd 20(%[k],%[l],1)%{1to16%}, %%zmm31, %[a1]\n\t"
            "vpdpbusd 20(%[k],%[l],2)%{1to16%}, %%zmm31, %[a2]\n\t"
            "vpdpbusd 20(%[k3])%{1to16%}, %%zmm31, %[a3]\n\t"
            "vpdpbusd 20(%[k3],%[l],1)%{1to16%}, %%zmm31, %[a4]\n\t"
            "vpdpbusd 20(%[k3],%[l],2)%{1to16%}, %%zmm31, %[a5]\n\t"
            "vmovdqu64 384(%[q]), %%zmm31\n\t"
            "vpdpbusd 24(%[k])%{1to16%}, %%zmm31, %[a0]\n\t"
            "vpdpbusd 24(%[k],%[l],1)%{1to16%}, %%zmm31, %[a1]\n\t"
            "vpdpbusd 24(%[k],%[l],2)%{1to16%}, %%zmm31, %[a2]\n\t"
            "vpdpbusd 24(%[k3])%{1to16%}, %%zmm31, %[a3]\n\t"
            "vpdpbusd 24(%[k3],%[l],1)%{1to16%}, %%zmm31, %[a4]\n\t"
            "vpdpbusd 24(%[k3],%[l],2)%{1to16%}, %%zmm31, %[a5]\n\t"
            "vmovdqu64 448(%[q]), %%zmm31\n\t"
            "vpdpbusd 28(%[k])%{1to16%}, %%zmm31, %[a0]\n\t"
            "vpdpbusd 28(%[k],%[l],1)%{1to16%}, %%zmm31, %[a1]\n\t"
            "vpdpbusd 28(%[k],%[l],2)%{1to16%}, %%zmm31, %[a2]\n\t"
            "vpdpbusd 28(%[k3])%{1to16%}, %%zmm31, %[a3]\n\t"
            "vpdpbusd 28(%[k3],%[l],1)%{1to16%}, %%zmm31, %[a4]\n\t"
            "vpdpbusd 28(%[k3],%[l],2)%{1to16%}, %%zmm31, %[a5]\n\t"
            : [a0] "+v"(acc[0]), [a1] "+v"(acc[1]), [a2] "+v"(acc[2]), [a3] "+v"(acc[3]), [a4] "+v"(acc[4]),
              [a5] "+v"(acc[5])
            : [q] "r"(qb), [k] "r"(k), [k3] "r"(k + 3 * ldk), [l] "r"(ldk)
            : "zmm31", "memory");
}

static inline __attribute__((always_inline)) void tile(const int mr, int64_t nr, int64_t nblk, const int8_t *k,
                                                       int64_t ldk, const int32_t *kt, const void *q_panel,
                                                       float *out, int64_t ldo) {
    const uint8_t *qv = (const uint8_t *)q_panel;
    const int32_t *qe = (const int32_t *)(const void *)(qv + nblk * 32 * NR);
    __m512 sum[MR];
#pragma GCC unroll 12
    for (int i = 0; i < mr; i++) sum[i] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nblk; b++) {
        __m512i acc[MR];
#pragma GCC unroll 12
        for (int i = 0; i < mr; i++) acc[i] = _mm512_set1_epi32(kt[i * 2 * nblk + 2 * b + 1]);
        const int8_t *kb = k + b * 32;
        const uint8_t *qb = qv + b * 32 * NR;
        if (mr == MR) {
            block_6(acc, qb, kb, ldk);
            block_6(acc + 6, qb, kb + 6 * ldk, ldk);
        } else {
#pragma GCC unroll 8
            for (int t = 0; t < 8; t++) {
                const __m512i q = _mm512_loadu_si512((const void *)(qb + t * 4 * NR));
#pragma GCC unroll 12
                for (int i = 0; i < mr; i++) dot_quad(&acc[i], q, kb + i * ldk + 4 * t);
            }
        }
        const __m512i qbits = _mm512_loadu_si512((const void *)(qe + b * NR));
#pragma GCC unroll 12
        for (int i = 0; i < mr; i++) {
            const __m512 scale = _mm512_castsi512_ps(_mm512_add_epi32(qbits, _mm512_set1_epi32(kt[i * 2 * nblk + 2 * b])));
            sum[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[i]), scale, sum[i]);
        }
    }
    const __mmask16 m = (__mmask16)((1u << nr) - 1u);
#pragma GCC unroll 12
    for (int i = 0; i < mr; i++) _mm512_mask_storeu_ps(out + i * ldo, m, sum[i]);
}

void lig_mxfp4_dots_12x16__avx512vnni(int64_t mr, int64_t nr, int64_t nblk, const int8_t *k, int64_t ldk,
                                      const int32_t *kt, const void *q_panel, float *out, int64_t ldo) {
    LIG_TILE_ROWS(MR, mr, tile, nr, nblk, k, ldk, kt, q_panel, out, ldo);
}

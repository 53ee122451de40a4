/* The signatures of the CPU backend's micro-kernels: one function type per operation (declared
 * once, with its contract), so that each ISA's header (<isa>/<isa>.h) declares its kernels,
 * named <operation>_<tile>__<isa>, one line apiece; and the portable helpers any ISA may call.
 * No ISA's kernels are declared here. kernel_set.h groups kernels into configurations. */
#ifndef LIG_CPU_KERNELS_KERNELS_H
#define LIG_CPU_KERNELS_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "lig.h"

/* fp32 GEMM micro-kernel: the top-left mr x nr part (mr <= MR, nr <= NR) of one MR x NR tile,
 *   C[i][j] (+)= sum_{k < kc} a[i*a_rs + k*a_cs] * b[k*ldb + j]
 * `a` is read by broadcasts, so any strides work (a matrix or its transpose, never copied);
 * rows of B and C are unit-stride. Every C element is one chain of fused or separate
 * multiply-adds in k order, so its value does not depend on the tiling. */
typedef void lig_f32_gemm_ukernel(int64_t mr, int64_t nr, int64_t kc, const float *a, int64_t a_rs,
                                  int64_t a_cs, const float *b, int64_t ldb, float *c, int64_t ldc,
                                  bool accumulate);
typedef lig_f32_gemm_ukernel *lig_f32_gemm_ukernel_fn;

/* The backward's ReLU gate over a block of scores S^T (nb x G, in place):
 *   dw[h] += S > 0 ? S * dy[n] : 0;   S^T[n][h] <- S > 0 ? w[h] * dy[n] : 0   (= A^T)
 * a select, never a product with 0, so a non-finite dy of a gated slot adds nothing. */
typedef void lig_grad_gate_kernel(float *st, int64_t nb, int64_t G, const float *w, const float *dy, float *dw);
typedef lig_grad_gate_kernel *lig_grad_gate_fn;

/* The forward's index scores of a block: score[n] = sum_h w[h] * ReLU(st[n*ld + h]), ReLU as the
 * select s > 0 ? s : 0 (ld >= G: one query row's heads among several rows' columns). The order
 * of the sum over h is fixed per ISA. */
typedef void lig_fwd_scores_kernel(const float *st, int64_t nb, int64_t ld, int64_t G, const float *w, float *score);
typedef lig_fwd_scores_kernel *lig_fwd_scores_fn;

/* The quantized forward's index scores of a block (docs/contract.md 2.4), from the exact or fp32
 * dot products st[n*ld + h] of key n and head h (ld >= G), the key scales sk[n], the query scales
 * sq[h] (NULL: all 1) and the weights w[h], each step one fp32 rounding:
 *   x = st * sk[n];  x = x * sq[h];  score[n] = sum over h in order of (x > 0 ? w[h] * x : 0)
 * ReLU is the select, so a NaN x adds exactly 0. */
typedef void lig_quant_scores_kernel(const float *st, int64_t nb, int64_t ld, int64_t G, const float *sk,
                                     const float *sq, const float *w, float *score);
typedef lig_quant_scores_kernel *lig_quant_scores_fn;
/* The same from exact int32 dot products (INT8), each converted to fp32 first (one rounding to
 * nearest even, the value the portable engine's exact-integer sum rounds to). */
typedef void lig_quant_scores_i32_kernel(const int32_t *st, int64_t nb, int64_t ld, int64_t G, const float *sk,
                                         const float *sq, const float *w, float *score);
typedef lig_quant_scores_i32_kernel *lig_quant_scores_i32_fn;

/* dst[0..n) = src[i*stride] converted to fp32 */
typedef void lig_load_row_kernel(lig_dtype dtype, const void *src, int64_t stride, int64_t n, float *dst);
typedef lig_load_row_kernel *lig_load_row_fn;
/* dst[i*stride] = src[i] rounded to nearest even into dtype */
typedef void lig_store_row_kernel(const float *src, int64_t n, lig_dtype dtype, void *dst, int64_t stride);
typedef lig_store_row_kernel *lig_store_row_fn;
/* dst[i] = fma(a, x[i], dst[i]) for i < n: one rounding per element (a = 1 is an exact add) */
typedef void lig_axpy_row_kernel(float *dst, float a, const float *x, int64_t n);
typedef lig_axpy_row_kernel *lig_axpy_row_fn;

/* bf16 GEMM micro-kernel: the top-left mr x nr part (mr <= MR, nr <= NR) of one MR x NR tile,
 *   C[i][j] (+)= sum_{k < kc} A[i][k] * B[k][j]      (kc even)
 * A: bf16 bits, row-major, lda elements per row. B: the VNNI layout, pairs along k: pair row
 * p holds, for every column j, the pair B[2p][j], B[2p+1][j] as one 32-bit word, ldb words per
 * pair row. C: fp32, ldc per row. Every product of two bf16 values is exact in fp32; sums are
 * fp32, in an order fixed per micro-kernel. The bf16 units treat subnormal inputs as zero and
 * flush subnormal results. */
typedef void lig_bf16_gemm_ukernel(int64_t mr, int64_t nr, int64_t kc, const uint16_t *a, int64_t lda,
                                   const uint16_t *b, int64_t ldb, float *c, int64_t ldc, bool accumulate);
typedef lig_bf16_gemm_ukernel *lig_bf16_gemm_ukernel_fn;

/* The same contract for a whole product whose M, N and K are multiples of the micro-kernel's
 * tile and reduction step, with the blocks' loops inside (no call per block). */
typedef void lig_bf16_gemm_tiles_kernel(int64_t M, int64_t N, int64_t K, const uint16_t *a, int64_t lda,
                                        const uint16_t *b, int64_t ldb, float *c, int64_t ldc, bool accumulate);
typedef lig_bf16_gemm_tiles_kernel *lig_bf16_gemm_tiles_fn;

/* Interleaves row pairs into the VNNI layout: out[(p*cols + j)*2 + e] = src[(2p + e)*ld + j]
 * for p < npairs, j < cols (bf16 bits). */
typedef void lig_bf16_pack_pairs_kernel(const uint16_t *src, int64_t ld, int64_t npairs, int64_t cols, uint16_t *out);
typedef lig_bf16_pack_pairs_kernel *lig_bf16_pack_pairs_fn;

/* The bf16 engines' ReLU gate over a block of scores S^T (nb x gp, fp32), nb a multiple of 64
 * (one bit per slot of a 64-bit word), gp a multiple of its family's col_pad (lig_bf16_kernels:
 * each family pads the heads to a multiple of its gate's step, 32 for the AVX-512 gate); for
 * every slot n and head h, open = S^T[n][h] > 0:
 *   dw[h] += open ? S^T[n][h] * dy[n] : 0            (fp32, slots in order)
 *   a_dk[n][h] = open ? w[h] : 0                      (bf16 bits: the dK operand)
 *   bit h%64 of open_bits[(h/64)*nb + n] = open       (for the dQ operand, see below)
 *   bit h%64 of head_open[h/64] |= open               (heads open for some slot, accumulated) */
typedef void lig_bf16_gate_kernel(const float *st, int64_t nb, int64_t gp, const float *dy, const uint16_t *w,
                                  float *dw, uint16_t *a_dk, uint64_t *open_bits, uint64_t *head_open);
typedef lig_bf16_gate_kernel *lig_bf16_gate_fn;

/* The dQ operand from the gate's bits, transposed: a_dq[h][n] = open(n, h) ? dy[n] : 0 for
 * h < gp, n < nb (nb a multiple of 64, gp of its family's col_pad, as for the gate; dy as bf16
 * bits, a_dq rows of nb elements). */
typedef void lig_bf16_dq_operand_kernel(const uint64_t *open_bits, int64_t nb, int64_t gp, const uint16_t *dy,
                                        uint16_t *a_dq);
typedef lig_bf16_dq_operand_kernel *lig_bf16_dq_operand_fn;

/* int8 GEMM micro-kernel: the top-left mr x nr part (mr <= MR, nr <= NR) of one MR x NR tile,
 *   C[i][j] (+)= sum_{k < kc} A[i][k] * B[k][j]        exactly, in int32
 * A: int8, row-major, lda bytes per row (key rows read in place: no byte at or past column kc of
 * a row is read). B: one panel of NR packed columns (lig_i8_pack_b_kernel, the set's layout,
 * kc rounded up to the config's kr with zeros). C: int32, ldc per row; columns >= nr and rows >= mr
 * are not touched. Exact while kc <= the config's max_k (and, with accumulate, the caller's
 * total fits int32): see docs/cpu-kernels.md for the bound of each layout. */
typedef void lig_i8_gemm_ukernel(int64_t mr, int64_t nr, int64_t kc, const int8_t *a, int64_t lda,
                                 const void *b_panel, int32_t *c, int64_t ldc, bool accumulate);
typedef lig_i8_gemm_ukernel *lig_i8_gemm_ukernel_fn;

/* Packs B[k][j] = src[j*ld + k] (k < K, j < N: the query columns, rows x heads, each contiguous
 * along D) into ceil(N / NR) panels panel_bytes apart (lig_i8_panel_bytes), the last one padded
 * with zero columns, the reduction padded with zeros to a multiple of kr; layouts per set (the
 * micro-kernel of the same config reads them). */
typedef void lig_i8_pack_b_kernel(int64_t K, int64_t N, const int8_t *src, int64_t ld, void *packed,
                                  int64_t panel_bytes);
typedef lig_i8_pack_b_kernel *lig_i8_pack_b_fn;

/* MXFP4 block-dot micro-kernel: the top-left mr x nr part (mr <= MR, nr <= NR) of one MR x NR tile
 * of the MXFP4 forward's per-head dots (keys x query columns),
 *   out[i*ldo + j] = fp32 sum, block b = 0 .. nblk-1 in order from +0, of  P_ijb * 2^(e_jb + f_ib)
 *   P_ijb = sum_{t < 32} K[i][32b + t] * Q[32b + t][j]          (exact int32, |P| <= 32 * 144)
 * K: the key rows' e2m1 values doubled (int8 in [-12, 12], zero past D), ldk bytes per row, read
 * 4 bytes at a time. kt: per key row 2 * nblk int32, per block (f_ib + 127) << 23 (f_ib = Ek - 127:
 * the key's e8m0 byte Ek << 23) then the offset correction -q_offset * sum_t K[i][32b + t]. Q: one
 * panel of NR columns packed by lig_mxfp4_pack_q: the unit's unsigned bytes Q + q_offset, then per
 * block the columns' e_jb << 23 (e_jb = Eq - 129: the query's exponent with the 1/4 of the two
 * doublings), so that one integer add of the two makes the fp32 bits of 2^(e_jb + f_ib).
 * Exact only where every term is an exact normal fp32 or zero: -126 <= e_jb + f_ib <= 114 for every
 * (j, b), no NaN scale (the engine's check). Then the product P * 2^e is exact, so a fused
 * multiply-add rounds once, as the portable engine's term-then-add does: the same bits. */
typedef void lig_mxfp4_dots_kernel(int64_t mr, int64_t nr, int64_t nblk, const int8_t *k, int64_t ldk,
                                   const int32_t *kt, const void *q_panel, float *out, int64_t ldo);
typedef lig_mxfp4_dots_kernel *lig_mxfp4_dots_fn;

/* MXFP4 code rows to values: for r < n, the D values of row r (two codes a byte at rows[r], unit
 * stride, element 2j in byte j's low nibble) as int8 table[code] at out + r*ldo, zeros from D up to
 * the whole blocks (ceil(D / 32) * 32; table[0] is 0), and each block's sum of values at sums[r*lds + 2*b] (sums NULL: none). table:
 * the value of each of the 16 codes (the engine's: twice the e2m1 value). D even. No byte past
 * D / 2 of a row is read. */
typedef void lig_mxfp4_decode_kernel(int64_t n, int64_t D, const char *const *rows, const int8_t table[16], int8_t *out,
                                     int64_t ldo, int32_t *sums, int64_t lds);
typedef lig_mxfp4_decode_kernel *lig_mxfp4_decode_fn;

/* FP8 e4m3fn (OCP: bias 7, 3 mantissa bits, no infinities, S.1111.111 NaN) to bf16 bits, a block
 * of rows: dst[r*ldd + j] = e4m3(src[r*lds + j]) for r < rows, j < n. Exact: every e4m3 value is a
 * bf16 value (subnormal e4m3 become normal bf16); the NaN codes 0x7F / 0xFF become the quiet bf16
 * NaN 0x7FC0 with their sign. */
typedef void lig_fp8_to_bf16_kernel(int64_t rows, int64_t n, const uint8_t *src, int64_t lds, uint16_t *dst,
                                    int64_t ldd);
typedef lig_fp8_to_bf16_kernel *lig_fp8_to_bf16_fn;
/* The same into fp32 (the bf16 value widened: NaN 0x7FC00000 with its sign), for sets without
 * bf16 units. */
typedef void lig_fp8_to_f32_kernel(int64_t rows, int64_t n, const uint8_t *src, int64_t lds, float *dst,
                                   int64_t ldd);
typedef lig_fp8_to_f32_kernel *lig_fp8_to_f32_fn;

/* The portable helpers any ISA's kernels may call (plain C, compiled without ISA flags). */

/* The int16-pair B layout of the vpmaddwd-style kernels, for panels of nr columns: panel p holds,
 * per pair q and column j, B[2q][j] and B[2q+1][j] widened to int16 (zeros past K and past N).
 * Plain C: packing runs once per pass, the kernels' loops are the hot part. */
void lig_i8_pack_int16_pairs(int64_t nr, int64_t K, int64_t N, const int8_t *src, int64_t ld, void *packed,
                             int64_t panel_bytes);
/* The u8 x s8 quad B layout of the vpdpbusd-style kernels, for panels of nr columns: panel p
 * holds, per quad q and column j, B[4q .. 4q+3][j] as int8 (zeros past K and past N), then nr
 * int32 corrections 128 * sum_k B[k][j] (0 for the missing columns), which the kernels subtract
 * from their sums of (A + 128) B. Plain C, once per pass, like the pairs. */
void lig_i8_pack_u8s8_quads(int64_t nr, int64_t K, int64_t N, const int8_t *src, int64_t ld, void *packed,
                            int64_t panel_bytes);
/* The MXFP4 query panels (lig_mxfp4_dots_kernel's Q), nr columns each, panel_bytes apart
 * (lig_mxfp4_panel_bytes): per quad q (4 values) and column j the bytes src[j*ld + 4q + e] +
 * q_offset (e < 4; zero values for the missing columns), then per block b the nr int32
 * (exp[j*nblk + b] - 129) << 23. src: ncols rows of nblk * 32 doubled values; exp: their e8m0 bytes. */
void lig_mxfp4_pack_q(int64_t nr, int32_t q_offset, int64_t nblk, int64_t ncols, const int8_t *src, int64_t ld,
                      const uint8_t *exp, void *packed, int64_t panel_bytes);
int64_t lig_mxfp4_panel_bytes(int64_t nr, int64_t nblk);
/* The layouts of runs along k (the aarch64 kernels'), for panels of nr columns, K rounded up to kr
 * with zeros: B[k][j] is element
 *   ((k / run) * (nr / cols) + j / cols) * run * cols + (j % cols) * run + k % run
 * of its panel, int8 or sign-extended to int16: `run` consecutive values of k of one column,
 * `cols` columns' runs side by side (run 1, cols 1: row k of the panel is B[k][0 .. nr)). */
typedef struct lig_i8_run_layout {
    int64_t nr, kr, run, cols; /* cols divides nr */
    bool int16;                /* elements widened to int16 (else int8) */
} lig_i8_run_layout;
/* Packs B in such a layout (lig_i8_pack_b_kernel's contract). Plain C, once per pass. */
void lig_i8_pack_runs(const lig_i8_run_layout *layout, int64_t K, int64_t N, const int8_t *src, int64_t ld,
                      void *packed, int64_t panel_bytes);
/* one e4m3fn code as bf16 bits (the scalar kernels' and the SIMD tails' decode) */
uint16_t lig_fp8_e4m3_to_bf16_bits(uint8_t code);
/* The row conversions' cases every ISA hands on: a strided row to the portable code, an fp32 row
 * to memcpy. Return whether they did the row (else it is a unit-stride 16-bit row). */
bool lig_load_row_plain(lig_dtype dtype, const void *src, int64_t stride, int64_t n, float *dst);
bool lig_store_row_plain(const float *src, int64_t n, lig_dtype dtype, void *dst, int64_t stride);

#endif

/* The KL loss's teacher: the main attention's scores at a block of selected slots, S[i][h] =
 * q_h . key_i + q_rope_h . key_rope_i for the N1 main heads of one query row, on the kernel set's
 * fp32 GEMM or, for bf16 inputs on a set with bf16 kernels, its bf16 product (exact products,
 * fp32 sums), like the backward's engines. The latent and rope parts are one concatenated
 * reduction of Dm + Dr. lig_teacher_mass turns the scores into each slot's probability mass. */
#ifndef LIG_CPU_OPERATORS_TEACHER_ENGINE_H
#define LIG_CPU_OPERATORS_TEACHER_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/cpu/kernels/kernel_set.h"
#include "lig.h"

typedef struct lig_teacher_ctx {
    const lig_kernel_set *ks;
    bool bf16;                 /* the set's bf16 product; else every operand in fp32 */
    lig_dtype dtype;
    int64_t N1, Dm, Dr;
    int64_t q_head, q_dim, qr_head, qr_dim, k_dim, kr_dim; /* element strides */
    int64_t block;             /* slots per call (set by lig_teacher_configure) */
    int64_t ld;                /* floats between two slots' scores */
} lig_teacher_ctx;

/* Chooses the product (bf16 when the dtype and the set allow), the block and the score stride. */
void lig_teacher_configure(lig_teacher_ctx *c);
uint64_t lig_teacher_scratch_bytes(const lig_teacher_ctx *c);
/* Loads one row's N1 heads (q at head 0, qr at its rope part or NULL without rope). */
void lig_teacher_begin_row(const lig_teacher_ctx *c, char *scratch, const char *q, const char *qr);
/* s[i * c->ld + h] for n <= c->block slots with key rows key[i] (and key_rope[i] when Dr > 0). */
void lig_teacher_scores(const lig_teacher_ctx *c, char *scratch, int64_t n, const char *const *key,
                        const char *const *key_rope, float *s);

/* The main attention's probability mass of n slots from their scores (as lig_teacher_scores wrote
 * them, s[i * c->ld + h]): mass[i] = sum over h = 0 .. N1-1, in that order, of
 * expf(scale * s[i][h] - m[h]) / z[h], each operation rounded in fp32 as written (m the row's
 * maxima or lse per head, z its sums or 1). The one definition of a slot's mass for every operator
 * whose target is the main attention's, so that they agree to the bit. */
void lig_teacher_mass(const lig_teacher_ctx *c, int64_t n, const float *s, float scale, const float *m, const float *z,
                      float *mass);

#endif

/* The sequence lengths of a test problem over compressed keys (contract 3 and 4.1), shared by the
 * cases of every operator that takes them (dense_lse_case.h, l1_norm_case.h) and their fuzz
 * targets: per batch the valid rows, the compressed entries, the first rows (TND) and the
 * residual, drawn in range; their host tensors; the visible count written from the rule's words. */
#ifndef LIG_TESTS_HARNESS_COMPRESSED_LENGTHS_H
#define LIG_TESTS_HARNESS_COMPRESSED_LENGTHS_H

#include <stdbool.h>
#include <stdint.h>

#include "lig.h"
#include "rng.h"
#include "tensor_buffers.h"

typedef struct cmp_lengths {
    int64_t B;
    int64_t *lq, *lk, *q0, *k0, *resv; /* per batch: valid rows, entries, first row, first entry, residual */
    tbuf aq, ak, res;                  /* the host tensors (absent: base NULL) */
} cmp_lengths;

typedef struct cmp_lengths_spec {
    bool tnd;
    int64_t B, S1, S2;     /* TND: S1 = T1, S2 = T2 */
    bool lengths;          /* BSND: arrays given (drawn 0..S); TND: always */
    bool residual;         /* residuals drawn 0..ratio-1 and a tensor; else none (all 0) */
    bool short_tail;       /* TND: now and then the last batch ends a row before T1 */
    int64_t ratio;
    lig_dtype len_dtype;   /* of the three tensors */
} cmp_lengths_spec;

/* Draws the lengths from `r` (TND splits T1 / T2 into B pieces, some empty) and makes the tensors. */
void cmp_lengths_make(cmp_lengths *c, const cmp_lengths_spec *s, th_rng *r);
void cmp_lengths_free(cmp_lengths *c);
/* Entries row t of batch b sees, counted block by block from the rule's words (contract 4.1). */
int64_t cmp_lengths_visible(const cmp_lengths *c, int64_t b, int64_t t, int64_t mask_mode, int64_t ratio);
/* A fuzz defect: the last batch's residual set to `value` (a tensor of zeros made first when the
 * case has none). */
void cmp_lengths_break_residual(cmp_lengths *c, lig_dtype len_dtype, int64_t value);

#endif /* LIG_TESTS_HARNESS_COMPRESSED_LENGTHS_H */

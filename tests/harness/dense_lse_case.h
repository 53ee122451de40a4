/* The problems of lig_dense_indexer_softmax_lse (docs/contract.md 2.7) for the C tests and the
 * libFuzzer target: a description, its tensors and data (lengths, residuals, strides), the call,
 * and the check of every output element against the float64 reference written here (the scores,
 * the compressed-key count of contract 4.1 enumerated block by block, the log-sum-exp). */
#ifndef LIG_TESTS_HARNESS_DENSE_LSE_CASE_H
#define LIG_TESTS_HARNESS_DENSE_LSE_CASE_H

#include <stdbool.h>
#include <stdint.h>

#include "compressed_lengths.h"
#include "lig.h"
#include "tensor_buffers.h"

typedef struct lse_desc {
    const char *label;
    bool tnd;
    int64_t B, S1, S2, N1, N2, D; /* TND: S1 = T1, S2 = T2 */
    lig_dtype dtype, w_dtype, len_dtype;
    int64_t mask_mode, ratio;
    bool residual, lengths;       /* BSND: lengths optional; TND: always */
    tc_strides strides;
    double scale;                 /* input magnitude */
} lse_desc;

typedef struct lse_case {
    lse_desc d;
    tbuf q, k, w, lse;
    cmp_lengths len; /* per batch: valid rows, entries, first rows, residuals and their tensors */
} lse_case;

/* Case `layout` x `di` x `ri` x `mask` of the dense operators' matrices (tests/test_dense_*.c):
 * BSND/TND, FLOAT32/FLOAT16/BFLOAT16 (di), ratio 1/4/128 with residuals (ri), mask_mode 0/3, the
 * weights' dtype, lengths, their dtype and the strides varied with them, shapes that let ratio 128
 * see whole blocks and the bf16 engines run; label and scale from `base`. */
lse_desc lse_matrix_desc(const lse_desc *base, int layout, int di, int ri, int64_t mask);
/* Calls fn(desc, index, ctx) for every case of that matrix in order (index 0, 1, ...); returns the count. */
int lse_matrix_each(const lse_desc *base, void (*fn)(const lse_desc *d, int index, void *ctx), void *ctx);
/* The thread-count case of the dense operators' tests in dtype di (FLOAT32, FLOAT16, BFLOAT16):
 * enough work for two threads, ratio 4 with residuals, lengths. */
lse_desc lse_threads_desc(const lse_desc *base, int di);

/* The same over the dense operators' edge shapes (no key, no row, D = 0, one head, 64 heads of
 * D 128, a head group of 3, D = 1, odd extents), each with mask_mode 0/3 and ratio 1/4 (residuals
 * with 4); `index` is the shape's (several calls share it). Returns the number of calls. */
int lse_edges_each(const lse_desc *base, void (*fn)(const lse_desc *d, int index, void *ctx), void *ctx);

/* The tensors of `d` with data drawn from `seed` (values in [-scale, scale], weights in [-1, 1],
 * lengths and residuals in range); softmax_lse holds the output sentinel, snapshotted. */
void lse_case_make(lse_case *c, const lse_desc *d, uint64_t seed);
void lse_case_free(lse_case *c);
/* Both phases with the case's arguments (mask_mode and cmp_ratio from c->d). */
lig_status lse_case_call(lse_case *c);
/* Entries row t of batch b sees, counted block by block from the rule's words (contract 4.1). */
int64_t lse_ref_visible(const lse_case *c, int64_t b, int64_t t);
/* Element index of (b, t, g) in softmax_lse, row-major. */
int64_t lse_case_index(const lse_case *c, int64_t b, int64_t t, int64_t g);
/* Every element of softmax_lse against the reference (rows outside the valid lengths -inf, bytes
 * outside the view untouched); failures are CHECKs labelled `label`. */
void lse_case_check(lse_case *c, const char *label);

#endif /* LIG_TESTS_HARNESS_DENSE_LSE_CASE_H */

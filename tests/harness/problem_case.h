/*
 * One test problem for LightningIndexerGrad: the reference description (dims, layout, sequence
 * arrays, mode, band), the library-facing choices (dtypes, short index form, strides,
 * determinism), and the logical input data in float64. The data always holds values that are
 * exactly representable in the chosen dtype, so the reference sees precisely what the library sees.
 */
#ifndef LIG_TESTS_HARNESS_PROBLEM_CASE_H
#define LIG_TESTS_HARNESS_PROBLEM_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "lig.h"
#include "reference/indexer_ref.h"

/* How a tensor is laid out in memory (see tensor_buffers.c). */
typedef enum tc_strides {
    TC_CONTIGUOUS = 0,   /* strides == NULL */
    TC_EXPLICIT,         /* explicit row-major strides */
    TC_PADDED,           /* row-major with padding after every dimension and a base offset */
    TC_PERMUTED,         /* outer dimensions in reversed memory order, padded rows */
    TC_INNER_STRIDED,    /* innermost stride 2: may be unsupported (then PARAM_INVALID) */
    TC_BROADCAST,        /* stride 0 on the first dimension: may be unsupported */
    TC_STRIDE_KINDS,
    /* Not a kind the suites enumerate: strides and offset from the source installed with
     * tbuf_set_stride_source (the libFuzzer targets decode them from their input). */
    TC_SOURCE = TC_STRIDE_KINDS
} tc_strides;

typedef struct tcase {
    ref_problem p;      /* p.seq_q / p.seq_k point into seq_q / seq_k below, or are NULL */
    lig_dtype dtype;    /* query, key, dy, weights and d_query, d_key */
    lig_dtype idx_dtype;
    lig_dtype seq_dtype;
    lig_dtype dw_dtype; /* dtype or FLOAT32 */
    int short_form;     /* indices and dy as [B,S1,K] / [T1,K] (N2 == 1) */
    int deterministic;
    int64_t head_num;   /* passed as is: N1 or 0 normally */
    tc_strides in_strides;
    tc_strides out_strides;
    int grid;           /* all data on the 1/8 grid: fp32 sums exact, ReLU decisions agree */
    int has_seq_q;      /* pass actual_seq_lengths_query (always for TND unless testing errors) */
    int has_seq_k;

    int64_t *seq_q, *seq_k; /* [B] each, owned */
    double *q, *k, *w, *dy; /* logical contiguous data, owned */
    int64_t *idx;
} tcase;

/* Element counts of the logical tensors. */
int64_t tc_numel_q(const tcase *tc);
int64_t tc_numel_k(const tcase *tc);
int64_t tc_numel_w(const tcase *tc);
int64_t tc_numel_slots(const tcase *tc);

/* Sets defaults (BSND, bf16, int32 indices, mode 3, no band, deterministic, contiguous). */
void tc_init(tcase *tc);
/* Sets p.B, p.N1, p.N2, p.D, p.K (before the layout's lengths are drawn and the case allocated). */
void tc_set_dims(tcase *tc, int64_t B, int64_t N1, int64_t N2, int64_t D, int64_t K);
/* (Re)allocates seq arrays for p.B and data arrays for the current dims (zero-filled) and
 * points p.seq_q / p.seq_k at the seq arrays according to has_seq_q / has_seq_k. */
void tc_alloc(tcase *tc);
/* Re-points p.seq_q / p.seq_k after has_seq_* changed. */
void tc_sync_seq(tcase *tc);
void tc_free(tcase *tc);
/* Deep copy (dst must not own memory). */
void tc_copy(tcase *dst, const tcase *src);
/* One-line description for failure messages. */
void tc_describe(const tcase *tc, char *buf, size_t size);

/* Checked allocation helpers: abort on out-of-memory, never return NULL (even for 0 bytes). */
void *th_xmalloc(size_t bytes);
void *th_xcalloc(size_t count, size_t size);
/* Frees each of the n buffers (NULL ones included: free ignores them). */
void th_free_all(void *const *buffers, size_t n);

#endif /* LIG_TESTS_HARNESS_PROBLEM_CASE_H */

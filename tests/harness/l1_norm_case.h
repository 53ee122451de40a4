/* The problems of lig_sparse_flash_mla_softmax_l1_norm (docs/contract.md 2.10) for the C tests and
 * the libFuzzer target: a description, its tensors and data (lengths, residuals, the main
 * attention's lse, slots with padding, masked and duplicated entries, strides), the call, and the
 * check of every output element against the float64 reference written here (the scores, the
 * compressed-key count of contract 4.1 enumerated block by block, the head mean of
 * exp(scale * score - lse)). */
#ifndef LIG_TESTS_HARNESS_L1_NORM_CASE_H
#define LIG_TESTS_HARNESS_L1_NORM_CASE_H

#include <stdbool.h>
#include <stdint.h>

#include "compressed_lengths.h"
#include "lig.h"
#include "tensor_buffers.h"

typedef struct l1n_desc {
    const char *label;
    bool tnd;
    int64_t B, S1, S2, N1, D; /* TND: S1 = T1, S2 = T2 */
    int64_t K;                /* > 0: sparse with K slots; 0: dense */
    int64_t extra_cols;       /* dense: columns past the longest batch (W = longest + extra) */
    bool short_form;          /* the slot / column tensors without their head axis */
    lig_dtype dtype, idx_dtype, len_dtype;
    int64_t mask_mode, ratio;
    bool residual, lengths;   /* BSND: lengths optional; TND: always */
    tc_strides strides;
    double magnitude;         /* q and k values in [-magnitude, magnitude] */
    double scale;             /* softmax_scale */
} l1n_desc;

typedef struct l1n_case {
    l1n_desc d;
    int64_t W;                              /* the output's columns */
    tbuf q, k, lse, idx, out;
    cmp_lengths len;                        /* per batch: valid rows, entries, first rows, residuals */
    double *qv, *kv;                        /* q and k as stored, row-major (the reference reads these) */
} l1n_case;

/* The tensors of `d` with data drawn from `seed`: softmax_lse is the float64 log-sum-exp of each
 * row's visible scores plus a draw in [0, 1] (the main attention saw more keys: the target sums to
 * at most 1), or a plain draw for rows that see nothing; slots mix visible entries, -1, entries
 * the row may not see and duplicates. The output holds the sentinel, snapshotted. */
void l1n_case_make(l1n_case *c, const l1n_desc *d, uint64_t seed);
void l1n_case_free(l1n_case *c);
/* Both phases with the case's arguments. */
lig_status l1n_case_call(l1n_case *c);
/* Entries row t of batch b sees (cmp_lengths_visible with the case's rule). */
int64_t l1n_ref_visible(const l1n_case *c, int64_t b, int64_t t);
/* Every element of the output against the reference (rows outside the valid lengths 0, bytes
 * outside the view untouched); failures are CHECKs labelled `label`. */
void l1n_case_check(l1n_case *c, const char *label);

#endif /* LIG_TESTS_HARNESS_L1_NORM_CASE_H */

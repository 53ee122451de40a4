/*
 * The sparse logits' test cases (lig_sparse_logits_get_workspace_size, contract 2.8) beside a logits
 * case (logits_case.h), whose inputs and key ranges they share: a block list per row (the row's
 * count = min(M, ceil(len / block_kv)) distinct ids of its blocks, ascending, then a tail of -1, the
 * last id or large values), the output (FLOAT32 / BFLOAT16 / FLOAT16, strided or not, with or
 * without N2), the two-phase call, and the check: every scored column bitwise the logits case's
 * dense FLOAT32 logit of that row and key (its last run: clean, not compressed), rounded once by the
 * test's own conversion for a 16-bit output, and within contract 2.4's bound of the float64
 * reference; every other column -inf.
 */
#ifndef LIG_TESTS_HARNESS_SPARSE_LOGITS_CASE_H
#define LIG_TESTS_HARNESS_SPARSE_LOGITS_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "lig.h"
#include "logits_case.h"
#include "rng.h"

typedef struct scase {
    int64_t M, bk;                 /* blocks per row, keys per block (set before scase_make) */
    int unaligned, short_out, strided;
    lig_dtype ids_dtype, out_dtype;
    int64_t rows, N2, cols;
    int64_t *id, *count;           /* [rows][M] as written, and each row's counted entries */
    void *ids_buf, *out_buf;
    size_t out_bytes;
    int64_t out_col_step, out_row_step, out_head_step; /* elements */
    lig_tensor *ids, *out;
} scase;

/* Draws the block lists for L's ranges and makes the tensors (the fields above `rows` set first). */
void scase_make(th_rng *r, const lcase *L, scase *S);
void scase_free(scase *S);
/* Phase 1 with L's inputs and S's lists and output. */
lig_status scase_phase1(lcase *L, scase *S, uint64_t *ws, lig_executor **exec);
/* Both phases on `threads` threads (0: as set), the output filled with 0x5a first. */
lig_status scase_run(lcase *L, scase *S, int threads);
/* The last run against L's dense logits and the float64 reference; 0 when all matched. */
int scase_check(const lcase *L, const scase *S, const char *label);

#endif /* LIG_TESTS_HARNESS_SPARSE_LOGITS_CASE_H */

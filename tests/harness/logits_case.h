/*
 * The logits operator's test cases (lig_quant_logits_get_workspace_size, contract 2.6): a quantized
 * forward case (quant_case.h: data, tensors, paged cache) plus per-row key ranges, a logits tensor
 * (optionally strided, prefilled with a sentinel, in the compressed form or not) and the top-k
 * outputs of the quantized case; the two-phase call; and the check against the float64 reference
 * of the formula (reference/indexer_quant_ref.h): logits within contract 2.4's fp32 bound, the
 * columns no row scores -inf (clean) or the sentinel (BFLOAT16 logits: the same bound plus one
 * bf16 rounding), the top-k index sets exactly wherever the
 * reference's scores around the cut differ by more than the bound, the values bitwise the logits.
 */
#ifndef LIG_TESTS_HARNESS_LOGITS_CASE_H
#define LIG_TESTS_HARNESS_LOGITS_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "lig.h"
#include "quant_case.h"
#include "rng.h"

/* The sentinel every logits element starts as: a NaN payload the library never writes (FLOAT32,
 * BFLOAT16). */
#define LC_SENTINEL 0x7fc0bad5u
#define LC_SENTINEL_BF16 0x7fd5u

typedef struct lspec {
    qspec q;         /* the data; B = 1 for TND (one sequence) */
    int clean, compressed;
    int strided;     /* column stride 2, padded heads and rows */
    int with_logits, with_topk;
    int start_null;  /* key_start NULL: every range starts at 0 */
    int full;        /* every range [0, the row's keys): what lig_quant_indexer sees (sparse_mode 0, no band) */
    double p_empty;  /* chance of an empty range */
    lig_dtype range_dtype;
    int extra_cols;  /* columns past the ones needed */
    lig_dtype logits_dtype; /* FLOAT32 (the default) or BFLOAT16 */
} lspec;

void lspec_default(lspec *s);

typedef struct lcase {
    lspec s;
    qcase c;
    qcall call;
    int64_t rows;          /* logical query rows: B x S1, or T1 */
    int64_t *ks, *ke;      /* per row */
    int64_t W;             /* logits columns */
    int64_t cs, hs, rs;    /* logits strides in elements: column, head, row */
    int short_logits;      /* [.., W] without N2 */
    unsigned char *lbuf;   /* the logits' memory, lbytes bytes (a guard of 64 past the view) */
    size_t lbytes;
    void *rbuf[2];         /* key_start, key_end */
    lig_tensor *key_start, *key_end, *logits;
} lcase;

/* The keys row `row` may score: BSND its batch's S2 (paged: the keys the cache holds), TND those of
 * the sequence; -1 (an empty range) for the rows the quantized case holds no data for (past its
 * valid lengths). */
int64_t lcase_row_keys(const lcase *L, int64_t row);

void lcase_make(th_rng *r, const lspec *s, lcase *L);
void lcase_free(lcase *L);
/* Resets the outputs to their first bytes (the sentinel, the quant case's fills). */
void lcase_reset_outputs(lcase *L);

/* Phase 1 with the case's arguments (schedule may be NULL). */
lig_status lcase_phase1(lcase *L, const lig_tensor *schedule, uint64_t *ws, lig_executor **exec);
/* Both phases with `threads` threads (0: as set), the outputs reset first. */
lig_status lcase_run(lcase *L, int threads, const lig_tensor *schedule);
/* 1 when every input buffer holds its first bytes. */
int lcase_inputs_unchanged(const lcase *L);
/* 1 when every output buffer holds its first bytes. */
int lcase_outputs_unchanged(const lcase *L);

/* The output bytes of the last run (logits, then indices and values). */
unsigned char *lcase_output_bytes(const lcase *L, size_t *bytes);

/* Checks the last run against the reference. Returns 1 when everything matched. */
int lcase_check(const lcase *L, const char *label);

/* The logits value (row, g, column j), as a float (BFLOAT16 logits widened exactly). */
float lcase_logit(const lcase *L, int64_t row, int64_t g, int64_t j);
/* The raw bits of logits element (row, g, column j): FLOAT32 or BFLOAT16 bits. */
uint32_t lcase_logit_bits(const lcase *L, int64_t row, int64_t g, int64_t j);

#endif /* LIG_TESTS_HARNESS_LOGITS_CASE_H */

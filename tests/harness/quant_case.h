/*
 * The quantized forward's test cases (lig_quant_indexer_get_workspace_size, contract 2.4): a
 * problem with its logical data (codes decoded to float64, scales, weights), its materialization
 * into the library's tensors (BSND / TND keys or a paged cache behind a shuffled block table,
 * optionally padded strides, NaN codes and NaN scales wherever nothing may be read), the
 * two-phase call, and the check of its outputs against the float64 reference
 * (reference/indexer_quant_ref.h) with the fp32 error bound of error_bounds.h.
 */
#ifndef LIG_TESTS_HARNESS_QUANT_CASE_H
#define LIG_TESTS_HARNESS_QUANT_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "lig.h"
#include "reference/indexer_quant_ref.h"
#include "rng.h"

enum { QC_MAX_B = 64 };

/* What a case is made of (qcase_make draws the rest). */
typedef struct qspec {
    ref_layout layout;
    int paged;                /* keys in a PA_BSND cache */
    lig_dtype qk;             /* LIG_FLOAT8_E4M3FN, LIG_INT8 or LIG_FLOAT4_E2M1X2 (MXFP4: D even; the
                               * scales are e8m0 block bytes, sq_dtype / sk_dtype UINT8 or INT32, and
                               * the query scales are always passed) */
    lig_dtype w_dtype, sq_dtype, sk_dtype, idx_dtype, val_dtype;
    int has_sq, with_values;
    int64_t B, S1, S2;        /* BSND extents, or the longest batch lengths for TND / paged */
    int64_t N2, G, D, K;
    int64_t sparse_mode, pre_tokens, next_tokens;
    int64_t block_size;       /* paged */
    int lengths;              /* BSND: draw actual_seq_lengths (else full lengths) */
    int pad;                  /* padded strides for query and key */
    int short_form;           /* N2 == 1: [.., K] outputs */
    double p_dup_key;         /* key rows copied from an earlier one of their batch (exact ties) */
    double p_nan_code;        /* FP8: NaN codes among the valid data */
    int int8_extreme;         /* INT8: every code -128 (1: the largest products) or 127 (2: odd ones,
                               * whose fp32 partial sums past 2^24 would round) */
} qspec;

void qspec_default(qspec *s);
/* Sets the extents (B stays as it is; N1 = N2 * G). */
void qspec_dims(qspec *s, int64_t S1, int64_t S2, int64_t N2, int64_t G, int64_t D, int64_t K);

typedef struct qcase {
    qspec s;
    ref_problem p;
    int64_t seq_q[QC_MAX_B], seq_k[QC_MAX_B]; /* as ref_problem reads them */
    int64_t lk[QC_MAX_B];                     /* per-batch key lengths */
    int64_t rows_q, rows_k;                   /* logical rows */
    double *q, *k, *w, *sq, *sk;              /* logical data */
    uint8_t *qc, *kc;                         /* the codes behind q and k (MXFP4: one nibble each) */
    uint8_t *sqe, *ske;                       /* MXFP4: the e8m0 bytes per (row, head, block of 32), folded
                                               * into q and k (sq and sk are then 1) */
    int64_t *dup_of;                          /* per logical key row: the row it copies, or -1 */
    /* paged */
    int64_t max_blocks, num_blocks;
    int64_t *table;                           /* [B][max_blocks]; entries past the used blocks are garbage */
} qcase;

void qcase_make(th_rng *r, const qspec *s, qcase *c);
void qcase_free(qcase *c);
void qcase_describe(const qcase *c, char *buf, size_t size);

/* The materialized call: every tensor and argument of phase 1 (tests may replace any of them). */
typedef struct qcall {
    lig_tensor *query, *key, *weights, *sq, *sk, *aq, *ak, *table, *idx, *val;
    int64_t query_quant_mode, key_quant_mode;
    const char *layout_query, *layout_key;
    int64_t sparse_count, sparse_mode, pre_tokens, next_tokens;
    /* the buffers behind the tensors (owned), with their sizes */
    void *buf[10];
    size_t bytes[10];
    unsigned char *snapshot[10];
    lig_tensor *own[10];  /* the tensors qcall_make made, whatever a test put in their places */
    lig_tensor *extra[8]; /* tensors a test made (destroyed with the call) */
    int n_extra;
} qcall;

enum { QB_Q = 0, QB_K, QB_W, QB_SQ, QB_SK, QB_AQ, QB_AK, QB_TABLE, QB_IDX, QB_VAL };

void qcall_make(const qcase *c, qcall *call);
void qcall_free(qcall *call);
/* Keeps a tensor a test made so that qcall_free destroys it. */
lig_tensor *qcall_adopt(qcall *call, lig_tensor *t);
/* Phase 1 with the call's arguments. */
lig_status qcall_phase1(qcall *call, uint64_t *ws, lig_executor **exec);
/* 1 when every buffer still holds the bytes it was made with. */
int qcall_unchanged(const qcall *call);

/* Runs both phases (with `threads` threads, 0 = the count in effect), reads the outputs into logical
 * [rows][N2][K] arrays (val may be NULL) and returns the status; *inputs_ok says whether every
 * input and every output byte outside the views kept its bytes. raw (may be NULL) receives the
 * output buffers' bytes (idx then val), raw_bytes their total. */
lig_status qcase_run(const qcase *c, int threads, int64_t *idx, double *val, int *inputs_ok, unsigned char **raw,
                     size_t *raw_bytes);

typedef struct qcheck_stats {
    int64_t cases, units, exact_units, tolerant_units, selected, padded, twins, nan_heads;
} qcheck_stats;
void qcheck_stats_reset(void);
qcheck_stats qcheck_stats_get(void);
void qcheck_stats_note(const char *what);

/* Compares lib outputs with the reference: index lists exactly wherever the reference's scores
 * around every rank up to the cut differ by more than the fp32 bound (or tie exactly between
 * twin keys, or, for INT8, at exactly 0), else the top-k up to the bound; values within it. */
int qcase_check(const qcase *c, const int64_t *idx, const double *val, const char *label);
/* Runs and checks. Returns 1 when everything matched. */
int qcase_run_check(const qcase *c, const char *label);

#endif /* LIG_TESTS_HARNESS_QUANT_CASE_H */

/* Problems of the KL loss with the main attention's target (lig_sparse_indexer_grad_kl_loss) for the
 * tests: a description, its data in the tensors' dtypes (the float64 copies hold the values the
 * tensors hold), the reference's inputs, and the call. */
#ifndef LIG_TESTS_KL_LOSS_CASE_H
#define LIG_TESTS_KL_LOSS_CASE_H

#include <stdbool.h>
#include <stdint.h>

#include "lig.h"
#include "reference/sparse_kl_loss_ref.h"

typedef struct lkcase_desc {
    const char *name;
    ref_layout layout;
    int64_t B, S1, S2, N1, N2, D, K; /* the indexer (TND: S1, S2 = T1, T2) */
    int64_t N1m, Dm, Dr;             /* the main attention (Dr = 0: no rope) */
    lig_dtype dtype;
    bool lse;                        /* softmax_lse instead of softmax_max / softmax_sum */
    bool sparse_stats;               /* statistics over the counted slots of key head 0 (else all visible keys) */
    lig_kl_target target;
    bool lengths;                    /* BSND: pass per-batch lengths (TND always has ends) */
    int64_t sparse_mode, pre_tokens, next_tokens;
    bool short_form;                 /* [.., K] indices (N2 == 1) */
    lig_dtype index_dtype;
    lig_dtype dw_dtype;
    bool sinks;                      /* attention sinks (through the V2 call), in the statistics too */
    bool v2;                         /* call the V2 phase 1 (with the sinks, or NULL without) */
} lkcase_desc;

enum { KA_Q, KA_K, KA_QI, KA_KI, KA_W, KA_IDX, KA_SMAX, KA_SSUM, KA_LSE, KA_QR, KA_KR, KA_AQ, KA_AK, KA_DQ, KA_DK,
       KA_DW, KA_LOSS, KA_SINKS, KA_COUNT };

typedef struct lkcase {
    lkcase_desc d;
    ref_problem p;
    int64_t seq_q[8], seq_k[8];
    int64_t rows_q, rows_k;
    double *mq, *mk, *mqr, *mkr, *smax, *ssum, *lse, *qi, *ki, *w;
    double *sinks;              /* [N1m] when d.sinks: also the statistics' extra softmax term */
    int64_t *idx;
    void *buf[KA_COUNT];        /* the tensors' memory */
    uint64_t bytes[KA_COUNT];
    lig_tensor *t[KA_COUNT];    /* NULL where absent */
    lig_dtype dtype[KA_COUNT];  /* what t[a] was made with */
    int ndim[KA_COUNT];
    int64_t shape[KA_COUNT][6];
    /* the call's scalars (error cases edit them) */
    double scale;
    const char *layout;
    int64_t sparse_mode, pre_tokens, next_tokens;
    lig_kl_target target;
    bool deterministic;
} lkcase;

/* Makes the data (seeded), the tensors and the call's arguments. */
void lkcase_make(lkcase *c, const lkcase_desc *d, uint64_t seed);
void lkcase_free(lkcase *c);
/* The reference's view of the case. */
ref_kl_loss_case lkcase_ref(const lkcase *c);
/* Both phases with the case's tensors and scalars; the workspace is allocated here. */
lig_status lkcase_call(lkcase *c);
/* Phase 1 only; *ws_size and *ex receive the results. */
lig_status lkcase_phase1(lkcase *c, uint64_t *ws_size, lig_executor **ex);
/* The outputs as doubles: d_query_index, d_key_index, d_weights (caller frees), and the loss. */
void lkcase_outputs(const lkcase *c, double **dq, double **dk, double **dw, double *loss);
/* After a successful call: the loss and every gradient against the float64 reference (CHECK),
 * within the bounds of the fp32 teacher and dI and the outputs' rounding; an element with no
 * counted term must be exactly 0. */
void lkcase_check_outputs(const lkcase *c, const char *label);
/* scale * (query . key + rope) of main head h at (row, key row), in double from the rounded inputs. */
double lkcase_main_score(const lkcase *c, int64_t row, int64_t key_row, int64_t h);
/* The output rounding of a dtype, relative; the largest |v[i]|. */
double lkcase_out_rel(lig_dtype t);
double lkcase_maxabs(const double *v, int64_t n);

#endif

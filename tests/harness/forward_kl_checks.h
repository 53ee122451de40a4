/*
 * Data generation and result checks for the forward (lig_indexer) and the KL step
 * (lig_kl_loss_and_dy) against the float64 reference in reference/indexer_fwd_ref.h.
 *
 * Forward, grid data (q, k, w multiples of 1/8 or 1/4): every score is a multiple of 2^-9 and
 * every partial sum stays far below 2^24 * 2^-9, so fp32 scores are exact and equal the float64
 * ones; then the index lists must match the reference exactly, ties included, and sparse_values
 * must equal the reference score rounded once to their dtype. Continuous data: each selected key
 * must belong to the true top-k up to the fp32 error bound of the scores involved (error_bounds.h, from
 * each score's sum of |w q_d k_d|), in non-increasing order up to the same bounds, with each
 * value within its own element bound.
 */
#ifndef LIG_TESTS_HARNESS_FORWARD_KL_CHECKS_H
#define LIG_TESTS_HARNESS_FORWARD_KL_CHECKS_H

#include <stdint.h>

#include "forward_kl_runner.h"
#include "reference/indexer_fwd_ref.h"
#include "rng.h"
#include "problem_case.h"

typedef struct fwd_gen_opts {
    int grid;            /* 1: integers in [-grid_range, grid_range] / grid_den; 0: uniform [-1,1] */
    int grid_range;
    int grid_den;        /* 8 or 4 */
    int tie_heavy;       /* non-negative keys, "dead" heads with q <= 0, small ranges: many exact ties */
    double p_dead_head;  /* tie_heavy: share of (row, head) whose q is <= 0 componentwise */
    double p_zero_w;     /* share of weights set to exactly 0 */
    double p_dup_key;    /* share of key rows copied from an earlier key row of their batch */
    int poison;          /* NaN q/w in invalid rows (half of them) and NaN keys that do not exist */
} fwd_gen_opts;

void fwd_gen_opts_default(fwd_gen_opts *o);
/* Fills q, k, w of an allocated case (gen_bsnd / gen_tnd) for the forward. */
void fwd_gen_data(th_rng *r, tcase *tc, const fwd_gen_opts *o);

/* Totals over fwd_check calls. */
typedef struct fwd_check_stats {
    int64_t cases, exact_cases, units, visible, selected, padded, ordered_ties, boundary_ties, zero_selected;
    int64_t invalid_slots; /* slots of invalid rows checked to be -1 / -inf */
} fwd_check_stats;
void fwd_check_stats_reset(void);
fwd_check_stats fwd_check_stats_get(void);
/* A th_note line with the totals; fails when nothing was selected at all. */
void fwd_check_stats_note(const char *what);

/* Compares forward outputs (logical [rows][N2][K]; lib_val NULL when sparse_values was not
 * passed) with the reference. Returns 1 when everything matched. */
int fwd_check_outputs(const tcase *tc, lig_dtype val_dtype, const int64_t *lib_idx, const double *lib_val,
                      const char *label);
/* Checks a successful fwd_run: outputs (fwd_check_outputs) and gaps. */
int fwd_check_result(const tcase *tc, lig_dtype val_dtype, const op_result *res, const char *label);
/* Runs the forward on the case and checks it (success, outputs, gaps). Returns 1 on success. */
int fwd_check_case(tcase *tc, int with_values, lig_dtype val_dtype, const char *label);
/* As fwd_check_case, but for layouts the library may refuse (innermost stride 2, broadcast):
 * a clean phase-1 PARAM_INVALID (message, nothing written, no executor) is accepted too. */
int fwd_check_case_or_refused(tcase *tc, int with_values, lig_dtype val_dtype, const char *label, int *refused);

typedef struct kl_gen_opts {
    double p_pad;         /* share of slots that do not count */
    double p_empty_row;   /* share of rows with no counted slot */
    double p_zero_target; /* share of counted slots with target exactly 0 */
    int normalize;        /* 1: targets L1-normalised per row (then rounded); 0: random mass */
    double logit_scale;   /* counted values uniform in [-logit_scale, logit_scale] */
    int poison;           /* NaN/Inf/negatives/garbage in slots that do not count */
} kl_gen_opts;

void kl_gen_opts_default(kl_gen_opts *o);
/* Fills values, target and indices of an allocated klcase. */
void kl_gen_data(th_rng *r, klcase *kc, const kl_gen_opts *o);

/* Compares KL outputs with the reference (loss within float rounding of the float64 sum,
 * dy elementwise within the dtype's rounding, exact zeros where nothing counts). */
int kl_check_outputs(const klcase *kc, double lib_loss, const double *lib_dy, const char *label);
/* Reads the outputs of an instance whose phase 2 succeeded and checks them (fwd_check_outputs,
 * sparse_values read when with_values; kl_check_outputs). */
int fwd_check_inst(const op_inst *oi, const tcase *tc, int with_values, lig_dtype val_dtype, const char *label);
int kl_check_inst(const op_inst *oi, const klcase *kc, const char *label);
/* Checks a successful kl_run: outputs (kl_check_outputs) and gaps. */
int kl_check_result(const klcase *kc, const op_result *res, const char *label);
/* Runs the KL step and checks it. Returns 1 on success. */
int kl_check_case(klcase *kc, const char *label);
/* With a clean phase-1 PARAM_INVALID accepted too: suite_check (suite.h) with `refused`. */

#endif /* LIG_TESTS_HARNESS_FORWARD_KL_CHECKS_H */

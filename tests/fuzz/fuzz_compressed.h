/* What the libFuzzer targets of the compressed-key operators share (fuzz-lig-lse, fuzz-lig-l1norm):
 * the defect byte's common kinds (the rule's mask_mode, cmp_ratio and a residual, contract 4.1)
 * and the verdict of one call (refused by name with the output untouched, or a success to check). */
#ifndef LIG_TESTS_FUZZ_FUZZ_COMPRESSED_H
#define LIG_TESTS_FUZZ_FUZZ_COMPRESSED_H

#include <stdbool.h>
#include <stdint.h>

#include "compressed_lengths.h"
#include "fuzz_input.h"
#include "lig.h"
#include "tensor_buffers.h"

/* What both targets decode alike: the flags byte's low five bits (1 TND, 2 lengths, 4 residuals,
 * 8 mask_mode 3, 16 INT64 lengths), then B (0..3, TND 1..3) and S1 (0..12, or 100..300 now and
 * then so that ratio 128 sees whole blocks); later, a ratio byte (< 192: one of
 * 1,2,3,4,5,8,16,128, else 1 + byte % 128) and a strides byte. */
typedef struct fz_cmp_common {
    bool tnd, lengths, residual;
    int64_t mask_mode, B, S1;
    lig_dtype len_dtype;
} fz_cmp_common;
void fz_cmp_decode_common(fz_in *in, uint8_t flags, fz_cmp_common *c);
int64_t fz_cmp_ratio(uint8_t byte);
tc_strides fz_cmp_strides(fz_in *in);
/* FLOAT32, FLOAT16 or BFLOAT16 from the next byte. */
lig_dtype fz_cmp_float_dtype(fz_in *in);

/* A defect byte below 200 breaks nothing; else it picks 1 + byte % (kinds - 1), `kinds` counting
 * FZ_CMP_NONE and the target's own kinds numbered from FZ_CMP_OWN. */
enum { FZ_CMP_NONE, FZ_CMP_MASK, FZ_CMP_RATIO, FZ_CMP_RESIDUAL, FZ_CMP_OWN };
int fz_cmp_defect_kind(uint8_t byte, int kinds);

/* Applies a common defect `kind` (by `byte`) to the call's mask mode, ratio or lengths; returns the
 * parameter the refusal must name, or NULL when `kind` is not a common one (or the case has no
 * batch for a residual). */
const char *fz_cmp_break(int kind, uint8_t byte, int64_t *mask_mode, int64_t *ratio, cmp_lengths *len,
                         lig_dtype len_dtype);

/* The verdict of a call that returned `st`: with `names`, a PARAM_INVALID naming it and `out`
 * unchanged (named `out_name`); otherwise success. Counts the iteration; returns true when the
 * caller is to check the outputs. */
bool fz_cmp_verdict(const char *label, lig_status st, const char *names, const tbuf *out, const char *out_name);

#endif

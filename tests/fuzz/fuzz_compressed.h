/* What the libFuzzer targets of the compressed-key operators share (fuzz-lig-lse, fuzz-lig-l1norm):
 * the defect byte's common kinds (the rule's mask_mode, cmp_ratio and a residual, contract 4.1)
 * and the verdict of one call (refused by name with the output untouched, or a success to check). */
#ifndef LIG_TESTS_FUZZ_FUZZ_COMPRESSED_H
#define LIG_TESTS_FUZZ_FUZZ_COMPRESSED_H

#include <stdbool.h>
#include <stdint.h>

#include "compressed_lengths.h"
#include "lig.h"
#include "tensor_buffers.h"

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

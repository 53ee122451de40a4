/*
 * The quantized forward's problem as the fuzz targets decode it (fuzz-lig-fwd's op 4, fuzz-aclnn's
 * aclnnQuantLightningIndexer): three flag bytes (codes, layouts, query scales, values, lengths,
 * padding, short outputs; the dtypes; mode, band, INT8 extremes, NaN codes, duplicate keys), then
 * B, S1, S2, N2, G, D, K and the block size, and the data's seed.
 */
#ifndef LIG_FUZZ_QUANT_SPEC_H
#define LIG_FUZZ_QUANT_SPEC_H

#include "fuzz_input.h"
#include "quant_case.h"

/* The first flag byte's bits, which the logits operator (fuzz-lig-fwd's op 6) reads the same way:
 * codes, query layout, paged keys, query scales, values, lengths, padding, short outputs. */
void fz_qspec_flags(qspec *s, uint8_t a);

/* The extents, read in this order: B in [1, 3], S1 in [0, max_s1], S2 in [0, max_s2], N2 in
 * [1, max_n2], G in [1, 9], D in [0, 140], K in [1, 45], the block size in [1, max_block]. */
void fz_qspec_extents(fz_in *in, qspec *s, int64_t max_s1, int64_t max_s2, int64_t max_n2, int64_t max_block);

/* MXFP4 codes (FLOAT4_E2M1X2) instead of the flag byte's FP8 / INT8: the query scales always,
 * their dtype and the keys' UINT8 or INT32 by bits 0 and 1 of `bits`, D made even. Call after
 * the extents. */
void fz_qspec_fp4(qspec *s, uint8_t bits);

/* Fills *s and returns the seed of the case's data (qcase_make's generator). With `mxfp4` (lig's
 * own operator; CANN's has no FP4), the second flag byte's values 216..255 (b / 72 == 3) choose
 * MXFP4. */
uint32_t fz_decode_qspec(fz_in *in, qspec *s, int mxfp4);

#endif /* LIG_FUZZ_QUANT_SPEC_H */

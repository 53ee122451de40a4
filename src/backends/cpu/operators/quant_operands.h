/* Operand preparation the quantized forward's engines share (fwd_engine_quant_portable.c, fwd_engine_i8.c,
 * fwd_engine_fp8.c): a stripe's weights and query scales in fp32, and whether a block's key rows lie
 * evenly spaced in memory so that a product can read them in place. */
#ifndef LIG_CPU_OPERATORS_QUANT_OPERANDS_H
#define LIG_CPU_OPERATORS_QUANT_OPERANDS_H

#include <stdint.h>

#include "backends/cpu/operators/fwd_engine.h"

/* wf[r*G + h] = w of row r, head h (and sqf likewise when c->has_sq) in fp32 for rows x G
 * columns, then zeros up to `padded` columns (padding columns add nothing). */
void lig_quant_load_weights(const lig_fwd_ctx *c, int64_t rows, const char *const *w, const char *const *sq,
                            float *wf, float *sqf, int64_t padded);

/* The block's key scales in fp32: sk[n] = *key_scale[n]. */
void lig_quant_load_key_scales(const lig_fwd_ctx *c, int64_t n, const char *const *key_scale, float *sk);

/* The byte distance between consecutive rows of key[0 .. n) when it is one positive constant
 * (the rows are a matrix with that row stride), else 0; 0 for n < 2. */
int64_t lig_quant_rows_stride(int64_t n, const char *const *key);

#endif

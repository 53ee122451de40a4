/*
 * Test-side float formats, written independently of the library: round-to-nearest-even from
 * float64 straight into FLOAT32 / FLOAT16 / BFLOAT16 (no double rounding through float), bit
 * encodings, and decoding. Used to build inputs (values exactly representable in the dtype)
 * and to read outputs.
 */
#ifndef LIG_TESTS_HARNESS_FLOAT_FORMATS_H
#define LIG_TESTS_HARNESS_FLOAT_FORMATS_H

#include <stddef.h>
#include <stdint.h>

#include "lig.h"

/* x rounded to nearest-even in the format; overflow gives +-inf, NaN stays NaN. */
double th_round_f32(double x);
double th_round_f16(double x);
double th_round_bf16(double x);

/* Rounds to the floating dtype (FLOAT32/FLOAT16/BFLOAT16); integer dtypes return x unchanged. */
double th_round_dtype(lig_dtype dtype, double x);

/* Bit patterns of x rounded to the format (NaN -> canonical quiet NaN with x's sign). */
uint16_t th_f16_bits(double x);
uint16_t th_bf16_bits(double x);
uint32_t th_f32_bits(double x);

/* Values of bit patterns. */
double th_f16_value(uint16_t bits);
double th_bf16_value(uint16_t bits);
double th_f32_value(uint32_t bits);

/* Size in bytes of one element of dtype (0 for an unknown dtype). */
size_t th_dtype_size(lig_dtype dtype);
int th_dtype_is_float(lig_dtype dtype);
const char *th_dtype_name(lig_dtype dtype);

#endif /* LIG_TESTS_HARNESS_FLOAT_FORMATS_H */

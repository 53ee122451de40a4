/* The public entries of the 16-bit, 8-bit and 4-bit float conversions (lig.h), for callers that convert data the
 * way lig does: the CANN front end's aclFloatToFloat16 among them. */
#include "core/dtype_convert.h"
#include "core/fp4_bits.h"

float lig_bfloat16_to_float(uint16_t h) { return lig_bf16_to_f32(h); }

uint16_t lig_float_to_bfloat16(float f) { return lig_f32_to_bf16(f); }

float lig_float16_to_float(uint16_t h) { return lig_f16_to_f32(h); }

uint16_t lig_float_to_float16(float f) { return lig_f32_to_f16(f); }

float lig_float8_e4m3fn_to_float(uint8_t bits) { return lig_fp8e4m3_to_f32(bits); }

uint8_t lig_float_to_float8_e4m3fn(float f) { return lig_f32_to_fp8e4m3(f); }

float lig_float4_e2m1_to_float(uint8_t bits) { return lig_fp4e2m1_to_f32(bits); }

uint8_t lig_float_to_float4_e2m1(float f) { return lig_f32_to_fp4e2m1(f); }

float lig_float8_e8m0fnu_to_float(uint8_t bits) { return lig_e8m0_to_f32(bits); }

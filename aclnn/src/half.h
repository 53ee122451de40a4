/* IEEE binary16 and bfloat16 conversions, exact and round-to-nearest-even. */
#ifndef LIG_ACLNN_HALF_H
#define LIG_ACLNN_HALF_H

#include <stdint.h>

float fe_half_to_float(uint16_t h);
uint16_t fe_float_to_half(float f);
float fe_bf16_to_float(uint16_t b);
uint16_t fe_float_to_bf16(float f);

#endif /* LIG_ACLNN_HALF_H */

/* CANN's float16 conversions (acl_base.h), with lig's rounding (lig.h): one implementation of the
 * 16-bit formats for the library and its front end. */
#include "../include/acl/acl_base.h"
#include "lig.h"

float aclFloat16ToFloat(aclFloat16 value) { return lig_float16_to_float(value); }

aclFloat16 aclFloatToFloat16(float value) { return lig_float_to_float16(value); }

/* aclDataType facts: sizes, names for messages, and lig's equivalents. */
#ifndef LIG_ACLNN_DTYPE_H
#define LIG_ACLNN_DTYPE_H

#include <stdbool.h>
#include <stddef.h>

#include <lig.h>

#include "../include/acl/acl_base.h"

size_t fe_dtype_size(aclDataType dtype);
const char *fe_dtype_name(aclDataType dtype);
/* false for the dtypes lig does not read. */
bool fe_dtype_to_lig(aclDataType dtype, lig_dtype *out);
const char *fe_format_name(aclFormat format);
/* Formats whose storage is plain row-major, as ND is; the fractal and C0-blocked ones are not. */
bool fe_format_is_plain(aclFormat format);

#endif /* LIG_ACLNN_DTYPE_H */

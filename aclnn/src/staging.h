/*
 * Staging: CANN's forward takes FLOAT32 weights with FLOAT16 / BFLOAT16 query and key; lig wants
 * one dtype for all three. The front end widens query and key to FLOAT32 (exact) in buffers the
 * executor owns, filled when phase 2 runs, and narrows FLOAT32 scores back into a half-precision
 * sparseValuesOut afterwards.
 */
#ifndef LIG_ACLNN_STAGING_H
#define LIG_ACLNN_STAGING_H

#include <stdbool.h>
#include <stdint.h>

#include "../include/aclnn/aclnn_base.h"
#include "tensor.h"

typedef struct fe_stage {
    bool output;       /* narrowed into the view after lig ran, rather than widened before */
    aclDataType dtype; /* the view's: ACL_FLOAT16 or ACL_BF16 */
    char *data;        /* the view's first element */
    int64_t ndim, shape[FE_MAX_DIMS], strides[FE_MAX_DIMS];
    int64_t numel;
    float *buf; /* numel contiguous floats */
} fe_stage;

/* Records `tensor` (already bound: live, in bounds, and numel FLOAT32 values known to fit in a
 * size_t: fe_args_stage) and allocates its buffer; false when out of memory. */
bool fe_stage_init(fe_stage *stage, const aclTensor *tensor, bool output);
/* Inputs: view -> buffer. */
void fe_stage_widen(const fe_stage *stage);
/* Outputs: buffer -> view, rounding to nearest even. */
void fe_stage_narrow(const fe_stage *stage);
void fe_stage_release(fe_stage *stage);

#endif /* LIG_ACLNN_STAGING_H */

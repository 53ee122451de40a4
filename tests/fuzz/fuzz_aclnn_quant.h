/*
 * fuzz-aclnn's fourth operator: aclnnQuantLightningIndexer (docs/aclnn.md) on a quantized-forward
 * problem decoded as for fuzz-lig-fwd (fuzz_quant_spec.h: FP8 or INT8, BSND / TND / PA_BSND keys,
 * every scale, weight and index dtype, padded strides, short outputs, NaN codes), its tensors
 * copied into aclrtMalloc memory with the same views, compared with lig_quant_indexer on the same
 * data. No values output (CANN's operator has none); a case without query scales is one CANN's
 * signature refuses (queryDequantScale is required).
 */
#ifndef LIG_FUZZ_ACLNN_QUANT_H
#define LIG_FUZZ_ACLNN_QUANT_H

#include <stddef.h>

#include "fuzz_input.h"

/* One call with a decoded front-end defect (a tensor destroyed, memory freed before phase 1 or
 * between the phases, a fractal format, ACL_HIFLOAT8 codes or another dtype lig lacks, the
 * executor run twice or destroyed, a workspace too small, a stream it did not make): the same
 * status in each phase as lig's and, after success, the same output bytes; a defect must fail
 * with nothing written. Returns FZ_ACL_MATCHED, FZ_ACL_FAILED_ALIKE or FZ_ACL_REFUSED_DEFECT. */
int fz_aclnn_quant(fz_in *in, char *label, size_t label_size);

#endif /* LIG_FUZZ_ACLNN_QUANT_H */

/* Argument checks shared by the operators' phase 1. Each returns LIG_SUCCESS or fails with
 * a message "<parameter>: expected <what>, got <what>". */
#ifndef LIG_API_ARGUMENT_CHECKS_H
#define LIG_API_ARGUMENT_CHECKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"
#include "lig.h"

typedef struct lig_named_tensor {
    const lig_tensor *tensor; /* may be NULL where the argument is optional */
    const char *name;
} lig_named_tensor;

/* Phase 1's pointer checks: every named tensor non-NULL, then the layout string (when
 * `check_layout`), the workspace-size and executor out-pointers. */
lig_status lig_check_phase1_pointers(const lig_named_tensor *required, size_t n, bool check_layout, const char *layout,
                                     const uint64_t *workspace_size, lig_executor *const *executor);

lig_status lig_check_layout(const char *layout, bool *tnd);
/* `form` describes the expected dimensions, e.g. "[B,S1,N1,D]". */
lig_status lig_check_rank(const lig_tensor *t, const char *name, int64_t rank, const char *form);
lig_status lig_check_float_dtype(const lig_tensor *t, const char *name);
lig_status lig_check_index_dtype(const lig_tensor *t, const char *name);
lig_status lig_check_same_dtype(const lig_tensor *t, const char *name, const lig_tensor *ref, const char *ref_name);
/* Exact shape match; `why` is printed in parentheses after the expected shape. */
lig_status lig_check_shape(const lig_tensor *t, const char *name, int64_t ndim, const int64_t *expect,
                           const char *why);
/* A loss output: FLOAT32, one element (shape [] or [1]). */
lig_status lig_check_loss_scalar(const lig_tensor *loss);
lig_status lig_check_mask_args(int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens);
/* No output may share a byte with an input, another output, or (between two of its own
 * elements) itself. Byte ranges are compared conservatively: interleaved views are refused. */
lig_status lig_check_outputs_disjoint(const lig_named_tensor *outputs, size_t n_outputs,
                                      const lig_named_tensor *inputs, size_t n_inputs);

/* Every present tensor on one device (host tensors only mix with host tensors); returns the
 * backend and ordinal of that device. The sequence-length arrays are not in the list: they are read by
 * phase 1 and must be host tensors whatever the device (lig_check_lengths_on_host). */
lig_status lig_check_backend(const lig_named_tensor *tensors, size_t n, lig_placement *placement);
lig_status lig_check_lengths_on_host(const lig_tensor *actual_seq_lengths_query,
                                     const lig_tensor *actual_seq_lengths_key);

#endif

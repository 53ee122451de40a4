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

/* What phase 1 checks of one tensor argument. */
typedef enum lig_argument_role {
    LIG_ARG_INPUT,           /* read on the device; never NULL */
    LIG_ARG_OPTIONAL_INPUT,  /* read on the device; may be NULL */
    LIG_ARG_OUTPUT,          /* written on the device; never NULL */
    LIG_ARG_OPTIONAL_OUTPUT, /* written on the device; may be NULL */
    LIG_ARG_HOST_LENGTHS     /* a sequence-length array: may be NULL, read by phase 1 on the host */
} lig_argument_role;

typedef struct lig_argument {
    const lig_tensor *tensor;
    const char *name; /* as in the operator's signature */
    lig_argument_role role;
} lig_argument;

/* An entry named by its parameter's own spelling: the message and the signature cannot drift. */
#define LIG_ARGUMENT(tensor, role) {(tensor), #tensor, (role)}

/* An operator's table of its tensor arguments: each is named once, with its role, and the
 * pointer, overlap and device checks all read the table. The order is the order of the
 * messages: the first NULL required argument; the first output (in order) that overlaps an
 * input (in order) or an earlier output; the first tensor off the device of the first present. */
typedef struct lig_arguments {
    const lig_argument *list;
    size_t n;
} lig_arguments;
#define LIG_ARGUMENTS_OF(list) ((lig_arguments){(list), sizeof(list) / sizeof((list)[0])})

/* Phase 1's pointer checks: every required tensor of the table non-NULL, then the layout
 * string (when `check_layout`), the workspace-size and executor out-pointers. */
lig_status lig_check_phase1_pointers(const lig_arguments *args, bool check_layout, const char *layout,
                                     const uint64_t *workspace_size, lig_executor *const *executor);

/* Phase 1's last argument checks, once the shapes have passed: no output shares a byte with an
 * input, another output, or (between two of its own elements) itself (byte ranges compared
 * conservatively: interleaved views are refused); every tensor but the sequence lengths on one
 * device, whose backend and ordinal `placement` receives; the sequence lengths, which phase 1
 * reads, on the host whatever the device. */
lig_status lig_check_placement(const lig_arguments *args, lig_placement *placement);

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
#endif

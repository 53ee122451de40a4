/* The kernel table for this CPU, chosen once. Set LIG_DISABLE_SIMD=1 in the environment to
 * force the portable kernels (the test suite runs both). */
#ifndef LIG_RUNTIME_CPU_DISPATCH_H
#define LIG_RUNTIME_CPU_DISPATCH_H

#include "kernels/kernels.h"

typedef struct lig_kernels {
    const char *isa; /* "scalar" or "avx2" */
    lig_sgemm_fn sgemm;
    lig_grad_gate_fn grad_gate;
    lig_fwd_scores_fn fwd_scores;
    lig_load_row_fn load_row;
    lig_store_row_fn store_row;
    lig_add_row_fn add_row;
} lig_kernels;

const lig_kernels *lig_kernels_get(void);

#endif

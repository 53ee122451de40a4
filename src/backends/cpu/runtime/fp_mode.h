/* The floating-point mode lig computes in, whatever its caller has set.
 *
 * The contract's results assume IEEE round-to-nearest-even with subnormals kept. A caller may
 * run with flush-to-zero / denormals-are-zero (torch.set_flush_denormal(True), -ffast-math
 * start-up code), another rounding direction, or unmasked exceptions; lig switches the thread
 * it computes on to its own mode for the length of a call and then puts the caller's back,
 * status flags included, so neither the results nor the caller's state change. lig's pool
 * threads take the mode once, when they start. docs/contract.md section 5 says the same. */
#ifndef LIG_CPU_RUNTIME_FP_MODE_H
#define LIG_CPU_RUNTIME_FP_MODE_H

#include "lig.h"

typedef struct lig_fp_mode {
    unsigned long long control; /* the register as found (MXCSR, FPCR), or the rounding direction */
} lig_fp_mode;

/* Returns the calling thread's mode and sets lig's: round to nearest even, subnormal inputs and
 * results kept, every exception masked. */
lig_fp_mode lig_fp_mode_enter(void);

/* Puts back a mode that lig_fp_mode_enter returned. */
void lig_fp_mode_leave(lig_fp_mode saved);

/* run(plan, workspace, stream) between enter and leave: a CPU plan's phase 2. */
typedef lig_status (*lig_fp_mode_run_fn)(void *plan, void *workspace, void *stream);
lig_status lig_fp_mode_run(lig_fp_mode_run_fn run, void *plan, void *workspace, void *stream);

#endif

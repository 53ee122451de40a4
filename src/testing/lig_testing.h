/* INTERNAL, for lig's own tests and benchmarks only: never installed, not part of the API, and
 * free to change with any commit. Programs use include/lig.h.
 *
 * The one way to change a knob of core/tuning.h at run time, so that a test can compare a problem
 * split one way with the same problem split another (the results must not change) without
 * restarting the process with another environment. Production headers declare no such hook. */
#ifndef LIG_TESTING_H
#define LIG_TESTING_H

#include <stdint.h>

#include "core/tuning.h"

/* Every knob from *t for the plans made from now on (and the phase 2 thread counts read from
 * now on); NULL: the environment's values again. Values out of range are brought into it (a
 * negative fwd_split_keys is the default slice length, a negative grad_ring_chunks automatic).
 * `isa` is the exception: the kernel set is chosen from the environment's once per process;
 * force one with lig_set_kernel_set. */
void lig_testing_set_tuning(const lig_tuning *t);

/* The slice length of the CPU forward's key split: n >= 0 fixes it (0: never split), n < 0 is the
 * default length; the other knobs stay as they are. */
static inline void lig_testing_set_fwd_split_keys(int64_t n) {
    lig_tuning t = lig_tuning_current();
    t.fwd_split_keys = n;
    lig_testing_set_tuning(&t);
}

/* Chunk buffers in the CPU backward's commit ring for new plans (0: automatic); the other knobs
 * stay as they are. */
static inline void lig_testing_set_grad_ring_chunks(int64_t chunks) {
    lig_tuning t = lig_tuning_current();
    t.grad_ring_chunks = chunks;
    lig_testing_set_tuning(&t);
}

#endif

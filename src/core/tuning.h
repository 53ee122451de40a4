/* The knobs: every setting lig takes from the environment, in one struct, read once per process.
 *
 * None of them changes a result the contract fixes except `isa`, which picks the kernels (and so,
 * in the last bits, the results: contract section 8); the others change how the work is cut up
 * and how many threads run it. docs/contract.md section 8 has the table (variable, default,
 * what it changes).
 *
 * A value that does not parse, or lies outside the range below, is ignored: the default applies
 * and one warning on stderr names the variable, what was expected and what was received. Ignoring
 * it is safe because such a knob cannot change an output; LIG_ISA, which can, is not checked here
 * but by the kernel-set choice, which fails every phase 1 while it names a set this CPU lacks.
 *
 * Backends read lig_tuning_current(). Tests and benchmarks override knobs through
 * testing/lig_testing.h, the only place that can. */
#ifndef LIG_CORE_TUNING_H
#define LIG_CORE_TUNING_H

#include <stddef.h>
#include <stdint.h>

typedef struct lig_tuning {
    /* LIG_NUM_THREADS: the thread count when lig_set_num_threads has not fixed one; a whole number
     * >= 1 (values above LIG_MAX_THREADS are LIG_MAX_THREADS). Default: the online CPUs. */
    int default_threads;
    /* LIG_MIN_FLOPS_PER_THREAD: a phase 2 wakes no more than one thread per this many floating-
     * point operations of work; a finite number >= 0 (0: every thread, however small the work).
     * Default 4e6: waking a thread costs tens of microseconds. */
    double min_flops_per_thread;
    /* LIG_FWD_SPLIT_KEYS: the CPU forward's slice length, in keys, when it splits the keys of a
     * problem with few rows (decode); a whole number >= 0, 0 = never split. Default (-1): at least
     * 4096 keys and 4 K (fwd_split.h). */
    int64_t fwd_split_keys;
    /* No variable (tests only): chunk buffers in the CPU backward's commit ring. Default (0): sized
     * from the thread count and the problem (indexer_grad_plan.c). */
    int64_t grad_ring_chunks;
    /* LIG_CUDA_CHUNK_BYTES: the bytes the CUDA plans' chunked regions may take together; a whole
     * number, raised to LIG_TUNING_MIN_CUDA_CHUNK_BYTES when below it. Default 1 GiB. */
    uint64_t cuda_chunk_bytes;
    /* LIG_ISA, else "scalar" when LIG_DISABLE_SIMD holds anything but "" or "0", else NULL: the CPU
     * kernel set to use when lig_set_kernel_set has not forced one. Not checked here (the names
     * belong to the kernel sets); static storage (the environment's string). */
    const char *isa;
} lig_tuning;

#define LIG_TUNING_DEFAULT_MIN_FLOPS_PER_THREAD 4e6
#define LIG_TUNING_DEFAULT_CUDA_CHUNK_BYTES ((uint64_t)1 << 30)
/* Smaller chunked regions would hold less than one unit of any useful problem. */
#define LIG_TUNING_MIN_CUDA_CHUNK_BYTES ((uint64_t)64 << 10)

/* The knobs in effect: the environment's, unless a test has overridden them. */
lig_tuning lig_tuning_current(void);

/* The knobs as the environment set them (read on the first call, then fixed for the process). */
const lig_tuning *lig_tuning_environment(void);

/* Where lig_tuning_parse reads a variable: its value, or NULL when it is not set. */
typedef const char *(*lig_tuning_lookup)(const char *name);

/* Fills *t from `lookup`, checking every value; for each one ignored, appends a line naming the
 * variable, what was expected and what was received to `warnings` (cap bytes, always terminated;
 * may be NULL when cap is 0). Returns the number of values ignored. */
int lig_tuning_parse(lig_tuning *t, lig_tuning_lookup lookup, char *warnings, size_t cap);

#endif

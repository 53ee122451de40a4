/* The CPU features of an architecture lig has no SIMD kernels for (see cpu_features.h): every
 * field false, so that only the portable set is supported. Compiled where neither
 * cpu_features_x86.c nor cpu_features_arm.c applies (kernel_sets.cmake). */
#include "backends/cpu/runtime/cpu_features.h"

const lig_cpu_features *lig_cpu_features_get(void) {
    static const lig_cpu_features none;
    return &none;
}

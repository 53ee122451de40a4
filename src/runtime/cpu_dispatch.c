#include "runtime/cpu_dispatch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const lig_kernels scalar_kernels = {
    .isa = "scalar",
    .sgemm = lig_sgemm__scalar,
    .grad_gate = lig_grad_gate__scalar,
    .fwd_scores = lig_fwd_scores__scalar,
    .load_row = lig_load_row__scalar,
    .store_row = lig_store_row__scalar,
    .add_row = lig_add_row__scalar,
};

#if defined(LIG_HAVE_X86_KERNELS)
static const lig_kernels avx2_kernels = {
    .isa = "avx2",
    .sgemm = lig_sgemm__avx2,
    .grad_gate = lig_grad_gate__avx2,
    .fwd_scores = lig_fwd_scores__avx2,
    .load_row = lig_load_row__avx2,
    .store_row = lig_store_row__avx2,
    .add_row = lig_add_row__avx2,
};
#endif

static const lig_kernels *selected = &scalar_kernels;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int simd_disabled_by_env(void) {
    const char *v = getenv("LIG_DISABLE_SIMD");
    return v && *v && strcmp(v, "0") != 0;
}

static void select_kernels(void) {
    if (simd_disabled_by_env()) return;
#if defined(LIG_HAVE_X86_KERNELS)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) selected = &avx2_kernels;
#endif
}

const lig_kernels *lig_kernels_get(void) {
    pthread_once(&once, select_kernels);
    return selected;
}

/* The x86-64 CPU features (see cpu_features.h), read once with CPUID and XGETBV; compiled on
 * x86-64 only (kernel_sets.cmake picks one cpu_features_<arch>.c). */
/* syscall() for arch_prctl */
#define _GNU_SOURCE
#include "backends/cpu/runtime/cpu_features.h"

#include <pthread.h>

#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

static lig_cpu_features features;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static unsigned long long xgetbv0(void) {
    unsigned int lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

/* Linux grants the tile data state (XFEATURE 18) per process, on request. */
static bool amx_permission(void) {
#if defined(__linux__) && defined(SYS_arch_prctl)
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
    return false;
#endif
}

static void detect(void) {
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28), f16c = c & (1u << 29);
    if (!osxsave || !avx) return;
    const unsigned long long xcr0 = xgetbv0();
    const bool ymm_state = (xcr0 & 0x6) == 0x6;
    const bool zmm_state = (xcr0 & 0xe6) == 0xe6;
    const bool tile_state = (xcr0 & 0x60000) == 0x60000;
    unsigned int b7 = 0, c7 = 0, d7 = 0, a71 = 0;
    if (__get_cpuid_max(0, NULL) >= 7) {
        __cpuid_count(7, 0, a, b7, c7, d7);
        __cpuid_count(7, 1, a71, b, c, d);
    }
    const bool avx2 = b7 & (1u << 5);
    const bool avx512 = (b7 & (1u << 16)) && (b7 & (1u << 17)) && (b7 & (1u << 30)) && (b7 & (1u << 31));
    features.avx2_fma_f16c = ymm_state && avx2 && fma && f16c;
    features.avx_vnni = features.avx2_fma_f16c && (a71 & (1u << 4)); /* ymm registers: the ymm state */
    features.avx512 = features.avx2_fma_f16c && zmm_state && avx512;
    features.avx512_bf16 = features.avx512 && (a71 & (1u << 5));
    features.avx512_vnni = features.avx512 && (c7 & (1u << 11));
    features.gfni = c7 & (1u << 8);
    features.avx512_vbmi = features.avx512 && (c7 & (1u << 1));
    const bool amx = (d7 & (1u << 22)) && (d7 & (1u << 24));
    features.amx_bf16 = features.avx512_bf16 && amx && tile_state && amx_permission();
}

const lig_cpu_features *lig_cpu_features_get(void) {
    pthread_once(&once, detect);
    return &features;
}

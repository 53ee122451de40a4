/* The aarch64 CPU features (see cpu_features.h), read once from the kernel's hardware
 * capabilities (getauxval AT_HWCAP / AT_HWCAP2, Linux); compiled on aarch64 only
 * (kernel_sets.cmake picks one cpu_features_<arch>.c). Elsewhere (no getauxval) every field
 * stays false and the portable set runs. */
#include "backends/cpu/runtime/cpu_features.h"

#include <pthread.h>

#if defined(__linux__)
#include <sys/auxv.h>
#include <sys/prctl.h>
#endif

static lig_cpu_features features;
static pthread_once_t once = PTHREAD_ONCE_INIT;

#if defined(__linux__)
/* The bits of Linux's arm64 <asm/hwcap.h>, defined here for C libraries whose headers predate
 * them (the values are the kernel's ABI). */
enum {
    HWCAP_BIT_ASIMD = 1 << 1,
    HWCAP_BIT_ASIMDDP = 1 << 20,
    HWCAP_BIT_SVE = 1 << 22,
    HWCAP2_BIT_SVE2 = 1 << 1,
    HWCAP2_BIT_I8MM = 1 << 13,
    HWCAP2_BIT_BF16 = 1 << 14,
};
#ifndef AT_HWCAP2
#define AT_HWCAP2 26
#endif
#ifndef PR_SVE_GET_VL
#define PR_SVE_GET_VL 51
#endif
#ifndef PR_SVE_VL_LEN_MASK
#define PR_SVE_VL_LEN_MASK 0xffff
#endif

static void detect(void) {
    const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    features.asimd = hw & HWCAP_BIT_ASIMD;
    /* the optional units build on Advanced SIMD: a kernel set needing one needs both */
    features.asimd_dotprod = features.asimd && (hw & HWCAP_BIT_ASIMDDP);
    features.i8mm = features.asimd && (hw2 & HWCAP2_BIT_I8MM);
    features.bf16 = features.asimd && (hw2 & HWCAP2_BIT_BF16);
    features.sve = hw & HWCAP_BIT_SVE;
    features.sve2 = features.sve && (hw2 & HWCAP2_BIT_SVE2);
    if (features.sve) {
        /* this thread's vector length; Linux gives new threads the process's default */
        const int vl = prctl(PR_SVE_GET_VL, 0, 0, 0, 0);
        features.sve_vector_bytes = vl > 0 ? vl & PR_SVE_VL_LEN_MASK : 0;
    }
}
#else
static void detect(void) {}
#endif

const lig_cpu_features *lig_cpu_features_get(void) {
    pthread_once(&once, detect);
    return &features;
}

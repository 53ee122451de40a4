/* What the processor (and the operating system, for the register state it must save) lets
 * lig use, read once. One struct for every architecture: each cpu_features_<arch>.c (x86: CPUID
 * and XGETBV; arm: getauxval; none: nothing) fills its architecture's fields, and the others stay
 * false. The kernel sets' cpu_supports read it. */
#ifndef LIG_CPU_RUNTIME_CPU_FEATURES_H
#define LIG_CPU_RUNTIME_CPU_FEATURES_H

#include <stdbool.h>

typedef struct lig_cpu_features {
    /* x86-64 */
    bool avx2_fma_f16c;  /* AVX2, FMA3, F16C with YMM state enabled */
    bool avx_vnni;       /* AVX-VNNI (VEX vpdpbusd ymm, CPUID.(7,1):EAX bit 4), with avx2_fma_f16c */
    bool avx512;         /* AVX512 F, BW, DQ, VL with ZMM and opmask state enabled */
    bool avx512_bf16;    /* AVX512_BF16 (vdpbf16ps, vcvtne2ps2bf16) */
    bool avx512_vbmi;    /* byte permutes (vpermb, vpermt2b) */
    bool avx512_vnni;    /* AVX512_VNNI (vpdpbusd zmm), with the avx512 state */
    bool gfni;           /* Galois-field affine bytes (used as 8x8 bit transposes) */
    bool amx_bf16;       /* AMX-TILE and AMX-BF16 with tile state enabled, and the kernel's permission
                            to use it granted to this process */
    /* aarch64 (Linux: AT_HWCAP, AT_HWCAP2) */
    bool asimd;          /* Advanced SIMD (every ARMv8-A core) */
    bool asimd_dotprod;  /* SDOT / UDOT (ARMv8.2 dot product) */
    bool i8mm;           /* SMMLA / UMMLA / USDOT (int8 matrix multiply) */
    bool bf16;           /* BFDOT / BFMMLA / BFCVT */
    bool sve;            /* the Scalable Vector Extension */
    bool sve2;
    int sve_vector_bytes; /* the SVE vector length of this thread, in bytes (0 without sve) */
} lig_cpu_features;

const lig_cpu_features *lig_cpu_features_get(void);

#endif

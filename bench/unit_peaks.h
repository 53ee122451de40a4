#ifndef LIG_BENCH_UNIT_PEAKS_H
#define LIG_BENCH_UNIT_PEAKS_H

/* The compute units a lig kernel set can run on, and their peaks measured on this machine
 * (bench/unit_peaks.c explains how). */
typedef enum bench_unit {
    BENCH_UNIT_NONE = -1,   /* portable C: no vector unit is claimed, no ratio is reported */
    BENCH_UNIT_AVX2_FMA,    /* vfmadd231ps ymm: 8 lanes x 2 flops = 16 flops per instruction */
    BENCH_UNIT_AVX512_FMA,  /* vfmadd231ps zmm: 16 lanes x 2 flops = 32 flops */
    BENCH_UNIT_AVX512_BF16, /* vdpbf16ps zmm: 16 lanes x 2 bf16 pairs x 2 flops = 64 flops */
    BENCH_UNIT_AMX_BF16,    /* tdpbf16ps 16x16x32 tiles: 2*16*16*32 = 16384 flops */
    /* int8 units, in int8 ops (2 per multiply-add, as flops are counted) */
    BENCH_UNIT_AVX2_I16,    /* vpmaddwd + vpaddd ymm (int8 sign-extended to int16): 16 lanes x 2 = 32 ops */
    BENCH_UNIT_AVX512_I16,  /* vpmaddwd + vpaddd zmm: 32 lanes x 2 = 64 ops */
    BENCH_UNIT_AVX512_VNNI, /* vpdpbusd zmm: 64 u8 x s8 products x 2 = 128 ops */
    BENCH_UNIT_AVX_VNNI,    /* {vex} vpdpbusd ymm (AVX-VNNI): 32 u8 x s8 products x 2 = 64 ops */
    BENCH_UNIT_COUNT
} bench_unit;

/* Short key for JSON ("avx2-fma", ...); "none" for BENCH_UNIT_NONE. */
const char *bench_unit_key(int unit);
/* Label for tables ("AVX2 FMA", ...); "none" for BENCH_UNIT_NONE. */
const char *bench_unit_label(int unit);
/* The instruction timed and the flops counted per instruction, in words. */
const char *bench_unit_instruction(int unit);
/* 1 when the CPU has the unit and the OS lets this process use it (for AMX: after the
 * ARCH_REQ_XCOMP_PERM request, made once here). */
int bench_unit_available(int unit);
/* The median of v[0 .. n) (sorts v). */
double bench_median(double *v, int n);
/* The CPU's model name (/proc/cpuinfo), or "unknown", into out[size]. */
void bench_cpu_model(char *out, unsigned long size);
/* Times the peaks in the process's CPU time (on != 0) instead of wall-clock time: on a machine
 * shared with other work, a one-thread figure then counts only the time this process ran. */
void bench_unit_use_cpu_time(int on);
/* Best of `reps` runs of `threads` threads running the unit's instruction at once, GFLOP/s;
 * 0 when the unit is not available. */
double bench_unit_peak_gflops(int unit, int threads, int reps);
/* The same for one thread, timed by the thread's CPU time (CLOCK_THREAD_CPUTIME_ID) instead of the
 * wall clock: on a machine shared with other work, the rate while the thread runs. */
double bench_unit_peak_gflops_cpu_time(int unit, int reps);
/* The unit the kernels of a lig kernel set use (lig_executor_kernel_set's names): scalar ->
 * none, avx2 -> AVX2 FMA, avx512 -> AVX-512 FMA, avx512bf16 -> AVX512-BF16, amx-bf16 -> AMX. */
int bench_unit_for_kernel_set(const char *set);
/* The unit the int8 GEMM of a set's int8 family uses (lig_i8_kernels.name): avx2 -> AVX2 int16,
 * avx512 -> AVX-512 int16, avx512vnni -> AVX512-VNNI, avxvnni -> AVX-VNNI, else none. */
int bench_unit_for_i8_kernels(const char *name);

#endif

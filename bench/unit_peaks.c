/* The peak of every compute unit a lig kernel set can use, measured on this machine.
 *
 * For each unit, every thread runs a loop of nothing but that unit's instruction on independent
 * accumulators (enough of them to cover the instruction's latency with its throughput), all
 * threads at once; the figure is the best of a few runs (the peak is what the cores can do,
 * noise only ever lowers it), in GFLOP/s, per thread count. Flops counted per instruction:
 *   AVX2 FMA      vfmadd231ps ymm   8 lanes x 2                      =    16
 *   AVX-512 FMA   vfmadd231ps zmm  16 lanes x 2                      =    32
 *   AVX512-BF16   vdpbf16ps zmm    16 lanes x 2 bf16 pairs x 2       =    64
 *   AMX-BF16      tdpbf16ps        16 x 16 x 32 tile product x 2     = 16384
 * and the int8 units, in int8 ops (2 per multiply-add, counted like flops):
 *   AVX2 int16    vpmaddwd + vpaddd ymm   16 int16 products x 2      =    32
 *   AVX-512 int16 vpmaddwd + vpaddd zmm   32 int16 products x 2      =    64
 *   AVX512-VNNI   vpdpbusd zmm            64 u8 x s8 products x 2    =   128
 *   AVX-VNNI      {vex} vpdpbusd ymm      32 u8 x s8 products x 2    =    64
 * (vpmaddwd does not accumulate: the pair is what one step of an exact int8 GEMM without VNNI
 * costs, so it is timed as a pair, the product feeding the add of the same chain.)
 * A unit is measured only when CPUID says the CPU has it and XGETBV says the OS saves its state
 * (for AMX, the process also asks the kernel for the tile data state once, with
 * arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)). Each loop is compiled for its ISA with a
 * per-function target attribute, so the file builds with any x86-64 compiler flags.
 *
 * Nothing can be folded away: every accumulator is loop-carried (each instruction reads the
 * previous one's result), the other operands come from volatile loads, and the AMX instructions
 * are volatile asm. The results are stored into a volatile sink at the end. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "unit_peaks.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define X86 1
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
/* the toolchain knows AVX-VNNI (GCC 11, clang 12 and later) */
#if defined(__has_include)
#if __has_include(<avxvnniintrin.h>)
#define HAVE_AVX_VNNI_LOOP 1
#endif
#endif
#else
#define X86 0
#endif

static const char *const keys[BENCH_UNIT_COUNT] = {"avx2-fma", "avx512-fma", "avx512-bf16", "amx-bf16",
                                                   "avx2-i16", "avx512-i16", "avx512-vnni", "avx-vnni"};
static const char *const labels[BENCH_UNIT_COUNT] = {"AVX2 FMA", "AVX-512 FMA", "AVX512-BF16 dot", "AMX-BF16 tiles",
                                                     "AVX2 int16 madd", "AVX-512 int16 madd", "AVX512-VNNI dot",
                                                     "AVX-VNNI dot"};
static const char *const instructions[BENCH_UNIT_COUNT] = {
    "vfmadd231ps ymm, 16 flops each", "vfmadd231ps zmm, 32 flops each",
    "vdpbf16ps zmm, 64 flops each (16 lanes x 2 bf16 pairs x 2)",
    "tdpbf16ps 16x16x32 bf16 tiles, 16384 flops each (2*16*16*32)",
    "vpmaddwd + vpaddd ymm, 32 int8 ops each pair (16 int16 products x 2)",
    "vpmaddwd + vpaddd zmm, 64 int8 ops each pair (32 int16 products x 2)",
    "vpdpbusd zmm, 128 int8 ops each (64 u8 x s8 products x 2)",
    "{vex} vpdpbusd ymm, 64 int8 ops each (32 u8 x s8 products x 2)"};

const char *bench_unit_key(int unit) { return unit >= 0 && unit < BENCH_UNIT_COUNT ? keys[unit] : "none"; }
const char *bench_unit_label(int unit) { return unit >= 0 && unit < BENCH_UNIT_COUNT ? labels[unit] : "none"; }
const char *bench_unit_instruction(int unit) {
    return unit >= 0 && unit < BENCH_UNIT_COUNT ? instructions[unit] : "portable C, no vector unit";
}

/* Per kernel-set name (LIG_ISA's, and the int8 kernels' own): the unit its float kernels run on
 * and the one its int8 kernels run on. */
static const struct kernel_units {
    const char *name;
    int float_unit, int8_unit;
} kernel_units[] = {
    {"avx2", BENCH_UNIT_AVX2_FMA, BENCH_UNIT_AVX2_I16},
    {"avx512", BENCH_UNIT_AVX512_FMA, BENCH_UNIT_AVX512_I16},
    {"avx512bf16", BENCH_UNIT_AVX512_BF16, BENCH_UNIT_NONE},
    {"amx-bf16", BENCH_UNIT_AMX_BF16, BENCH_UNIT_NONE},
    {"avx512vnni", BENCH_UNIT_NONE, BENCH_UNIT_AVX512_VNNI},
    {"avxvnni", BENCH_UNIT_NONE, BENCH_UNIT_AVX_VNNI},
};

static const struct kernel_units *kernel_units_named(const char *name) {
    for (size_t i = 0; name && i < sizeof kernel_units / sizeof kernel_units[0]; i++)
        if (!strcmp(name, kernel_units[i].name)) return &kernel_units[i];
    return NULL;
}

int bench_unit_for_kernel_set(const char *set) {
    const struct kernel_units *k = kernel_units_named(set);
    return k ? k->float_unit : BENCH_UNIT_NONE;
}

int bench_unit_for_i8_kernels(const char *name) {
    const struct kernel_units *k = kernel_units_named(name);
    return k ? k->int8_unit : BENCH_UNIT_NONE;
}

static volatile float sink;

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void bench_cpu_model(char *out, unsigned long size) {
    snprintf(out, size, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[256];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            const char *p = strchr(line, ':');
            if (p) snprintf(out, size, "%s", p + 2);
            out[strcspn(out, "\n")] = 0;
            break;
        }
    fclose(f);
}

static int use_cpu_time; /* bench_unit_use_cpu_time */

void bench_unit_use_cpu_time(int on) { use_cpu_time = on; }

static double seconds(void) {
    struct timespec ts;
    clock_gettime(use_cpu_time ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#if X86
/* ---- which units this CPU and OS provide -------------------------------------------------- */

static uint64_t xcr0(void) {
    uint32_t a, d;
    __asm__ volatile("xgetbv" : "=a"(a), "=d"(d) : "c"(0));
    return ((uint64_t)d << 32) | a;
}

static int detected[BENCH_UNIT_COUNT];
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;

static void detect(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    const int fma = (c >> 12) & 1, osxsave = (c >> 27) & 1;
    if (!osxsave) return;
    const uint64_t x = xcr0();
    const int ymm_state = (x & 0x6) == 0x6, zmm_state = ymm_state && (x & 0xe0) == 0xe0,
              tile_state = (x & 0x60000) == 0x60000;
    unsigned b7 = 0, c7 = 0, d7 = 0, a71 = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        b7 = b;
        c7 = c;
        d7 = d;
        if (a >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) a71 = a;
    }
    const int avx2 = (b7 >> 5) & 1, avx512f = (b7 >> 16) & 1, avx512bf16 = (a71 >> 5) & 1;
    const int amx_bf16 = (d7 >> 22) & 1, amx_tile = (d7 >> 24) & 1;
    detected[BENCH_UNIT_AVX2_FMA] = avx2 && fma && ymm_state;
    detected[BENCH_UNIT_AVX512_FMA] = avx512f && zmm_state;
    detected[BENCH_UNIT_AVX512_BF16] = avx512f && avx512bf16 && zmm_state;
    const int avx512bw = (b7 >> 30) & 1, avx512vnni = (c7 >> 11) & 1;
    detected[BENCH_UNIT_AVX2_I16] = avx2 && ymm_state;
    detected[BENCH_UNIT_AVX512_I16] = avx512f && avx512bw && zmm_state;
    detected[BENCH_UNIT_AVX512_VNNI] = avx512f && avx512vnni && zmm_state;
#if defined(HAVE_AVX_VNNI_LOOP)
    detected[BENCH_UNIT_AVX_VNNI] = avx2 && ((a71 >> 4) & 1) && ymm_state;
#endif
    if (amx_bf16 && amx_tile && tile_state) {
        /* Linux hands out the 8 KiB tile state only on request (once per process). */
        const long ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18;
        detected[BENCH_UNIT_AMX_BF16] = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
    }
}

int bench_unit_available(int unit) {
    pthread_once(&detect_once, detect);
    return unit >= 0 && unit < BENCH_UNIT_COUNT && detected[unit];
}

/* ---- the loops ---------------------------------------------------------------------------- */

static volatile float operand_a = 0.999999f, operand_b = 1e-7f, operand_small = 0.0009765625f;

#define PRAGMA(x) _Pragma(#x)
/* What the vector loops share: CHAINS accumulators of type VEC (started at 0, 1, 2, ... with SET1),
 * each advanced by STEP(acc, A, B) once an iteration, then summed with ADD into `sum`. UNROLL is
 * CHAINS again, as the literal the pragma takes. */
#define CHAINED_LOOP(VEC, CHAINS, UNROLL, SET1, ADD, STEP, A, B, iters, sum) \
    do {                                                                      \
        VEC acc[CHAINS];                                                      \
        for (int i = 0; i < CHAINS; i++) acc[i] = SET1((float)i);             \
        for (int64_t n = 0; n < (iters); n++) {                               \
            PRAGMA(GCC unroll UNROLL)                                         \
            for (int i = 0; i < CHAINS; i++) acc[i] = STEP(acc[i], A, B);     \
        }                                                                     \
        sum = acc[0];                                                         \
        for (int i = 1; i < CHAINS; i++) sum = ADD(sum, acc[i]);              \
    } while (0)

/* 12 chains of 4-cycle FMAs keep 2 FMA pipes busy (8 would do; 12 leaves slack). */
__attribute__((target("avx2,fma"))) static float avx2_fma_loop(int64_t iters) {
    const __m256 x = _mm256_set1_ps(operand_a), y = _mm256_set1_ps(operand_b);
    __m256 s;
    CHAINED_LOOP(__m256, 12, 12, _mm256_set1_ps, _mm256_add_ps, _mm256_fmadd_ps, x, y, iters, s);
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0];
}

__attribute__((target("avx512f"))) static float avx512_fma_loop(int64_t iters) {
    const __m512 x = _mm512_set1_ps(operand_a), y = _mm512_set1_ps(operand_b);
    __m512 s;
    CHAINED_LOOP(__m512, 16, 16, _mm512_set1_ps, _mm512_add_ps, _mm512_fmadd_ps, x, y, iters, s);
    return _mm512_reduce_add_ps(s);
}

/* acc += a . b over bf16 pairs; acc is loop-carried, a and b come from volatile loads. The
 * values stay normal and finite for any iteration count used here (acc grows by 2^-19 a step). */
__attribute__((target("avx512f,avx512bf16"))) static float avx512_bf16_loop(int64_t iters) {
    const __m512 va = _mm512_set1_ps(operand_small), vb = _mm512_set1_ps(operand_small);
    const __m512bh a = _mm512_cvtne2ps_pbh(va, va), b = _mm512_cvtne2ps_pbh(vb, vb);
    __m512 s;
    CHAINED_LOOP(__m512, 16, 16, _mm512_set1_ps, _mm512_add_ps, _mm512_dpbf16_ps, a, b, iters, s);
    return _mm512_reduce_add_ps(s);
}

static volatile int operand_i = 0x00030001;

/* acc += madd(acc, y): the product reads the chain it feeds, so neither can be hoisted; the
 * values wrap harmlessly (integers). Steps for CHAINED_LOOP, which hands a step two operands: these
 * take y and leave the other unused. */
#define I16_STEP_YMM(acc, y, unused) _mm256_add_epi32((acc), _mm256_madd_epi16((acc), (y)))
#define I16_STEP_ZMM(acc, y, unused) _mm512_add_epi32((acc), _mm512_madd_epi16((acc), (y)))

/* 12 chains of a 3-4 cycle madd + 1 cycle add. */
__attribute__((target("avx2"))) static float avx2_i16_loop(int64_t iters) {
    const __m256i y = _mm256_set1_epi32(operand_i);
    __m256i s;
    CHAINED_LOOP(__m256i, 12, 12, _mm256_set1_epi32, _mm256_add_epi32, I16_STEP_YMM, y, y, iters, s);
    return (float)_mm256_extract_epi32(s, 0);
}

/* Lane 0 of a zmm sum, as the ymm loops return: the lanes' sum overflows int. */
#define ZMM_LANE0(s) ((float)_mm_cvtsi128_si32(_mm512_castsi512_si128(s)))

__attribute__((target("avx512f,avx512bw"))) static float avx512_i16_loop(int64_t iters) {
    const __m512i y = _mm512_set1_epi32(operand_i);
    __m512i s;
    CHAINED_LOOP(__m512i, 20, 20, _mm512_set1_epi32, _mm512_add_epi32, I16_STEP_ZMM, y, y, iters, s);
    return ZMM_LANE0(s);
}

__attribute__((target("avx512f,avx512vnni"))) static float avx512_vnni_loop(int64_t iters) {
    const __m512i x = _mm512_set1_epi32(operand_i), y = _mm512_set1_epi32(operand_i ^ 0x5a5a);
    __m512i s;
    CHAINED_LOOP(__m512i, 16, 16, _mm512_set1_epi32, _mm512_add_epi32, _mm512_dpbusd_epi32, x, y, iters, s);
    return ZMM_LANE0(s);
}

/* The VEX ymm form (AVX-VNNI), 12 chains as for the ymm int16 pair (2 operands + 12 chains fit the
 * 16 ymm registers). In asm, as the avxvnni kernel issues it: with the intrinsic GCC 12 copies
 * each accumulator between registers around every instruction. A toolchain older than AVX-VNNI
 * (no avxvnniintrin.h: before GCC 11 and clang 12) reports the unit as unavailable (HAVE_AVX_VNNI_LOOP). */
#if defined(HAVE_AVX_VNNI_LOOP)
__attribute__((target("avx2"), always_inline)) static inline __m256i vex_dpbusd(__m256i acc, __m256i x, __m256i y) {
    __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(x), "x"(y));
    return acc;
}

__attribute__((target("avx2"))) static float avx_vnni_loop(int64_t iters) {
    const __m256i x = _mm256_set1_epi32(operand_i), y = _mm256_set1_epi32(operand_i ^ 0x5a5a);
    __m256i s;
    CHAINED_LOOP(__m256i, 12, 12, _mm256_set1_epi32, _mm256_add_epi32, vex_dpbusd, x, y, iters, s);
    return (float)_mm256_extract_epi32(s, 0);
}
#else
static float avx_vnni_loop(int64_t iters) {
    (void)iters;
    return 0.0f;
}
#endif

typedef struct tile_config {
    uint8_t palette_id, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

/* Four independent accumulator tiles (tmm0-3) fed by two A tiles (tmm4, tmm5) and two B tiles
 * (tmm6, tmm7), 2 x 2 as in a GEMM micro-kernel: four products in flight hide tdpbf16ps's
 * latency behind its throughput. Operands are loaded once; the loop is the tile unit alone. */
__attribute__((target("amx-tile,amx-bf16"))) static float amx_bf16_loop(int64_t iters) {
    tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette_id = 1;
    for (int t = 0; t < 8; t++) {
        cfg.rows[t] = 16;
        cfg.colsb[t] = 64;
    }
    _tile_loadconfig(&cfg);
    uint16_t ops[16 * 32];
    float out[16 * 16];
    const float v = operand_small;
    uint32_t bits;
    memcpy(&bits, &v, 4);
    for (int i = 0; i < 16 * 32; i++) ops[i] = (uint16_t)(bits >> 16); /* 2^-10 is exact in bf16 */
    _tile_loadd(4, ops, 64);
    _tile_loadd(5, ops, 64);
    _tile_loadd(6, ops, 64);
    _tile_loadd(7, ops, 64);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t n = 0; n < iters; n++) {
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, out, 64);
    const float r = out[0];
    _tile_stored(3, out, 64);
    _tile_release();
    return r + out[255];
}

static float run_unit(int unit, int64_t iters) {
    switch (unit) {
    case BENCH_UNIT_AVX2_FMA: return avx2_fma_loop(iters);
    case BENCH_UNIT_AVX512_FMA: return avx512_fma_loop(iters);
    case BENCH_UNIT_AVX512_BF16: return avx512_bf16_loop(iters);
    case BENCH_UNIT_AMX_BF16: return amx_bf16_loop(iters);
    case BENCH_UNIT_AVX2_I16: return avx2_i16_loop(iters);
    case BENCH_UNIT_AVX512_I16: return avx512_i16_loop(iters);
    case BENCH_UNIT_AVX512_VNNI: return avx512_vnni_loop(iters);
    case BENCH_UNIT_AVX_VNNI: return avx_vnni_loop(iters);
    default: return 0.0f;
    }
}

/* Flops per loop iteration, and iterations for about 0.1 s at 3 GHz (the count only sets how
 * long one measurement lasts). */
static const double flops_per_iter[BENCH_UNIT_COUNT] = {12 * 16, 16 * 32, 16 * 64, 4 * 16384, 12 * 32, 20 * 64, 16 * 128,
                                                        12 * 64};
static const int64_t iters_per_run[BENCH_UNIT_COUNT] = {40000000, 30000000, 15000000, 4000000, 30000000, 15000000, 15000000,
                                                        30000000};

#else /* not x86-64: no unit is measured */
int bench_unit_available(int unit) {
    (void)unit;
    return 0;
}
static float run_unit(int unit, int64_t iters) {
    (void)unit;
    (void)iters;
    return 0.0f;
}
static const double flops_per_iter[BENCH_UNIT_COUNT] = {0};
static const int64_t iters_per_run[BENCH_UNIT_COUNT] = {0};
#endif

typedef struct job {
    int unit;
    int64_t iters;
    float result;
} job;

static void *run_job(void *arg) {
    job *j = arg;
    j->result = run_unit(j->unit, j->iters);
    return NULL;
}

double bench_unit_peak_gflops(int unit, int threads, int reps) {
    enum { MAX = 256 };
    if (!bench_unit_available(unit)) return 0.0;
    if (threads < 1) threads = 1;
    if (threads > MAX) threads = MAX;
    if (reps < 1) reps = 1;
    /* a short run first: clocks and (for AMX) the unit's power-up settle before the timings */
    sink = run_unit(unit, iters_per_run[unit] / 20);
    double best = 0.0;
    for (int rep = 0; rep < reps; rep++) {
        pthread_t th[MAX];
        job jobs[MAX];
        int started = 0;
        const double t0 = seconds();
        for (int i = 0; i < threads; i++) {
            jobs[i] = (job){.unit = unit, .iters = iters_per_run[unit]};
            if (pthread_create(&th[i], NULL, run_job, &jobs[i]) != 0) break;
            started++;
        }
        for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
        const double dt = seconds() - t0;
        for (int i = 0; i < started; i++) sink = sink + jobs[i].result;
        const double gf = flops_per_iter[unit] * (double)iters_per_run[unit] * started / dt * 1e-9;
        if (gf > best) best = gf;
    }
    return best;
}

/* One thread's peak by the process's CPU time (the waiting main thread spends none): the same
 * timed loop as bench_unit_peak_gflops, with the clock switched for the call. */
double bench_unit_peak_gflops_cpu_time(int unit, int reps) {
    const int was = use_cpu_time;
    use_cpu_time = 1;
    const double gf = bench_unit_peak_gflops(unit, 1, reps);
    use_cpu_time = was;
    return gf;
}

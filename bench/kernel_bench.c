/* lig-kernel-bench: the quantized forward's micro-kernels alone, one thread, per kernel set this
 * CPU supports, against the measured peak of the unit each uses (unit_peaks.c):
 *   - the int8 GEMM (lig_i8_gemm over the set's micro-kernel): a block of M keys (A, int8,
 *     row-major in place) against N packed query columns (rows x heads), reduction D; the block
 *     stays in L1/L2, so this is the micro-kernel's rate, not the cache's; int8 ops = 2 M N D;
 *   - the FP8 e4m3fn -> bf16 and -> fp32 conversions of a block of key rows, in values/s.
 * Each figure is the median of --runs timed runs (each long enough to cover timer noise) after
 * one warm-up; the unit peaks are the best of 3 (unit_peaks.c).
 *
 *   lig-kernel-bench [--m 480] [--n 128] [--d 128] [--runs 7]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/kernels/kernel_set.h"
#include "bench_options.h"
#include "unit_peaks.h"

static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static volatile int32_t sink;

/* median GOP/s of the set's int8 GEMM on an M x N x D block */
static double time_i8(const lig_i8_kernels *i8, int64_t M, int64_t N, int64_t D, int runs) {
    const lig_i8_gemm_config *cfg = &i8->gemm;
    int8_t *a = malloc((size_t)(M * D)), *q = malloc((size_t)(N * D));
    for (int64_t i = 0; i < M * D; i++) a[i] = (int8_t)(i * 37 + 11);
    for (int64_t i = 0; i < N * D; i++) q[i] = (int8_t)(i * 53 + 5);
    void *packed = aligned_alloc(64, (size_t)lig_i8_packed_b_bytes(cfg, D, N));
    int32_t *c = aligned_alloc(64, sizeof(int32_t) * (size_t)(M * N));
    cfg->pack_b(D, N, q, D, packed, lig_i8_panel_bytes(cfg, D));
    const double ops = 2.0 * (double)M * (double)N * (double)D;
    /* repetitions for about 50 ms at the first run's rate */
    double t0 = seconds();
    lig_i8_gemm(cfg, M, N, D, a, D, packed, c, N, false);
    double dt = seconds() - t0;
    int64_t reps = (int64_t)(0.05 / (dt > 1e-7 ? dt : 1e-7)) + 1;
    double rates[64];
    if (runs > 64) runs = 64;
    for (int r = 0; r < runs; r++) {
        t0 = seconds();
        for (int64_t k = 0; k < reps; k++) lig_i8_gemm(cfg, M, N, D, a, D, packed, c, N, k > 0);
        dt = seconds() - t0;
        rates[r] = ops * (double)reps / dt * 1e-9;
    }
    sink = c[0];
    free(a);
    free(q);
    free(packed);
    free(c);
    return bench_median(rates, runs);
}

/* median G values/s of one fp8 conversion over a block of rows x n */
static double time_fp8(const lig_fp8_kernels *fp8, int to_f32, int64_t rows, int64_t n, int runs) {
    uint8_t *src = malloc((size_t)(rows * n));
    for (int64_t i = 0; i < rows * n; i++) src[i] = (uint8_t)(i * 29 + 3);
    void *dst = malloc((size_t)(rows * n) * 4);
    double rates[64];
    if (runs > 64) runs = 64;
    const int64_t reps = 2000;
    for (int r = -1; r < runs; r++) {
        const double t0 = seconds();
        for (int64_t k = 0; k < reps; k++) {
            if (to_f32) fp8->to_f32(rows, n, src, n, dst, n);
            else fp8->to_bf16(rows, n, src, n, dst, n);
        }
        const double dt = seconds() - t0;
        if (r >= 0) rates[r] = (double)(rows * n) * (double)reps / dt * 1e-9;
    }
    sink = ((volatile uint8_t *)dst)[0];
    free(src);
    free(dst);
    return bench_median(rates, runs);
}

int main(int argc, char **argv) {
    int64_t M = 480, N = 128, D = 128;
    int runs = 7;
    const bench_option opts[] = {
        {"--m", &M, NULL, NULL},
        {"--n", &N, NULL, NULL},
        {"--d", &D, NULL, NULL},
        {"--runs", NULL, &runs, NULL},
    };
    if (!bench_parse_options(argc, argv, opts, sizeof opts / sizeof opts[0])) {
        fprintf(stderr, "usage: %s [--m keys] [--n columns] [--d reduction] [--runs n]\n", argv[0]);
        return 2;
    }
    if (M < 1 || N < 1 || D < 1 || runs < 1) {
        fprintf(stderr, "--m, --n, --d and --runs must be positive\n");
        return 2;
    }
    char cpu[128];
    bench_cpu_model(cpu, sizeof cpu);
    printf("CPU: %s | 1 thread | int8 GEMM M=%lld keys, N=%lld columns, D=%lld | median of %d runs\n", cpu,
           (long long)M, (long long)N, (long long)D, runs);
    printf("measured int8 unit peaks, GOP/s (2 ops per multiply-add; best of 3):\n");
    double peak[BENCH_UNIT_COUNT] = {0};
    for (int u = BENCH_UNIT_AVX2_I16; u <= BENCH_UNIT_AVX_VNNI; u++) {
        if (!bench_unit_available(u)) {
            printf("  %-20s not available\n", bench_unit_label(u));
            continue;
        }
        peak[u] = bench_unit_peak_gflops(u, 1, 3);
        printf("  %-20s %8.1f   (%s)\n", bench_unit_label(u), peak[u], bench_unit_instruction(u));
    }
    printf("\n%-12s %-12s %5s %10s %-20s %7s %12s %12s\n", "set", "int8 kernel", "tile", "GOP/s", "unit", "% peak",
           "fp8->bf16", "fp8->fp32");
    int n;
    const lig_kernel_set *const *t = lig_kernel_set_table(&n);
    for (int s = 0; s < n; s++) {
        if (!t[s]->cpu_supports()) {
            printf("%-12s skipped: this CPU lacks %s\n", t[s]->name, t[s]->features);
            continue;
        }
        const lig_i8_kernels *i8 = t[s]->i8;
        const double gops = time_i8(i8, M, N, D, runs);
        const int u = bench_unit_for_i8_kernels(i8->name);
        char tile[16];
        snprintf(tile, sizeof tile, "%lldx%lld", (long long)i8->gemm.mr, (long long)i8->gemm.nr);
        const double cb = time_fp8(t[s]->fp8, 0, 64, D, runs), cf = time_fp8(t[s]->fp8, 1, 64, D, runs);
        /* the measured unit's label where there is one, else the unit the config names */
        printf("%-12s %-12s %5s %10.1f %-20s", t[s]->name, i8->name, tile, gops, u >= 0 ? bench_unit_label(u) : i8->unit);
        if (u >= 0 && peak[u] > 0) printf(" %6.1f%%", 100.0 * gops / peak[u]);
        else printf(" %7s", "-");
        printf(" %8.2f G/s %8.2f G/s\n", cb, cf);
    }
    return 0;
}

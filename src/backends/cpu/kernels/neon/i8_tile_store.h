/* What the aarch64 int8 GEMM micro-kernels share (neon, neondot, neoni8mm): a tile's int32 sums
 * added to or written over C (the sums start at 0 in the registers; with accumulate C is added
 * at the end, an exact int32 addition), columns >= nr and rows >= mr untouched; and a row's
 * chunk of A loaded without reading a byte at or past column kc. Compiled with each file's
 * flags: static inline, no symbol of its own. */
#ifndef LIG_BACKENDS_CPU_KERNELS_NEON_I8_TILE_STORE_H
#define LIG_BACKENDS_CPU_KERNELS_NEON_I8_TILE_STORE_H

#include <arm_neon.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* c[0..n) (+)= v[0..n) for n <= 4 */
static inline void i8_store4(int32_t *c, int32x4_t v, int64_t n, bool accumulate) {
    if (n >= 4) {
        vst1q_s32(c, accumulate ? vaddq_s32(vld1q_s32(c), v) : v);
        return;
    }
    int32_t t[4];
    vst1q_s32(t, v);
    for (int64_t j = 0; j < n; j++) c[j] = accumulate ? (int32_t)((uint32_t)c[j] + (uint32_t)t[j]) : t[j];
}

/* 8 (16) bytes of a row from column k0 of a row of kc: whole, or the tail, zero-padded */
static inline int8x8_t i8_load8(const int8_t *row, int64_t k0, int64_t kc) {
    if (kc - k0 >= 8) return vld1_s8(row + k0);
    int8_t t[8] = {0};
    memcpy(t, row + k0, (size_t)(kc - k0));
    return vld1_s8(t);
}

static inline int8x16_t i8_load16(const int8_t *row, int64_t k0, int64_t kc) {
    if (kc - k0 >= 16) return vld1q_s8(row + k0);
    int8_t t[16] = {0};
    memcpy(t, row + k0, (size_t)(kc - k0));
    return vld1q_s8(t);
}

#endif /* LIG_BACKENDS_CPU_KERNELS_NEON_I8_TILE_STORE_H */

/* The plain-C parts that SIMD kernels of different ISAs share word for word: the gate's heads past
 * the last whole vector, and rows of FP8 codes walked 16 at a time with a row's tail through a
 * zeroed scratch. Each kernel's file includes this header and compiles it with its own flags (static
 * inline, no symbol of its own), so the code a kernel runs is what it ran with these lines
 * written in it. Only portable C here: no intrinsics, no ISA's types. */
#ifndef LIG_CPU_KERNELS_PORTABLE_TAILS_H
#define LIG_CPU_KERNELS_PORTABLE_TAILS_H

#include <stdint.h>
#include <string.h>

/* The backward's ReLU gate (lig_grad_gate_kernel) for heads h0 .. G of every slot: each head's
 * dW sum in slot order, as the vector part adds its lanes. */
static inline void lig_grad_gate_heads(float *st, int64_t nb, int64_t G, const float *w, const float *dy, float *dw,
                                       int64_t h0) {
    for (int64_t h = h0; h < G; h++)
        for (int64_t n = 0; n < nb; n++) {
            const float s = st[n * G + h];
            const int open = s > 0.0f;
            dw[h] += open ? s * dy[n] : 0.0f;
            st[n * G + h] = open ? w[h] * dy[n] : 0.0f;
        }
}

/* 16 FP8 codes at s to 16 elements at d (bf16 words or fp32: an ISA's vector conversion) */
typedef void lig_fp8_convert16_fn(const uint8_t *s, void *d);

/* lig_fp8_to_bf16_kernel / lig_fp8_to_f32_kernel (elem: 2 or 4 bytes) by 16 codes at a time:
 * whole steps in place, a row's last n % 16 codes through zeroed copies (no byte past the row's
 * n is read or written). always_inline, so that elem and convert16 are constants here and the
 * conversion is inlined into the loop as if written in it. */
static inline __attribute__((always_inline)) void lig_fp8_rows_by16(int64_t rows, int64_t n, const uint8_t *src,
                                                                    int64_t lds, void *dst, int64_t ldd,
                                                                    int64_t elem, lig_fp8_convert16_fn *convert16) {
    for (int64_t r = 0; r < rows; r++) {
        const uint8_t *s = src + r * lds;
        unsigned char *d = (unsigned char *)dst + r * ldd * elem;
        int64_t j = 0;
        for (; j + 16 <= n; j += 16) convert16(s + j, d + j * elem);
        if (j < n) {
            uint8_t in[16] = {0};
            float out[16]; /* room for 16 of the widest element */
            memcpy(in, s + j, (size_t)(n - j));
            convert16(in, out);
            memcpy(d + j * elem, out, (size_t)(elem * (n - j)));
        }
    }
}

#endif

/* AVX2 ReLU gate of the backward (see kernels.h): compare, multiply, and mask, with no
 * branches (scores are positive about half the time, which defeats branch prediction). Eight
 * heads at a time over all the block's slots, their dW sums held in a register: added in
 * memory slot after slot, each would wait for the store of the one before. */
#include <immintrin.h>

#include "backends/cpu/kernels/avx2/avx2.h"
#include "backends/cpu/kernels/portable_tails.h"

void lig_grad_gate__avx2(float *st, int64_t nb, int64_t G, const float *w, const float *dy, float *dw) {
    const __m256 zero = _mm256_setzero_ps();
    int64_t h = 0;
    for (; h + 8 <= G; h += 8) {
        const __m256 wv = _mm256_loadu_ps(w + h);
        __m256 acc = _mm256_loadu_ps(dw + h);
        for (int64_t n = 0; n < nb; n++) {
            float *sn = st + n * G + h;
            const __m256 g = _mm256_broadcast_ss(dy + n), s = _mm256_loadu_ps(sn);
            const __m256 open = _mm256_cmp_ps(s, zero, _CMP_GT_OQ);
            acc = _mm256_add_ps(acc, _mm256_and_ps(open, _mm256_mul_ps(s, g)));
            _mm256_storeu_ps(sn, _mm256_and_ps(open, _mm256_mul_ps(wv, g)));
        }
        _mm256_storeu_ps(dw + h, acc);
    }
    lig_grad_gate_heads(st, nb, G, w, dy, dw, h);
}

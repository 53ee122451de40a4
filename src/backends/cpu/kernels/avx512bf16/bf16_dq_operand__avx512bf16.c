/* The dQ operand from the gate's bits, AVX-512 + VBMI + GFNI (see kernels.h). The bits of 64
 * slots x 64 heads are transposed in registers: a byte permute gathers each 8 x 8 bit block
 * into one qword, an affine GF(2) step transposes the block (its matrix operand is the data,
 * its vector operand the unit bytes 1 << j), and three rounds of two-source permutes
 * interleave the eight resulting vectors into one 64-bit mask per head. Each head's row is
 * then two masked moves of the block's dy. */
#include <immintrin.h>
#include <string.h>

#include "backends/cpu/kernels/avx512bf16/avx512bf16.h"

/* qword k of the result holds byte k of rows 7..0 (bytes 8k..8k+7) */
static const uint8_t byte_columns[64] __attribute__((aligned(64))) = {
    56, 48, 40, 32, 24, 16, 8, 0, 57, 49, 41, 33, 25, 17, 9, 1,
    58, 50, 42, 34, 26, 18, 10, 2, 59, 51, 43, 35, 27, 19, 11, 3,
    60, 52, 44, 36, 28, 20, 12, 4, 61, 53, 45, 37, 29, 21, 13, 5,
    62, 54, 46, 38, 30, 22, 14, 6, 63, 55, 47, 39, 31, 23, 15, 7,
};
/* element i of the result takes element idx[i] of (a, b), b's numbered after a's: the low
 * halves of a and b interleaved; the tables of the high halves are these plus half the count */
static const uint8_t bytes_to_words_lo[64] __attribute__((aligned(64))) = {
    0, 64, 1, 65, 2, 66, 3, 67, 4, 68, 5, 69, 6, 70, 7, 71,
    8, 72, 9, 73, 10, 74, 11, 75, 12, 76, 13, 77, 14, 78, 15, 79,
    16, 80, 17, 81, 18, 82, 19, 83, 20, 84, 21, 85, 22, 86, 23, 87,
    24, 88, 25, 89, 26, 90, 27, 91, 28, 92, 29, 93, 30, 94, 31, 95,
};
static const uint16_t words_to_dwords_lo[32] __attribute__((aligned(64))) = {
    0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
    8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47,
};
static const uint32_t dwords_to_qwords_lo[16] __attribute__((aligned(64))) = {
    0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23,
};

/* rows[n] (bit h = head h of slot n) for 64 slots -> cols[h] (bit n = slot n) for 64 heads */
static void transpose_64x64(const uint64_t *rows, uint64_t *cols) {
    const __m512i gather = _mm512_load_si512(byte_columns), unit = _mm512_set1_epi64(0x8040201008040201ll);
    __m512i z[8];
    for (int g = 0; g < 8; g++) {
        /* rows 8g..8g+7 -> byte h = the 8 bits of head h in those rows */
        const __m512i blocks = _mm512_permutexvar_epi8(gather, _mm512_loadu_si512(rows + 8 * g));
        z[g] = _mm512_gf2p8affine_epi64_epi8(unit, blocks, 0);
    }
    const __m512i bl = _mm512_load_si512(bytes_to_words_lo), bh = _mm512_add_epi8(bl, _mm512_set1_epi8(32));
    const __m512i wl = _mm512_load_si512(words_to_dwords_lo), wh = _mm512_add_epi16(wl, _mm512_set1_epi16(16));
    const __m512i dl = _mm512_load_si512(dwords_to_qwords_lo), dh = _mm512_add_epi32(dl, _mm512_set1_epi32(8));
    __m512i w[8], d[8];
    for (int g = 0; g < 4; g++) { /* w[2g], w[2g+1]: heads 0..31, 32..63 of row groups 2g, 2g+1 */
        w[2 * g] = _mm512_permutex2var_epi8(z[2 * g], bl, z[2 * g + 1]);
        w[2 * g + 1] = _mm512_permutex2var_epi8(z[2 * g], bh, z[2 * g + 1]);
    }
    for (int g = 0; g < 2; g++) /* d[4g + q]: heads 16q..16q+15 of row groups 4g..4g+3 */
        for (int half = 0; half < 2; half++) {
            const __m512i a = w[4 * g + half], b = w[4 * g + 2 + half];
            d[4 * g + 2 * half] = _mm512_permutex2var_epi16(a, wl, b);
            d[4 * g + 2 * half + 1] = _mm512_permutex2var_epi16(a, wh, b);
        }
    for (int q = 0; q < 4; q++) { /* heads 16q..16q+7, 16q+8..16q+15 of all 64 rows */
        _mm512_storeu_si512(cols + 16 * q, _mm512_permutex2var_epi32(d[q], dl, d[4 + q]));
        _mm512_storeu_si512(cols + 16 * q + 8, _mm512_permutex2var_epi32(d[q], dh, d[4 + q]));
    }
}

void lig_bf16_dq_operand__avx512bf16(const uint64_t *open_bits, int64_t nb, int64_t gp, const uint16_t *dy,
                                    uint16_t *a_dq) {
    uint64_t cols[64];
    for (int64_t s = 0; s < nb; s += 64) {
        const __m512i dy0 = _mm512_loadu_si512(dy + s), dy1 = _mm512_loadu_si512(dy + s + 32);
        for (int64_t h0 = 0; h0 < gp; h0 += 64) {
            transpose_64x64(open_bits + (h0 / 64) * nb + s, cols);
            const int64_t hn = gp - h0 < 64 ? gp - h0 : 64;
            for (int64_t i = 0; i < hn; i++) {
                uint16_t *row = a_dq + (h0 + i) * nb + s;
                _mm512_storeu_si512(row, _mm512_maskz_mov_epi16(_cvtu32_mask32((uint32_t)cols[i]), dy0));
                _mm512_storeu_si512(row + 32, _mm512_maskz_mov_epi16(_cvtu32_mask32((uint32_t)(cols[i] >> 32)), dy1));
            }
        }
    }
}

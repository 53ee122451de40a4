/* The forward's bf16 engine (see fwd_engine.h), for bf16 inputs on a set with bf16 kernels
 * (vdpbf16ps pairs or AMX tiles): per stripe the query heads of a few rows are packed as Q^T
 * pairs (pairs along D, one column per row and head) once; per block of 64 keys the key rows
 * are copied and S^T = K Q^T runs on the set's bf16 micro-kernels (exact products, fp32 sums),
 * then the set's score kernel sums w_h ReLU(S) over each row's heads. Columns, D and a block's
 * key rows are padded with zeros to the set's bf16 paddings (col_pad, k_pad, row_pad:
 * lig_bf16_kernels), which add nothing (a padded column has S = 0: closed). */
#include <stddef.h>
#include <string.h>

#include "backends/cpu/operators/bf16_operands.h"
#include "backends/cpu/operators/fwd_engine.h"
#include "core/dtype_convert.h"
#include "core/tensor.h"
#include "core/workspace.h"

#define NB LIG_FWD_BF16_BLOCK

typedef lig_fwd_bf16_layout layout;

static layout layout_for(const lig_fwd_ctx *c) { return lig_fwd_bf16_layout_for(c, false); }

static void configure(lig_fwd_ctx *c) { c->block = NB; }

static uint64_t scratch_bytes(const lig_fwd_ctx *c) { return layout_for(c).total; }

static void begin_rows(const lig_fwd_ctx *c, char *s, int64_t rows, const char *const *q, const char *const *w,
                       const char *const *sq) {
    (void)sq; /* unquantized: no scales */
    const layout L = layout_for(c);
    const int64_t G = c->G, dp = L.dp, cols = rows * G, gp = lig_bf16_pad((uint64_t)cols, c->ks->bf16->col_pad);
    uint16_t *qrow = (uint16_t *)(void *)(s + L.qrow);
    uint32_t *qt = (uint32_t *)(void *)(s + L.qt);
    float *wf = (float *)(void *)(s + L.wf);
    for (int64_t j = 0; j < gp; j++) {
        if (j < cols) {
            const int64_t r = j / G, h = j % G;
            lig_bf16_copy_row(qrow + j * dp, q[r] + 2 * h * c->q_head, c->q_dim, c->D, dp);
            wf[j] = lig_load_float(c->w_dtype, w[r] + (int64_t)lig_dtype_size(c->w_dtype) * h * c->w_head);
        } else {
            memset(qrow + j * dp, 0, sizeof(uint16_t) * (size_t)dp);
            wf[j] = 0.0f;
        }
    }
    lig_bf16_transpose_pairs(qrow, gp, dp, qt);
}

/* The key rows as the product's A operand in place: a whole number of row_pad rows, unit-stride
 * and evenly spaced, D already a multiple of k_pad. Returns the row stride in elements, or 0. */
static int64_t rows_in_place(const lig_fwd_ctx *c, int64_t nb, const char *const *key) {
    const lig_bf16_kernels *k = c->ks->bf16;
    if (nb < 2 || nb % k->row_pad != 0 || c->k_dim != 1 || c->D % k->k_pad != 0) return 0;
    const ptrdiff_t stride = key[1] - key[0];
    if (stride <= 0 || stride % 2 != 0) return 0;
    for (int64_t n = 2; n < nb; n++)
        if (key[n] - key[n - 1] != stride) return 0;
    return stride / 2;
}

static void score_block(const lig_fwd_ctx *c, char *s, int64_t nrows, int64_t nb, const char *const *key,
                        const char *const *key_scale, float *score) {
    (void)key_scale;
    const layout L = layout_for(c);
    const int64_t G = c->G, gp = lig_bf16_pad((uint64_t)(nrows * G), c->ks->bf16->col_pad), dp = L.dp;
    uint16_t *kb = (uint16_t *)(void *)(s + L.kb);
    float *st = (float *)(void *)(s + L.st);
    const uint16_t *a = kb;
    int64_t lda = dp, rows = nb;
    const int64_t in_place = rows_in_place(c, nb, key);
    if (in_place) { /* consecutive keys of a key tensor: no copy */
        a = (const uint16_t *)(const void *)key[0];
        lda = in_place;
    } else {
        for (int64_t n = 0; n < nb; n++) lig_bf16_copy_row(kb + n * dp, key[n], c->k_dim, c->D, dp);
        rows = lig_bf16_pad((uint64_t)nb, c->ks->bf16->row_pad); /* whole tiles: the padding rows are zero keys */
        if (nb < rows) memset(kb + nb * dp, 0, sizeof(uint16_t) * (size_t)((rows - nb) * dp));
    }
    lig_bf16_gemm(&c->ks->bf16->gemm, rows, gp, dp, a, lda, (const uint16_t *)(const void *)(s + L.qt), gp, st, gp,
                  false);
    const float *wf = (const float *)(const void *)(s + L.wf);
    for (int64_t r = 0; r < nrows; r++) c->ks->f32->fwd_scores(st + r * G, nb, gp, G, wf + r * G, score + r * c->block);
}

const lig_fwd_engine lig_fwd_engine_bf16 = {
    .kernels_name = lig_fwd_bf16_kernels_name, .configure = configure, .scratch_bytes = scratch_bytes,
    .thread_begin = lig_fwd_bf16_thread_begin, .thread_end = lig_fwd_bf16_thread_end, .begin_rows = begin_rows,
    .score_block = score_block};

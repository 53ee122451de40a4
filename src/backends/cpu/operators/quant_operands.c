/* See quant_operands.h. */
#include "backends/cpu/operators/quant_operands.h"

#include <stddef.h>
#include <string.h>

#include "core/dtype_convert.h"
#include "core/tensor.h"

void lig_quant_load_weights(const lig_fwd_ctx *c, int64_t rows, const char *const *w, const char *const *sq,
                            float *wf, float *sqf, int64_t padded) {
    const int64_t G = c->G, we = (int64_t)lig_dtype_size(c->w_dtype), se = (int64_t)lig_dtype_size(c->sq_dtype);
    for (int64_t j = 0; j < padded; j++) {
        const bool live = j < rows * G;
        const int64_t r = j / G, h = j % G;
        wf[j] = live ? lig_load_float(c->w_dtype, w[r] + h * c->w_head * we) : 0.0f;
        if (c->has_sq) sqf[j] = live ? lig_load_float(c->sq_dtype, sq[r] + h * c->sq_head * se) : 0.0f;
    }
}

void lig_quant_load_key_scales(const lig_fwd_ctx *c, int64_t n, const char *const *key_scale, float *sk) {
    if (c->sk_dtype == LIG_FLOAT32) /* the usual dtype: a copy per key, no conversion */
        for (int64_t i = 0; i < n; i++) memcpy(sk + i, key_scale[i], sizeof(float));
    else
        for (int64_t i = 0; i < n; i++) sk[i] = lig_load_float(c->sk_dtype, key_scale[i]);
}

int64_t lig_quant_rows_stride(int64_t n, const char *const *key) {
    if (n < 2) return 0;
    const ptrdiff_t stride = key[1] - key[0];
    if (stride <= 0) return 0;
    for (int64_t i = 2; i < n; i++)
        if (key[i] - key[i - 1] != stride) return 0;
    return (int64_t)stride;
}

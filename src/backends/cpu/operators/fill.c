#include "backends/cpu/operators/fill.h"

#include <string.h>

#include "core/dtype_convert.h"
#include "core/tensor.h"

void lig_fill_rows(const lig_view4 *v, int64_t b, int64_t r0, int64_t r1, int64_t heads, int64_t dims, double value) {
    if (heads == 0 || dims == 0) return; /* no elements: the view's data may be NULL */
    const bool index = lig_dtype_is_index(v->dtype);
    for (int64_t t = r0; t < r1; t++)
        for (int64_t h = 0; h < heads; h++) {
            char *e = lig_view_row_ptr(v, b, t, h);
            for (int64_t d = 0; d < dims; d++, e += v->dim * (int64_t)v->esize) {
                if (!index) {
                    lig_store_float(v->dtype, e, (float)value);
                } else if (v->dtype == LIG_INT32) {
                    const int32_t x = (int32_t)value;
                    memcpy(e, &x, sizeof x);
                } else {
                    const int64_t x = (int64_t)value;
                    memcpy(e, &x, sizeof x);
                }
            }
        }
}

void lig_fill_query_rows(const lig_problem *pr, const lig_view4 *v, int64_t heads, int64_t dims, double value,
                         bool all) {
    if (pr->tnd) { /* TND valid rows are [0, aq[B-1]) */
        lig_fill_rows(v, 0, all ? 0 : pr->bt.row_prefix[pr->B], pr->S1, heads, dims, value);
        return;
    }
    for (int64_t b = 0; b < pr->B; b++) lig_fill_rows(v, b, all ? 0 : pr->bt.lq[b], pr->S1, heads, dims, value);
}

void lig_fill_key_rows(const lig_problem *pr, const lig_view4 *v, int64_t heads, int64_t dims, double value) {
    const int64_t batches = pr->tnd ? 1 : pr->B;
    for (int64_t b = 0; b < batches; b++) lig_fill_rows(v, b, 0, pr->S2, heads, dims, value);
}

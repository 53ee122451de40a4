#include "staging.h"

#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "lig.h"

bool fe_stage_init(fe_stage *s, const aclTensor *t, bool output) {
    memset(s, 0, sizeof *s);
    s->output = output;
    s->dtype = t->dtype;
    s->ndim = t->ndim;
    memcpy(s->shape, t->shape, sizeof s->shape);
    memcpy(s->strides, t->strides, sizeof s->strides);
    s->numel = t->numel;
    s->data = t->numel ? (char *)t->data + (size_t)t->offset * fe_dtype_size(t->dtype) : NULL;
    s->buf = malloc((size_t)(s->numel ? s->numel : 1) * sizeof(float));
    return s->buf != NULL;
}

/* Element offset of the i-th element (row-major order) of the view. */
static int64_t view_offset(const fe_stage *s, int64_t i) {
    int64_t off = 0;
    for (int64_t d = s->ndim - 1; d >= 0; d--) {
        off += (i % s->shape[d]) * s->strides[d];
        i /= s->shape[d];
    }
    return off;
}

/* memcpy: a view's data need not be 2-byte aligned. */
void fe_stage_widen(const fe_stage *s) {
    for (int64_t i = 0; i < s->numel; i++) {
        uint16_t h;
        memcpy(&h, s->data + (size_t)view_offset(s, i) * sizeof h, sizeof h);
        s->buf[i] = s->dtype == ACL_BF16 ? lig_bfloat16_to_float(h) : lig_float16_to_float(h);
    }
}

void fe_stage_narrow(const fe_stage *s) {
    for (int64_t i = 0; i < s->numel; i++) {
        uint16_t h = s->dtype == ACL_BF16 ? lig_float_to_bfloat16(s->buf[i]) : lig_float_to_float16(s->buf[i]);
        memcpy(s->data + (size_t)view_offset(s, i) * sizeof h, &h, sizeof h);
    }
}

void fe_stage_release(fe_stage *s) {
    free(s->buf);
    s->buf = NULL;
}

#include "tensor_buffers.h"

#include <stdlib.h>
#include <string.h>

#include "float_formats.h"

double th_load(const void *base, lig_dtype dtype, int64_t elem)
{
    const unsigned char *p = (const unsigned char *)base + (size_t)elem * th_dtype_size(dtype);
    switch (dtype) {
    case LIG_FLOAT32: {
        uint32_t u;
        memcpy(&u, p, 4);
        return th_f32_value(u);
    }
    case LIG_FLOAT16: {
        uint16_t u;
        memcpy(&u, p, 2);
        return th_f16_value(u);
    }
    case LIG_BFLOAT16: {
        uint16_t u;
        memcpy(&u, p, 2);
        return th_bf16_value(u);
    }
    default: return (double)th_load_int(base, dtype, elem);
    }
}

void th_store(void *base, lig_dtype dtype, int64_t elem, double v)
{
    unsigned char *p = (unsigned char *)base + (size_t)elem * th_dtype_size(dtype);
    switch (dtype) {
    case LIG_FLOAT32: {
        uint32_t u = th_f32_bits(v);
        memcpy(p, &u, 4);
        break;
    }
    case LIG_FLOAT16: {
        uint16_t u = th_f16_bits(v);
        memcpy(p, &u, 2);
        break;
    }
    case LIG_BFLOAT16: {
        uint16_t u = th_bf16_bits(v);
        memcpy(p, &u, 2);
        break;
    }
    default: th_store_int(base, dtype, elem, (int64_t)v); break;
    }
}

int64_t th_load_int(const void *base, lig_dtype dtype, int64_t elem)
{
    const unsigned char *p = (const unsigned char *)base + (size_t)elem * th_dtype_size(dtype);
    if (dtype == LIG_INT32) {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    if (dtype == LIG_INT64) {
        int64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    return (int64_t)th_load(base, dtype, elem);
}

void th_store_int(void *base, lig_dtype dtype, int64_t elem, int64_t v)
{
    unsigned char *p = (unsigned char *)base + (size_t)elem * th_dtype_size(dtype);
    if (dtype == LIG_INT32) {
        /* Callers only store values that fit; clamp rather than invoke implementation-defined
         * narrowing if one ever does not. */
        int32_t x = v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
        memcpy(p, &x, 4);
    } else if (dtype == LIG_INT64) {
        memcpy(p, &v, 8);
    } else {
        th_store(base, dtype, elem, (double)v);
    }
}

int64_t tbuf_numel(const tbuf *b)
{
    int64_t n = 1;
    for (int i = 0; i < b->ndim; i++) {
        n *= b->shape[i];
    }
    return n;
}

static void row_major(int ndim, const int64_t *shape, int64_t inner, int64_t *strides)
{
    int64_t s = inner;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i] > 0 ? shape[i] : 1;
    }
}

static tbuf_stride_fn g_stride_source;
static void *g_stride_ctx;

void tbuf_set_stride_source(tbuf_stride_fn fn, void *ctx)
{
    g_stride_source = fn;
    g_stride_ctx = ctx;
}

static void choose_strides(tbuf *b, tc_strides kind, unsigned char fill)
{
    const int n = b->ndim;
    b->null_strides = 0;
    b->offset = 0;
    switch (kind) {
    case TC_CONTIGUOUS:
        b->null_strides = 1;
        row_major(n, b->shape, 1, b->strides);
        break;
    case TC_EXPLICIT:
        row_major(n, b->shape, 1, b->strides);
        break;
    case TC_PADDED: {
        /* Pad every dimension (3 extra elements per innermost row, 1 slice elsewhere) and start
         * the view a few elements into the buffer. */
        int64_t s = 1;
        for (int i = n - 1; i >= 0; i--) {
            b->strides[i] = s;
            int64_t extent = b->shape[i] > 0 ? b->shape[i] : 1;
            s *= extent + (i == n - 1 ? 3 : 1);
        }
        b->offset = 5;
        break;
    }
    case TC_PERMUTED: {
        /* Innermost contiguous with a row pitch of shape+2; the outer dimensions stored in
         * reverse order (dimension 0 varies fastest), like a transposed view. */
        int64_t pitch = (n > 0 ? (b->shape[n - 1] > 0 ? b->shape[n - 1] : 1) : 1) + 2;
        if (n > 0) {
            b->strides[n - 1] = 1;
        }
        int64_t s = pitch;
        for (int i = 0; i < n - 1; i++) {
            b->strides[i] = s;
            s *= b->shape[i] > 0 ? b->shape[i] : 1;
        }
        b->offset = 3;
        break;
    }
    case TC_INNER_STRIDED:
        row_major(n, b->shape, 2, b->strides);
        b->offset = 1;
        break;
    case TC_BROADCAST:
        row_major(n, b->shape, 1, b->strides);
        if (n >= 2) {
            b->strides[0] = 0;
        }
        break;
    case TC_SOURCE:
        row_major(n, b->shape, 1, b->strides);
        if (g_stride_source != NULL) {
            g_stride_source(g_stride_ctx, b, fill == TB_OUTPUT_FILL);
        }
        break;
    default:
        row_major(n, b->shape, 1, b->strides);
        break;
    }
}

void tbuf_make(tbuf *b, lig_dtype dtype, int ndim, const int64_t *shape, tc_strides kind, unsigned char fill)
{
    memset(b, 0, sizeof *b);
    b->dtype = dtype;
    b->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        b->shape[i] = shape[i];
    }
    choose_strides(b, kind, fill);
    /* A negative stride reaches below the first element: move the view up by that much. */
    int64_t below = 0, last = 0;
    for (int i = 0; i < ndim; i++) {
        if (b->shape[i] > 0) {
            const int64_t reach = (b->shape[i] - 1) * b->strides[i];
            *(reach < 0 ? &below : &last) += reach;
        }
    }
    b->offset -= below;
    last += b->offset;
    /* A few spare elements after the view catch writes past its end. */
    size_t elems = (size_t)last + 1 + 4;
    b->bytes = elems * th_dtype_size(dtype);
    b->base = th_xmalloc(b->bytes);
    memset(b->base, fill, b->bytes);
    b->t = lig_create_tensor(b->base + (size_t)b->offset * th_dtype_size(dtype), dtype, ndim, b->shape,
                             b->null_strides ? NULL : b->strides);
}

void tbuf_free(tbuf *b)
{
    if (b->t != NULL) {
        lig_destroy_tensor(b->t);
    }
    free(b->base);
    free(b->snapshot);
    memset(b, 0, sizeof *b);
}

int64_t tbuf_elem_offset(const tbuf *b, int64_t linear)
{
    int64_t off = b->offset;
    for (int i = b->ndim - 1; i >= 0; i--) {
        int64_t c = linear % b->shape[i];
        linear /= b->shape[i];
        off += c * b->strides[i];
    }
    return off;
}

void tbuf_write(tbuf *b, int64_t linear, double v)
{
    th_store(b->base, b->dtype, tbuf_elem_offset(b, linear), v);
}

void tbuf_write_int(tbuf *b, int64_t linear, int64_t v)
{
    th_store_int(b->base, b->dtype, tbuf_elem_offset(b, linear), v);
}

double tbuf_read(const tbuf *b, int64_t linear)
{
    return th_load(b->base, b->dtype, tbuf_elem_offset(b, linear));
}

int64_t tbuf_read_int(const tbuf *b, int64_t linear)
{
    return th_load_int(b->base, b->dtype, tbuf_elem_offset(b, linear));
}

void tbuf_snapshot(tbuf *b)
{
    free(b->snapshot);
    b->snapshot = th_xmalloc(b->bytes);
    if (b->bytes > 0) memcpy(b->snapshot, b->base, b->bytes); /* an absent buffer (never made) has no base */
}

int tbuf_unchanged(const tbuf *b)
{
    return b->snapshot != NULL && (b->bytes == 0 || memcmp(b->base, b->snapshot, b->bytes) == 0);
}

int tbuf_gaps_unchanged(const tbuf *b)
{
    if (b->snapshot == NULL) {
        return 0;
    }
    unsigned char *in_view = th_xcalloc(b->bytes, 1);
    const size_t es = th_dtype_size(b->dtype);
    const int64_t n = tbuf_numel(b);
    for (int64_t i = 0; i < n; i++) {
        memset(in_view + (size_t)tbuf_elem_offset(b, i) * es, 1, es);
    }
    int ok = 1;
    for (size_t i = 0; i < b->bytes; i++) {
        if (!in_view[i] && b->base[i] != b->snapshot[i]) {
            ok = 0;
            break;
        }
    }
    free(in_view);
    return ok;
}

void tbuf_write_doubles(tbuf *b, const double *v)
{
    int64_t n = tbuf_numel(b);
    for (int64_t i = 0; i < n; i++) {
        tbuf_write(b, i, v[i]);
    }
}

void tbuf_read_doubles(const tbuf *b, double *v)
{
    int64_t n = tbuf_numel(b);
    for (int64_t i = 0; i < n; i++) {
        v[i] = tbuf_read(b, i);
    }
}

/*
 * Tensors in memory for the tests: a logical tensor placed into a malloc'd buffer with a chosen
 * stride pattern, the rest of the buffer filled with a known byte (NaN bytes for float inputs,
 * huge values for integer inputs, a sentinel for outputs), plus checks that nothing outside
 * the view was touched.
 */
#ifndef LIG_TESTS_HARNESS_TENSOR_BUFFERS_H
#define LIG_TESTS_HARNESS_TENSOR_BUFFERS_H

#include <stddef.h>
#include <stdint.h>

#include "lig.h"
#include "problem_case.h"

/* Output sentinel: 0xCD bytes are finite non-zero values in every float dtype. */
#define TB_OUTPUT_FILL 0xCD
/* Input gap fill: 0xFF bytes are NaN in every float dtype, so a kernel reading a gap shows up. */
#define TB_FLOAT_GAP_FILL 0xFF
/* Integer gap fill: 0x7F7F... is an absurd index / length. */
#define TB_INT_GAP_FILL 0x7F

typedef struct tbuf {
    lig_dtype dtype;
    int ndim;
    int64_t shape[LIG_MAX_DIMS];
    int64_t strides[LIG_MAX_DIMS];
    int null_strides;        /* pass strides = NULL to lig_create_tensor */
    int64_t offset;          /* element offset of the view's first element in base */
    unsigned char *base;     /* owned */
    size_t bytes;
    unsigned char *snapshot; /* copy of base taken by tbuf_snapshot */
    lig_tensor *t;           /* owned descriptor, NULL if creation failed */
} tbuf;

/* Strides for TC_SOURCE: fills b->strides (any sign) and b->offset (>= 0) for b's dtype, ndim and
 * shape, or sets b->null_strides (leaving the row-major strides it finds); `output` says whether the buffer is an output (its fill). */
typedef void (*tbuf_stride_fn)(void *ctx, tbuf *b, int output);
/* Installs the source TC_SOURCE buffers take their strides from (NULL: row-major). */
void tbuf_set_stride_source(tbuf_stride_fn fn, void *ctx);

/* Allocates and fills the buffer with `fill`, chooses strides for `kind`, creates the descriptor.
 * Negative strides (TC_SOURCE only) are placed inside the buffer too; lig_create_tensor refuses
 * them, so b->t is then NULL. */
void tbuf_make(tbuf *b, lig_dtype dtype, int ndim, const int64_t *shape, tc_strides kind, unsigned char fill);
void tbuf_free(tbuf *b);

int64_t tbuf_numel(const tbuf *b);
/* Element offset (from base) of the element with row-major logical index `linear`. */
int64_t tbuf_elem_offset(const tbuf *b, int64_t linear);

void tbuf_write(tbuf *b, int64_t linear, double v);
void tbuf_write_int(tbuf *b, int64_t linear, int64_t v);
double tbuf_read(const tbuf *b, int64_t linear);
int64_t tbuf_read_int(const tbuf *b, int64_t linear);

/* The whole logical tensor from / into a row-major float64 array. */
void tbuf_write_doubles(tbuf *b, const double *v);
void tbuf_read_doubles(const tbuf *b, double *v);

void tbuf_snapshot(tbuf *b);
/* 1 when the whole buffer still equals the snapshot. */
int tbuf_unchanged(const tbuf *b);
/* 1 when every byte outside the view still equals the snapshot. */
int tbuf_gaps_unchanged(const tbuf *b);

/* Generic element access by dtype at an element offset of a raw pointer. */
double th_load(const void *base, lig_dtype dtype, int64_t elem);
void th_store(void *base, lig_dtype dtype, int64_t elem, double v);
int64_t th_load_int(const void *base, lig_dtype dtype, int64_t elem);
void th_store_int(void *base, lig_dtype dtype, int64_t elem, int64_t v);

#endif /* LIG_TESTS_HARNESS_TENSOR_BUFFERS_H */

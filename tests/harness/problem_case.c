#include "problem_case.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "float_formats.h"

void *th_xmalloc(size_t bytes)
{
    void *p = malloc(bytes > 0 ? bytes : 1);
    if (p == NULL) {
        fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
        abort();
    }
    return p;
}

void *th_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count > 0 ? count : 1, size > 0 ? size : 1);
    if (p == NULL) {
        fprintf(stderr, "out of memory (%zu x %zu bytes)\n", count, size);
        abort();
    }
    return p;
}

void th_free_all(void *const *buffers, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(buffers[i]);
    }
}

int64_t tc_numel_q(const tcase *tc)
{
    return ref_rows_q(&tc->p) * tc->p.N1 * tc->p.D;
}

int64_t tc_numel_k(const tcase *tc)
{
    return ref_rows_k(&tc->p) * tc->p.N2 * tc->p.D;
}

int64_t tc_numel_w(const tcase *tc)
{
    return ref_rows_q(&tc->p) * tc->p.N1;
}

int64_t tc_numel_slots(const tcase *tc)
{
    return ref_rows_q(&tc->p) * tc->p.N2 * tc->p.K;
}

void tc_init(tcase *tc)
{
    memset(tc, 0, sizeof *tc);
    tc->p.layout = REF_BSND;
    tc->p.B = 1;
    tc->p.S1 = tc->p.S2 = 1;
    tc->p.N1 = tc->p.N2 = 1;
    tc->p.D = tc->p.K = 1;
    tc->p.sparse_mode = 3;
    tc->p.pre_tokens = INT64_MAX;
    tc->p.next_tokens = INT64_MAX;
    tc->dtype = LIG_BFLOAT16;
    tc->idx_dtype = LIG_INT32;
    tc->seq_dtype = LIG_INT64;
    tc->dw_dtype = LIG_BFLOAT16;
    tc->deterministic = 1;
    tc->grid = 1;
}

void tc_set_dims(tcase *tc, int64_t B, int64_t N1, int64_t N2, int64_t D, int64_t K)
{
    tc->p.B = B;
    tc->p.N1 = N1;
    tc->p.N2 = N2;
    tc->p.D = D;
    tc->p.K = K;
}

void tc_free(tcase *tc)
{
    void *const owned[] = {tc->seq_q, tc->seq_k, tc->q, tc->k, tc->w, tc->dy, tc->idx};
    th_free_all(owned, sizeof owned / sizeof owned[0]);
    tc->seq_q = tc->seq_k = NULL;
    tc->q = tc->k = tc->w = tc->dy = NULL;
    tc->idx = NULL;
    tc->p.seq_q = tc->p.seq_k = NULL;
}

void tc_alloc(tcase *tc)
{
    tc_free(tc);
    size_t nb = (size_t)tc->p.B;
    tc->seq_q = th_xcalloc(nb, sizeof(int64_t));
    tc->seq_k = th_xcalloc(nb, sizeof(int64_t));
    tc_sync_seq(tc);
    tc->q = th_xcalloc((size_t)tc_numel_q(tc), sizeof(double));
    tc->k = th_xcalloc((size_t)tc_numel_k(tc), sizeof(double));
    tc->w = th_xcalloc((size_t)tc_numel_w(tc), sizeof(double));
    tc->dy = th_xcalloc((size_t)tc_numel_slots(tc), sizeof(double));
    tc->idx = th_xcalloc((size_t)tc_numel_slots(tc), sizeof(int64_t));
}

void tc_sync_seq(tcase *tc)
{
    tc->p.seq_q = tc->has_seq_q ? tc->seq_q : NULL;
    tc->p.seq_k = tc->has_seq_k ? tc->seq_k : NULL;
}

static void *dup_array(const void *src, size_t bytes)
{
    void *d = th_xmalloc(bytes);
    if (bytes > 0) {
        memcpy(d, src, bytes);
    }
    return d;
}

void tc_copy(tcase *dst, const tcase *src)
{
    *dst = *src;
    size_t nb = (size_t)src->p.B;
    dst->seq_q = dup_array(src->seq_q, nb * sizeof(int64_t));
    dst->seq_k = dup_array(src->seq_k, nb * sizeof(int64_t));
    tc_sync_seq(dst);
    dst->q = dup_array(src->q, (size_t)tc_numel_q(src) * sizeof(double));
    dst->k = dup_array(src->k, (size_t)tc_numel_k(src) * sizeof(double));
    dst->w = dup_array(src->w, (size_t)tc_numel_w(src) * sizeof(double));
    dst->dy = dup_array(src->dy, (size_t)tc_numel_slots(src) * sizeof(double));
    dst->idx = dup_array(src->idx, (size_t)tc_numel_slots(src) * sizeof(int64_t));
}

static const char *stride_name(tc_strides s)
{
    static const char *names[] = {"contig", "explicit", "padded", "permuted", "inner2", "bcast", "decoded"};
    return (unsigned)s <= TC_SOURCE ? names[s] : "?";
}

static void fmt_band(char *buf, size_t n, int64_t v)
{
    if (v == INT64_MAX) {
        snprintf(buf, n, "max");
    } else {
        snprintf(buf, n, "%" PRId64, v);
    }
}

void tc_describe(const tcase *tc, char *buf, size_t size)
{
    const ref_problem *p = &tc->p;
    char pre[24], next[24];
    fmt_band(pre, sizeof pre, p->pre_tokens);
    fmt_band(next, sizeof next, p->next_tokens);
    int n = snprintf(buf, size,
                     "%s %s B=%" PRId64 " S1=%" PRId64 " S2=%" PRId64 " N1=%" PRId64 " N2=%" PRId64
                     " D=%" PRId64 " K=%" PRId64 " mode=%" PRId64 " pre=%s next=%s idx=%s seq=%s%s%s "
                     "dw=%s %s det=%d in=%s out=%s%s",
                     p->layout == REF_BSND ? "BSND" : "TND", th_dtype_name(tc->dtype), p->B, p->S1,
                     p->S2, p->N1, p->N2, p->D, p->K, p->sparse_mode, pre, next,
                     th_dtype_name(tc->idx_dtype), th_dtype_name(tc->seq_dtype), p->seq_q ? "+q" : "",
                     p->seq_k ? "+k" : "", th_dtype_name(tc->dw_dtype), tc->short_form ? "short" : "long",
                     tc->deterministic, stride_name(tc->in_strides), stride_name(tc->out_strides),
                     tc->grid ? " grid" : " cont");
    if (n > 0 && (size_t)n < size && p->B > 0 && p->B <= 6 && (p->seq_q || p->seq_k)) {
        size_t used = (size_t)n;
        for (int64_t b = 0; b < p->B && used < size; b++) {
            int m = snprintf(buf + used, size - used, "%s%" PRId64 "/%" PRId64, b == 0 ? " lens=" : ",",
                             p->seq_q ? p->seq_q[b] : -1, p->seq_k ? p->seq_k[b] : -1);
            if (m < 0) {
                break;
            }
            used += (size_t)m;
        }
    }
}

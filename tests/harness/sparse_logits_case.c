/* See sparse_logits_case.h. */
#include "sparse_logits_case.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error_bounds.h"
#include "float_formats.h"
#include "framework.h"
#include "problem_case.h"
#include "quant_case.h"
#include "reference/indexer_quant_ref.h"
#include "tensor_buffers.h"

static int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/* Row r's list: count = min(M, ceil(len / bk)) distinct ids of its blocks, ascending, then a tail
 * of -1, the last id or a large value (never read). */
static void draw_blocks(th_rng *r, const lcase *L, scase *S) {
    for (int64_t row = 0; row < S->rows; row++) {
        const int64_t lo = L->ks[row], len = L->ke[row] - lo, first = lo / S->bk;
        const int64_t avail = len > 0 ? ceil_div(len, S->bk) : 0, n = avail < S->M ? avail : S->M;
        int64_t *ids = S->id + row * S->M, k = 0;
        for (int64_t c = 0; c < avail && k < n; c++) /* n of avail, each kept with the chance still needed */
            if (th_rng_range(r, 0, avail - c - 1) < n - k) ids[k++] = first + c;
        const int tail = (int)th_rng_range(r, 0, 2);
        for (; k < S->M; k++) ids[k] = tail == 0 ? -1 : tail == 1 && n > 0 ? ids[n - 1] : 1000000 + k;
        S->count[row] = n;
    }
}

void scase_make(th_rng *r, const lcase *L, scase *S) {
    const qcase *c = &L->c;
    const int tnd = c->p.layout == REF_TND;
    S->rows = L->rows;
    S->N2 = c->p.N2;
    S->cols = S->M * S->bk;
    S->id = th_xmalloc(sizeof(int64_t) * (size_t)(S->rows * S->M + 1));
    S->count = th_xmalloc(sizeof(int64_t) * (size_t)(S->rows + 1));
    draw_blocks(r, L, S);
    const size_t ie = th_dtype_size(S->ids_dtype);
    S->ids_buf = th_xmalloc(ie * (size_t)(S->rows * S->M + 1));
    for (int64_t i = 0; i < S->rows * S->M; i++) th_store_int(S->ids_buf, S->ids_dtype, i, S->id[i]);
    const int64_t ishape[3] = {c->p.B, c->p.S1, S->M};
    S->ids = tnd ? lig_create_tensor(S->ids_buf, S->ids_dtype, 2, (int64_t[]){S->rows, S->M}, NULL)
                 : lig_create_tensor(S->ids_buf, S->ids_dtype, 3, ishape, NULL);
    /* output [rows][N2][cols], the column stride 2 and a padded row when strided */
    S->out_col_step = S->strided ? 2 : 1;
    S->out_head_step = S->cols * S->out_col_step + (S->strided ? 3 : 0);
    S->out_row_step = S->out_head_step * S->N2 + (S->strided ? 5 : 0);
    const size_t oe = th_dtype_size(S->out_dtype);
    S->out_bytes = oe * (size_t)(S->rows * S->out_row_step + 1);
    S->out_buf = th_xmalloc(S->out_bytes);
    const int64_t shape[4] = {c->p.B, c->p.S1, S->N2, S->cols};
    const int64_t st[4] = {c->p.S1 * S->out_row_step, S->out_row_step, S->out_head_step, S->out_col_step};
    if (S->short_out) { /* N2 == 1: [.., cols] */
        const int64_t sh[3] = {c->p.B, c->p.S1, S->cols}, ss[3] = {st[0], st[1], st[3]};
        S->out = tnd ? lig_create_tensor(S->out_buf, S->out_dtype, 2, (int64_t[]){S->rows, S->cols},
                                         (int64_t[]){S->out_row_step, S->out_col_step})
                     : lig_create_tensor(S->out_buf, S->out_dtype, 3, sh, ss);
    } else {
        S->out = tnd ? lig_create_tensor(S->out_buf, S->out_dtype, 3, shape + 1, st + 1)
                     : lig_create_tensor(S->out_buf, S->out_dtype, 4, shape, st);
    }
}

void scase_free(scase *S) {
    lig_destroy_tensor(S->ids);
    lig_destroy_tensor(S->out);
    free(S->id);
    free(S->count);
    free(S->ids_buf);
    free(S->out_buf);
}

lig_status scase_phase1(lcase *L, scase *S, uint64_t *ws, lig_executor **exec) {
    const qcall *k = &L->call;
    return lig_sparse_logits_get_workspace_size(k->query, k->key, k->weights, k->sq, k->sk, k->table,
                                                L->s.start_null ? NULL : L->key_start, L->key_end, k->layout_query,
                                                k->layout_key, S->ids, S->bk, S->unaligned != 0, S->out, ws, exec);
}

lig_status scase_run(lcase *L, scase *S, int threads) {
    memset(S->out_buf, 0x5a, S->out_bytes);
    if (threads > 0) lig_set_num_threads(threads);
    uint64_t ws = 0;
    lig_executor *exec = NULL;
    lig_status st = scase_phase1(L, S, &ws, &exec);
    if (threads > 0) lig_set_num_threads(0);
    if (st != LIG_SUCCESS) return st;
    void *mem = ws ? th_xmalloc((size_t)ws) : NULL;
    if (mem) memset(mem, 0xab, (size_t)ws);
    st = lig_sparse_logits(mem, ws, exec, NULL);
    free(mem);
    return st;
}

static int64_t out_elem(const scase *S, int64_t row, int64_t g, int64_t col) {
    return row * S->out_row_step + g * S->out_head_step + col * S->out_col_step;
}

int scase_check(const lcase *L, const scase *S, const char *label) {
    const qcase *c = &L->c;
    const ref_problem *p = &c->p;
    const int64_t G = p->N1 / p->N2;
    const double steps = (double)(p->D + G + 4);
    const ref_quant_data x = {c->q, c->k, c->w, c->s.has_sq ? c->sq : NULL, c->sk};
    const double half_ulp = S->out_dtype == LIG_BFLOAT16 ? ldexp(1.0, -8) : S->out_dtype == LIG_FLOAT16 ? ldexp(1.0, -11) : 0.0;
    for (int64_t row = 0; row < S->rows; row++) {
        ref_row info;
        ref_row_info(p, row, &info);
        const int64_t ks = L->ks[row], ke = L->ke[row], off = S->unaligned ? ks % S->bk : 0;
        for (int64_t g = 0; g < S->N2; g++)
            for (int64_t col = 0; col < S->cols; col++) {
                const int64_t j = col / S->bk, key = j < S->count[row] ? S->id[row * S->M + j] * S->bk + off + col % S->bk : -1;
                const double got = th_load(S->out_buf, S->out_dtype, out_elem(S, row, g, col));
                if (key < ks || key >= ke) {
                    if (!CHECK(isinf(got) && got < 0, "%s: row %lld head %lld column %lld (no key): got %g, want -inf",
                               label, (long long)row, (long long)g, (long long)col, got))
                        return 1;
                    continue;
                }
                const float dense = lcase_logit(L, row, g, key);
                const double want = th_round_dtype(S->out_dtype, (double)dense);
                const int same = isnan(want) ? isnan(got) : S->out_dtype == LIG_FLOAT32
                                                                ? th_f32_bits(got) == th_f32_bits(want)
                                                                : got == want && signbit(got) == signbit(want);
                if (!CHECK(same, "%s: row %lld head %lld column %lld (key %lld): got %a, want %a (the dense logit %a)",
                           label, (long long)row, (long long)g, (long long)col, (long long)key, got, want, (double)dense))
                    return 1;
                double mag;
                const double ref = ref_quant_score(p, &x, row, &info, g, key, &mag);
                if (isnan(ref) || isnan(got)) continue; /* NaN scale bytes: compared bitwise above */
                /* the 16-bit rounding: half an ulp of the value, or of the subnormals below the normals */
                const double sub = S->out_dtype == LIG_FLOAT16 ? ldexp(1.0, -25) : S->out_dtype == LIG_BFLOAT16 ? ldexp(1.0, -134) : 0.0;
                const double tol = tol_accumulated(steps, mag) + half_ulp * fabs(ref) * 2.0 + sub;
                if (isinf(got) && !isinf(dense)) { /* a 16-bit output's overflow: the reference is past its range */
                    if (!CHECK(S->out_dtype == LIG_FLOAT16 && fabs(ref) + tol >= 65504.0 && (got < 0) == (ref < 0),
                               "%s: row %lld head %lld key %lld: got %g, float64 %.17g", label, (long long)row,
                               (long long)g, (long long)key, got, ref))
                        return 1;
                    continue;
                }
                if (!CHECK(fabs(got - ref) <= tol, "%s: row %lld head %lld key %lld: got %.17g, float64 %.17g, bound %g",
                           label, (long long)row, (long long)g, (long long)key, got, ref, tol))
                    return 1;
            }
    }
    return 0;
}


/* The sparse logits (lig_sparse_logits_get_workspace_size / lig_sparse_logits, contract 2.8):
 * MXFP4, FP8 and INT8 over BSND, TND and paged keys, N2 = 1 and 2, block sizes 1 to 16 and
 * DeepGEMM's 8 / 16, aligned and unaligned blocks, lists shorter and longer than a row's blocks,
 * tails of -1 or the last id, FLOAT32 / BFLOAT16 / FLOAT16 outputs (strided or not). Every scored
 * column is checked two ways: bitwise against lig_quant_logits' dense logits of the same row and key
 * (what DeepGEMM's own test asserts against its dense kernel), rounded once by the test's own
 * conversion when the output is 16-bit, and against the float64 reference of the formula within
 * contract 2.4's bound; every other column is -inf. The same bytes for 1, 2 and 3 threads. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error_bounds.h"
#include "float_formats.h"
#include "framework.h"
#include "lig.h"
#include "logits_case.h"
#include "quant_case.h"
#include "reference/indexer_quant_ref.h"
#include "rng.h"
#include "tensor_buffers.h"

/* The sparse call's own arguments beside a logits case (whose inputs and ranges it shares). */
typedef struct scase {
    int64_t M, bk;                 /* blocks per row, keys per block */
    int unaligned, short_out, strided;
    lig_dtype ids_dtype, out_dtype;
    int64_t rows, N2, cols;
    int64_t *id, *count;           /* [rows][M] as written, and each row's valid count */
    void *ids_buf, *out_buf;
    size_t out_bytes;
    int64_t out_col_step, out_row_step, out_head_step; /* elements */
    lig_tensor *ids, *out;
} scase;

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

static void scase_make(th_rng *r, const lcase *L, scase *S) {
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

static void scase_free(scase *S) {
    lig_destroy_tensor(S->ids);
    lig_destroy_tensor(S->out);
    free(S->id);
    free(S->count);
    free(S->ids_buf);
    free(S->out_buf);
}

static lig_status sparse_phase1(lcase *L, scase *S, uint64_t *ws, lig_executor **exec) {
    const qcall *k = &L->call;
    return lig_sparse_logits_get_workspace_size(k->query, k->key, k->weights, k->sq, k->sk, k->table,
                                                L->s.start_null ? NULL : L->key_start, L->key_end, k->layout_query,
                                                k->layout_key, S->ids, S->bk, S->unaligned != 0, S->out, ws, exec);
}

/* Both phases on `threads` threads, the output filled with 0x5a first. */
static lig_status sparse_run(lcase *L, scase *S, int threads) {
    memset(S->out_buf, 0x5a, S->out_bytes);
    lig_set_num_threads(threads);
    uint64_t ws = 0;
    lig_executor *exec = NULL;
    lig_status st = sparse_phase1(L, S, &ws, &exec);
    lig_set_num_threads(0);
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

/* The last run against the dense logits of L (its last run: FLOAT32, clean, not compressed) and the
 * float64 reference. Returns the number of bad columns (stops at the first). */
static int scase_check(const lcase *L, const scase *S, const char *label) {
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
                const double tol = tol_accumulated(steps, mag) + half_ulp * fabs(ref) * 2.0;
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

static const lig_dtype qk_dtypes[3] = {LIG_FLOAT4_E2M1X2, LIG_FLOAT8_E4M3FN, LIG_INT8};

/* Cell (qk, key layout, N2) case v. */
static void matrix_spec(th_rng *r, lspec *s, int qk, int kl, int n2, int v) {
    lspec_default(s);
    qspec *q = &s->q;
    q->qk = qk_dtypes[qk];
    q->layout = kl == 1 || (kl == 2 && v % 3 == 2) ? REF_TND : REF_BSND;
    q->paged = kl == 2;
    q->N2 = n2;
    q->G = (int64_t[]){1, 3, 8, 16}[v % 4];
    q->D = qk == 0 ? (int64_t[]){2, 64, 128, 66, 40}[v % 5] : (int64_t[]){1, 16, 64, 129, 32}[v % 5];
    q->B = 1 + th_rng_range(r, 0, 2);
    q->S1 = 1 + th_rng_range(r, 0, 6);
    q->S2 = 1 + th_rng_range(r, 0, 150);
    q->K = 1;
    q->has_sq = qk == 0 || v % 2;
    if (qk == 0) {
        q->sq_dtype = v % 2 ? LIG_INT32 : LIG_UINT8;
        q->sk_dtype = (v / 2) % 2 ? LIG_INT32 : LIG_UINT8;
    }
    q->pad = v % 3 == 1;
    q->block_size = 1 + (v % 4) * 5;
    q->w_dtype = (lig_dtype[]){LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16}[v % 3];
    s->clean = 1;
    s->compressed = 0;
    s->with_topk = 0;
    s->with_logits = 1;
    s->start_null = v % 6 == 5;
    s->range_dtype = v % 3 ? LIG_INT64 : LIG_INT32;
}

static void sparse_spec(th_rng *r, scase *S, int n2, int v) {
    memset(S, 0, sizeof *S);
    S->bk = v % 3 == 0 ? (v % 2 ? 8 : 16) : 1 + th_rng_range(r, 0, 9);
    S->M = th_rng_range(r, 0, 12);
    S->unaligned = v % 2 == 1;
    S->short_out = n2 == 1 && v % 4 == 1;
    S->strided = v % 5 == 2;
    S->ids_dtype = v % 4 == 3 ? LIG_INT64 : LIG_INT32;
    S->out_dtype = (lig_dtype[]){LIG_FLOAT32, LIG_BFLOAT16, LIG_FLOAT32, LIG_FLOAT16}[v % 4];
}

LIG_TEST(sparse_logits_matrix) {
    int cases = 0;
    for (int qk = 0; qk < 3; qk++)
        for (int kl = 0; kl < 3; kl++)
            for (int n2 = 1; n2 <= 2; n2++)
                for (int v = 0; v < 8; v++) {
                    th_rng r = th_rng_make(0x5b10u + (uint64_t)(((qk * 3 + kl) * 2 + n2) * 100 + v));
                    lspec s;
                    matrix_spec(&r, &s, qk, kl, n2, v);
                    lcase L;
                    lcase_make(&r, &s, &L);
                    char label[160];
                    scase S;
                    sparse_spec(&r, &S, n2, v);
                    snprintf(label, sizeof label, "sparse qk %d layout %d N2 %d case %d (G %lld D %lld, %lld blocks of %lld%s)",
                             qk, kl, n2, v, (long long)s.q.G, (long long)s.q.D, (long long)S.M, (long long)S.bk,
                             S.unaligned ? ", unaligned" : "");
                    if (!CHECK(lcase_run(&L, 1, NULL) == LIG_SUCCESS, "%s (dense): %s", label, lig_get_last_error())) {
                        lcase_free(&L);
                        continue;
                    }
                    lcase_check(&L, label); /* the dense logits against float64 */
                    scase_make(&r, &L, &S);
                    lig_status st = sparse_run(&L, &S, 1);
                    if (CHECK(st == LIG_SUCCESS, "%s: %s", label, lig_get_last_error()) && scase_check(&L, &S, label) == 0) {
                        cases++;
                        CHECK(lcase_inputs_unchanged(&L), "%s: an input changed", label);
                        unsigned char *one = th_xmalloc(S.out_bytes);
                        memcpy(one, S.out_buf, S.out_bytes);
                        for (int t = 2; t <= 3; t++) {
                            st = sparse_run(&L, &S, t);
                            CHECK(st == LIG_SUCCESS && memcmp(one, S.out_buf, S.out_bytes) == 0,
                                  "%s: %d threads differ from one", label, t);
                        }
                        free(one);
                    }
                    scase_free(&S);
                    lcase_free(&L);
                }
    CHECK(cases == 3 * 3 * 2 * 8, "sparse_logits_matrix: %d of %d cases ran and matched", cases, 3 * 3 * 2 * 8);
}

/* DeepGEMM's shapes: MXFP4, D = 128, H = 32 and 64, one key head, TND query over contiguous keys
 * and per-row paged tables (BSND, next_n 1), blocks of 8 and 16, many blocks per row, both
 * alignments. */
LIG_TEST(sparse_logits_deepgemm_shapes) {
    for (int v = 0; v < 6; v++) {
        th_rng r = th_rng_make(0xd6e0u + (uint64_t)v);
        lspec s;
        lspec_default(&s);
        qspec *q = &s.q;
        q->qk = LIG_FLOAT4_E2M1X2;
        q->sq_dtype = q->sk_dtype = LIG_INT32;
        q->has_sq = 1;
        q->layout = v % 2 ? REF_BSND : REF_TND;
        q->paged = v % 2;
        q->N2 = 1;
        q->G = v < 3 ? 32 : 64;
        q->D = 128;
        q->K = 1;
        q->B = q->paged ? 5 : 1;
        q->S1 = q->paged ? 1 : 7;
        q->S2 = 300 + th_rng_range(&r, 0, 200);
        q->block_size = 64;
        s.with_topk = 0;
        s.p_empty = 0.05;
        lcase L;
        lcase_make(&r, &s, &L);
        char label[96];
        snprintf(label, sizeof label, "deepgemm shape %d", v);
        if (!CHECK(lcase_run(&L, 2, NULL) == LIG_SUCCESS, "%s (dense): %s", label, lig_get_last_error())) {
            lcase_free(&L);
            continue;
        }
        scase S;
        memset(&S, 0, sizeof S);
        S.bk = v % 3 == 2 ? 16 : 8;
        S.M = 4 * (1 + th_rng_range(&r, 0, 6));
        S.unaligned = !q->paged && v % 4 == 0;
        S.ids_dtype = LIG_INT32;
        S.out_dtype = LIG_BFLOAT16;
        S.short_out = 1;
        scase_make(&r, &L, &S);
        lig_status st = sparse_run(&L, &S, 2);
        if (CHECK(st == LIG_SUCCESS, "%s: %s", label, lig_get_last_error())) scase_check(&L, &S, label);
        scase_free(&S);
        lcase_free(&L);
    }
}

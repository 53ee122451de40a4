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

#include "framework.h"
#include "lig.h"
#include "logits_case.h"
#include "problem_case.h"
#include "quant_case.h"
#include "rng.h"
#include "sparse_logits_case.h"

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
                    lig_status st = scase_run(&L, &S, 1);
                    if (CHECK(st == LIG_SUCCESS, "%s: %s", label, lig_get_last_error()) && scase_check(&L, &S, label) == 0) {
                        cases++;
                        CHECK(lcase_inputs_unchanged(&L), "%s: an input changed", label);
                        unsigned char *one = th_xmalloc(S.out_bytes);
                        memcpy(one, S.out_buf, S.out_bytes);
                        for (int t = 2; t <= 3; t++) {
                            st = scase_run(&L, &S, t);
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
        lig_status st = scase_run(&L, &S, 2);
        if (CHECK(st == LIG_SUCCESS, "%s: %s", label, lig_get_last_error())) scase_check(&L, &S, label);
        scase_free(&S);
        lcase_free(&L);
    }
}

/* The logits operator (lig_quant_logits_get_workspace_size / lig_quant_logits, contract 2.6)
 * against the float64 reference of the formula (logits_case.h): FP8 and INT8, BSND / TND / PA_BSND,
 * N2 = 1 and 2, clean on and off (the untouched columns keep a sentinel), compressed, empty ranges
 * and ranges up to the last key, strided logits, query scales present and absent; bitwise the
 * quantized forward's values at its selected keys; the same bytes for 1, 2 and 3 threads, with and
 * without key splits and schedules, on every kernel set; DeepGEMM's fused uint8 cache as two views
 * of one buffer; the balanced schedule's entries; BFLOAT16 logits (DeepGEMM's logits_dtype) bit for
 * bit the FLOAT32 logits rounded once to nearest even. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "float_formats.h"
#include "framework.h"
#include "lig.h"
#include "logits_case.h"
#include "problem_case.h"
#include "quant_case.h"
#include "rng.h"
#include "tensor_buffers.h"
#include "testing/lig_testing.h"

static const lig_dtype qk_dtypes[2] = {LIG_FLOAT8_E4M3FN, LIG_INT8};

/* Cell (qk, key layout, N2) case v: the rest cycles with v. */
static void matrix_spec(th_rng *r, lspec *s, int qk, int kl, int n2, int v)
{
    lspec_default(s);
    qspec *q = &s->q;
    q->qk = qk_dtypes[qk];
    q->layout = kl == 1 || (kl == 2 && v % 3 == 2) ? REF_TND : REF_BSND; /* paged under both query layouts */
    q->paged = kl == 2;
    q->N2 = n2;
    q->G = (int64_t[]){1, 3, 8, 16}[v % 4];
    q->D = (int64_t[]){1, 16, 64, 129, 32}[(v + qk) % 5];
    q->B = 1 + th_rng_range(r, 0, 2);
    q->S1 = 1 + th_rng_range(r, 0, 6);
    q->S2 = 1 + th_rng_range(r, 0, 150);
    q->K = 1 + th_rng_range(r, 0, 12);
    q->has_sq = v % 2;
    q->short_form = (v / 2) % 2;
    q->pad = v % 3 == 1;
    q->block_size = 1 + (v % 4) * 5;
    q->idx_dtype = v % 2 ? LIG_INT64 : LIG_INT32;
    q->w_dtype = (lig_dtype[]){LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16}[v % 3];
    q->val_dtype = v % 5 == 4 ? LIG_BFLOAT16 : LIG_FLOAT32;
    q->with_values = v % 7 != 6;
    s->clean = v % 2 == 0;
    s->compressed = (v / 2) % 2;
    s->strided = (v / 3) % 2;
    s->with_topk = v % 4 != 3;
    s->with_logits = v % 8 != 5;
    s->start_null = v % 6 == 5;
    s->range_dtype = v % 3 ? LIG_INT64 : LIG_INT32;
    s->extra_cols = v % 3;
    s->logits_dtype = v % 4 == 2 ? LIG_BFLOAT16 : LIG_FLOAT32;
}

/* Makes the case of spec s, runs it on `threads` threads and checks it against the reference; on a
 * failed run frees it and returns 0. */
static int made_and_checked(th_rng *r, const lspec *s, lcase *L, int threads, const char *label)
{
    lcase_make(r, s, L);
    if (!CHECK(lcase_run(L, threads, NULL) == LIG_SUCCESS, "%s: %s", label, lig_get_last_error())) {
        lcase_free(L);
        return 0;
    }
    CHECK(lcase_inputs_unchanged(L), "%s: an input changed", label);
    lcase_check(L, label);
    return 1;
}

LIG_TEST(quant_logits_matrix)
{
    int cases = 0;
    for (int qk = 0; qk < 2; qk++)
        for (int kl = 0; kl < 3; kl++)
            for (int n2 = 1; n2 <= 2; n2++)
                for (int v = 0; v < 8; v++) {
                    th_rng r = th_rng_make(0x1061u + (uint64_t)(((qk * 3 + kl) * 2 + n2) * 100 + v));
                    lspec s;
                    matrix_spec(&r, &s, qk, kl, n2, v);
                    lcase L;
                    char label[64];
                    snprintf(label, sizeof label, "logits matrix case %d", cases++);
                    if (made_and_checked(&r, &s, &L, 2, label)) {
                        lcase_free(&L);
                    }
                }
    th_note("%d cases", cases);
}

/* Every range a row's whole keys: the rows see what lig_quant_indexer's rows see (sparse_mode 0, no
 * band), so its selection is this operator's and its FLOAT32 values are these logits, bit for bit. */
LIG_TEST(quant_logits_matches_indexer)
{
    int64_t all = 0;
    for (int v = 0; v < 12; v++) {
        th_rng r = th_rng_make(0xe9a1u + (uint64_t)v);
        lspec s;
        lspec_default(&s);
        s.q.qk = qk_dtypes[v % 2];
        s.q.layout = (v / 2) % 3 == 1 ? REF_TND : REF_BSND;
        s.q.paged = (v / 2) % 3 == 2;
        qspec_dims(&s.q, 1 + v % 4, 40 + 37 * v, 1 + v % 2, (int64_t[]){4, 16, 64}[v % 3], 32 + 32 * (v % 4), 7 + v);
        s.q.B = 1 + v % 3;
        s.q.has_sq = v % 3 != 0;
        s.full = 1;
        s.clean = v % 2;
        lcase L;
        char label[64];
        snprintf(label, sizeof label, "matches the indexer, case %d", v);
        if (!made_and_checked(&r, &s, &L, 3, label)) {
            continue;
        }
        const int64_t slots = L.c.rows_q * L.c.p.N2 * L.c.p.K;
        int64_t *idx = th_xmalloc((size_t)slots * sizeof(int64_t));
        double *val = th_xmalloc((size_t)slots * sizeof(double));
        int inputs_ok;
        const lig_status st = qcase_run(&L.c, 2, idx, val, &inputs_ok, NULL, NULL);
        if (CHECK(st == LIG_SUCCESS, "%s: lig_quant_indexer: %s", label, lig_get_last_error())) {
            int64_t compared = 0, bad = 0;
            for (int64_t row = 0; row < L.rows; row++)
                for (int64_t g = 0; g < L.c.p.N2; g++)
                    for (int64_t j = 0; j < L.c.p.K; j++) {
                        const int64_t at = (row * L.c.p.N2 + g) * L.c.p.K + j;
                        const int64_t mine = th_load_int(L.call.buf[QB_IDX], L.c.s.idx_dtype, at);
                        bad += mine != idx[at];
                        if (idx[at] < 0) {
                            continue;
                        }
                        const float a = (float)val[at], b = lcase_logit(&L, row, g, idx[at]);
                        bad += memcmp(&a, &b, sizeof a) != 0;
                        compared++;
                    }
            all += compared;
            CHECK(bad == 0, "%s: %lld of %lld selected keys differ from lig_quant_indexer's", label,
                  (long long)bad, (long long)compared);
        }
        free(idx);
        free(val);
        lcase_free(&L);
    }
    CHECK(all > 1000, "only %lld selected keys compared", (long long)all);
    th_note("%lld selected keys compared", (long long)all);
}

static const lig_dtype bf16_qk[3] = {LIG_FLOAT8_E4M3FN, LIG_INT8, LIG_FLOAT4_E2M1X2};

/* BFLOAT16 logits: every element of the view is the FLOAT32 run's element rounded once to nearest
 * even (test-side rounding, float_formats.h), NaN kept a NaN; the unscored columns -inf or untouched
 * as in FLOAT32; the top-k outputs the same bytes. FP8, INT8 and MXFP4; dense, TND and paged keys;
 * clean or not, compressed, strided; 1 and 3 threads. Each case is also checked against the float64
 * reference (logits_case.h, the bf16 bound). */
LIG_TEST(quant_logits_bf16_is_fp32_rounded)
{
    int64_t compared = 0;
    for (int v = 0; v < 18; v++) {
        lspec s;
        th_rng r0 = th_rng_make(0xbf16u + (uint64_t)v);
        matrix_spec(&r0, &s, 0, v % 3, 1 + v % 2, v);
        s.q.qk = bf16_qk[(v / 3) % 3];
        if (s.q.qk == LIG_FLOAT4_E2M1X2) {
            s.q.has_sq = 1;
            s.q.sq_dtype = v % 2 ? LIG_INT32 : LIG_UINT8;
            s.q.sk_dtype = v % 4 < 2 ? LIG_INT32 : LIG_UINT8;
            s.q.D = (int64_t[]){64, 32, 96, 130}[v % 4];
        }
        s.with_logits = 1;
        lcase A, Bf;
        th_rng ra = th_rng_make(0x5eedu + (uint64_t)v), rb = ra; /* the same draws: the same data */
        s.logits_dtype = LIG_FLOAT32;
        lcase_make(&ra, &s, &A);
        s.logits_dtype = LIG_BFLOAT16;
        lcase_make(&rb, &s, &Bf);
        char label[64];
        snprintf(label, sizeof label, "bf16 logits case %d", v);
        const int threads = v % 2 ? 3 : 1;
        const lig_status sa = lcase_run(&A, threads, NULL), sb = lcase_run(&Bf, 4 - threads, NULL);
        if (CHECK(sa == LIG_SUCCESS && sb == LIG_SUCCESS, "%s: %s", label, lig_get_last_error())) {
            lcase_check(&Bf, label);
            int64_t bad = 0;
            for (int64_t row = 0; row < A.rows; row++)
                for (int64_t g = 0; g < A.c.p.N2; g++)
                    for (int64_t j = 0; j < A.W; j++) {
                        const uint32_t fb = lcase_logit_bits(&A, row, g, j), hb = lcase_logit_bits(&Bf, row, g, j);
                        float f;
                        memcpy(&f, &fb, sizeof f);
                        uint32_t want = th_bf16_bits((double)f);
                        if (fb == LC_SENTINEL) {
                            want = LC_SENTINEL_BF16; /* untouched in both */
                        }
                        const int both_nan = isnan(f) && (hb & 0x7fffu) > 0x7f80u && fb != LC_SENTINEL;
                        bad += hb != want && !both_nan;
                        compared++;
                    }
            CHECK(bad == 0, "%s: %lld logits are not the FLOAT32 logits rounded", label, (long long)bad);
            for (int i = QB_IDX; i <= QB_VAL; i++) {
                CHECK(A.call.buf[i] == NULL ||
                          memcmp(A.call.buf[i], Bf.call.buf[i], A.call.bytes[i]) == 0,
                      "%s: the top-k output %d differs with BFLOAT16 logits", label, i);
            }
        }
        lcase_free(&A);
        lcase_free(&Bf);
    }
    CHECK(compared > 1000, "only %lld logits compared", (long long)compared);
    th_note("%lld logits compared", (long long)compared);
}

/* A decode step: next_n rows per batch at the end of each context (row i sees keys < ctx - next_n +
 * i + 1), keys in a paged cache. */
static void decode_spec(lspec *s, int v, int topk)
{
    lspec_default(s);
    s->q.qk = qk_dtypes[v % 2];
    s->q.paged = 1;
    s->q.lengths = 1;
    qspec_dims(&s->q, 1 + v % 2, 900 + 300 * v, 1, v == 2 ? 64 : 8, 64, 40);
    s->q.B = 2 + v % 2;
    s->q.block_size = 16 + 16 * (v % 2);
    s->q.has_sq = v % 2;
    s->full = 1; /* then cut back to the decode ranges by the caller */
    s->with_topk = topk;
    s->clean = 1;
}

/* The decode ranges: row i of batch b ends at lk[b] - next_n + i + 1 (at least 0). */
static void decode_ranges(lcase *L)
{
    const int64_t S1 = L->c.p.S1;
    for (int64_t row = 0; row < L->rows; row++) {
        const int64_t n = lcase_row_keys(L, row), e = n - S1 + row % S1 + 1;
        L->ks[row] = 0;
        L->ke[row] = e > 0 ? e : 0;
        th_store_int(L->rbuf[0], L->s.range_dtype, row, L->ks[row]);
        th_store_int(L->rbuf[1], L->s.range_dtype, row, L->ke[row]);
    }
}

static lig_tensor *make_schedule(const lcase *L, int64_t workers, int32_t *mem)
{
    const int64_t shape[2] = {workers + 1, 2};
    lig_tensor *t = lig_create_tensor(mem, LIG_INT32, 2, shape, NULL);
    const lig_status st = lig_quant_logits_schedule(L->key_end, L->c.s.block_size, workers, t);
    CHECK(st == LIG_SUCCESS, "lig_quant_logits_schedule: %s", lig_get_last_error());
    return t;
}

/* The same bytes for 1, 2 and 3 threads, unsplit, split into chunks of 64 and 256 keys and by the
 * default, and (logits alone) with schedules of 1, 2, 5 and 16 workers. */
LIG_TEST(quant_logits_threads_and_schedule)
{
    static const int threads[3] = {1, 2, 3};
    static const int64_t splits[4] = {0, 64, 256, -1};
    static const int64_t workers[4] = {1, 2, 5, 16};
    for (int v = 0; v < 6; v++) {
        th_rng r = th_rng_make(0xdec0u + (uint64_t)v);
        lspec s;
        decode_spec(&s, v % 3, v >= 3);
        lcase L;
        lcase_make(&r, &s, &L);
        decode_ranges(&L);
        char label[64];
        snprintf(label, sizeof label, "decode case %d", v);
        lig_testing_set_fwd_split_keys(0);
        if (!CHECK(lcase_run(&L, 1, NULL) == LIG_SUCCESS, "%s: %s", label, lig_get_last_error())) {
            lig_testing_set_tuning(NULL);
            lcase_free(&L);
            continue;
        }
        lcase_check(&L, label);
        size_t nfirst;
        unsigned char *first = lcase_output_bytes(&L, &nfirst);
        for (int k = 0; k < 4; k++) {
            lig_testing_set_fwd_split_keys(splits[k]);
            for (int t = 0; t < 3; t++) {
                const lig_status st = lcase_run(&L, threads[t], NULL);
                size_t n;
                unsigned char *b = lcase_output_bytes(&L, &n);
                CHECK(st == LIG_SUCCESS && n == nfirst && memcmp(b, first, n) == 0,
                      "%s: split %lld, %d threads: other bytes than unsplit on 1 thread", label, (long long)splits[k],
                      threads[t]);
                free(b);
            }
        }
        lig_testing_set_tuning(NULL);
        for (int k = 0; k < 4 && !s.with_topk; k++) {
            int32_t *mem = th_xmalloc(sizeof(int32_t) * (size_t)(2 * workers[k] + 2));
            lig_tensor *sched = make_schedule(&L, workers[k], mem);
            for (int t = 0; t < 3; t++) {
                const lig_status st = lcase_run(&L, threads[t], sched);
                size_t n;
                unsigned char *b = lcase_output_bytes(&L, &n);
                CHECK(st == LIG_SUCCESS && n == nfirst && memcmp(b, first, n) == 0,
                      "%s: schedule of %lld workers, %d threads: %s", label, (long long)workers[k], threads[t],
                      st == LIG_SUCCESS ? "other bytes than without" : lig_get_last_error());
                free(b);
            }
            lig_destroy_tensor(sched);
            free(mem);
        }
        free(first);
        lcase_free(&L);
    }
}

/* On every kernel set this CPU has: the reference bound, 1 and 3 threads the same bytes, a schedule
 * the same bytes; INT8 the same bytes on every set (exact int32 dots, one fp32 order, contract 2.4). */
LIG_TEST(quant_logits_every_set)
{
    char sets[256], list[256];
    snprintf(sets, sizeof sets, "%s", lig_kernel_sets());
    for (int v = 0; v < 4; v++) {
        th_rng r = th_rng_make(0x5e70u + (uint64_t)v);
        lspec s;
        decode_spec(&s, v % 3, 0);
        s.q.qk = qk_dtypes[v % 2];
        s.full = v < 2;
        lcase L;
        lcase_make(&r, &s, &L);
        unsigned char *int8_first = NULL;
        size_t int8_bytes = 0;
        snprintf(list, sizeof list, "%s", sets);
        int n_sets = 0;
        for (char *name = strtok(list, ","); name != NULL; name = strtok(NULL, ",")) {
            if (!CHECK(lig_set_kernel_set(name) == LIG_SUCCESS, "forcing %s, which lig_kernel_sets() lists: %s", name,
                       lig_get_last_error())) {
                continue;
            }
            n_sets++;
            char label[96];
            snprintf(label, sizeof label, "set %s, case %d", name, v);
            if (!CHECK(lcase_run(&L, 1, NULL) == LIG_SUCCESS, "%s: %s", label, lig_get_last_error())) {
                continue;
            }
            lcase_check(&L, label);
            size_t n1, n3, ns;
            unsigned char *one = lcase_output_bytes(&L, &n1);
            lcase_run(&L, 3, NULL);
            unsigned char *three = lcase_output_bytes(&L, &n3);
            int32_t mem[2 * 7 + 2];
            lig_tensor *sched = make_schedule(&L, 7, mem);
            const lig_status st = lcase_run(&L, 3, sched);
            unsigned char *with = lcase_output_bytes(&L, &ns);
            CHECK(n3 == n1 && memcmp(one, three, n1) == 0, "%s: 3 threads wrote other bytes than 1", label);
            CHECK(st == LIG_SUCCESS && ns == n1 && memcmp(one, with, n1) == 0, "%s: a schedule wrote other bytes (%s)",
                  label, lig_get_last_error());
            if (s.q.qk == LIG_INT8) {
                if (!int8_first) {
                    int8_first = one;
                    int8_bytes = n1;
                    one = NULL;
                } else {
                    CHECK(n1 == int8_bytes && memcmp(one, int8_first, n1) == 0, "%s: INT8 bytes differ from the first set's",
                          label);
                }
            }
            lig_destroy_tensor(sched);
            free(one);
            free(three);
            free(with);
        }
        lig_set_kernel_set(NULL);
        if (v == 0) {
            th_note("%d kernel sets (%s)", n_sets, sets);
            if (n_sets < 2) {
                th_skip("the INT8 comparison across sets: this CPU supports one kernel set (%s)", sets);
            }
        }
        free(int8_first);
        lcase_free(&L);
    }
}

/* DeepGEMM's fused cache: uint8 [num_blocks, block_kv, 1, D + 4], each block its block_kv * D fp8
 * bytes then its block_kv fp32 scales, read as two strided views of the one buffer. The logits are
 * the bytes of the same cache in two tensors. */
LIG_TEST(quant_logits_fused_cache)
{
    for (int v = 0; v < 4; v++) {
        th_rng r = th_rng_make(0xf05eu + (uint64_t)v);
        lspec s;
        decode_spec(&s, v % 2, v >= 2);
        s.q.qk = LIG_FLOAT8_E4M3FN;
        s.q.pad = 0;
        s.q.sk_dtype = LIG_FLOAT32;
        s.q.block_size = v % 2 ? 64 : 5;
        s.q.D = v == 3 ? 128 : 64;
        s.full = 0;
        lcase L;
        char label[64];
        snprintf(label, sizeof label, "fused cache case %d", v);
        if (!made_and_checked(&r, &s, &L, 2, label)) {
            continue;
        }
        size_t n0;
        unsigned char *plain = lcase_output_bytes(&L, &n0);
        const int64_t nb = L.c.num_blocks, bs = L.c.s.block_size, D = L.c.p.D, per = bs * (D + 4);
        unsigned char *fused = th_xmalloc((size_t)(nb * per) + 4);
        for (int64_t b = 0; b < nb; b++) {
            memcpy(fused + b * per, (unsigned char *)L.call.buf[QB_K] + b * bs * D, (size_t)(bs * D));
            memcpy(fused + b * per + bs * D, (unsigned char *)L.call.buf[QB_SK] + b * bs * 4, (size_t)(bs * 4));
        }
        const int64_t kshape[4] = {nb, bs, 1, D}, kstr[4] = {per, D, D, 1};
        const int64_t sshape[3] = {nb, bs, 1}, sstr[3] = {per / 4, 1, 1};
        lig_tensor *key = lig_create_tensor(fused, LIG_FLOAT8_E4M3FN, 4, kshape, kstr);
        lig_tensor *sk = lig_create_tensor(fused + bs * D, LIG_FLOAT32, 3, sshape, sstr);
        if (CHECK(key && sk, "%s: the fused views: %s", label, lig_get_last_error())) {
            lig_tensor *k0 = L.call.key, *s0 = L.call.sk;
            L.call.key = key;
            L.call.sk = sk;
            const lig_status st = lcase_run(&L, 2, NULL);
            size_t n1;
            unsigned char *f = lcase_output_bytes(&L, &n1);
            CHECK(st == LIG_SUCCESS && n1 == n0 && memcmp(f, plain, n0) == 0, "%s: %s", label,
                  st == LIG_SUCCESS ? "other bytes than the two tensors" : lig_get_last_error());
            free(f);
            L.call.key = k0;
            L.call.sk = s0;
        }
        lig_destroy_tensor(key);
        lig_destroy_tensor(sk);
        free(fused);
        free(plain);
        lcase_free(&L);
    }
}

/* lig_quant_logits_schedule on a worked example: batches of longest ends 5, 0, 17 in blocks of 4
 * have 2, 0 and 5 blocks; 3 workers start at blocks 0, 2, 4 of the 7: (0,0), (2,0), (2,2), then (3,0). */
LIG_TEST(quant_logits_schedule_values)
{
    const int32_t ends[6] = {5, 3, 0, 0, 2, 17};
    const int64_t eshape[2] = {3, 2}, sshape[2] = {4, 2};
    int32_t out[8];
    lig_tensor *ke = lig_create_tensor((void *)ends, LIG_INT32, 2, eshape, NULL);
    lig_tensor *sc = lig_create_tensor(out, LIG_INT32, 2, sshape, NULL);
    REQUIRE(lig_quant_logits_schedule(ke, 4, 3, sc) == LIG_SUCCESS, "%s", lig_get_last_error());
    const int32_t expect[8] = {0, 0, 2, 0, 2, 2, 3, 0};
    CHECK(memcmp(out, expect, sizeof out) == 0, "got (%d,%d) (%d,%d) (%d,%d) (%d,%d)", out[0], out[1], out[2], out[3],
          out[4], out[5], out[6], out[7]);
    /* more workers than blocks: empty pieces, still in order, ending at (B, 0) */
    int32_t many[2 * 9 + 2];
    const int64_t mshape[2] = {10, 2};
    lig_tensor *sm = lig_create_tensor(many, LIG_INT32, 2, mshape, NULL);
    REQUIRE(lig_quant_logits_schedule(ke, 4, 9, sm) == LIG_SUCCESS, "%s", lig_get_last_error());
    const int32_t first[7] = {0, 0, 2, 2, 2, 2, 2}, at[7] = {0, 1, 0, 1, 2, 3, 4};
    for (int w = 0; w < 10; w++) {
        const int g = w * 7 / 9; /* the global block worker w starts at */
        const int32_t eb = g < 7 ? first[g] : 3, ek = g < 7 ? at[g] : 0;
        CHECK(many[2 * w] == eb && many[2 * w + 1] == ek, "worker %d of 9: expected (%d,%d), got (%d,%d)", w, eb, ek,
              many[2 * w], many[2 * w + 1]);
    }
    lig_destroy_tensor(ke);
    lig_destroy_tensor(sc);
    lig_destroy_tensor(sm);
}

/* Nothing to score: no keys at all, D = 0 (every score exactly 0), no query heads, no query rows;
 * the paged ones with a schedule too. */
LIG_TEST(quant_logits_degenerate)
{
    for (int v = 0; v < 8; v++) {
        th_rng r = th_rng_make(0xde9u + (uint64_t)v);
        lspec s;
        lspec_default(&s);
        s.q.qk = qk_dtypes[v % 2];
        s.q.layout = v % 3 == 1 ? REF_TND : REF_BSND;
        s.q.paged = v % 3 == 2 || v >= 6;
        qspec_dims(&s.q, v >= 6 ? 0 : 3, v < 2 ? 0 : 11, 1, v == 4 || v == 5 ? 0 : 2, v == 2 || v == 3 ? 0 : 8, 4);
        s.clean = v % 2;
        s.compressed = v == 5;
        s.with_topk = !s.q.paged;
        lcase L;
        char label[64];
        snprintf(label, sizeof label, "degenerate case %d", v);
        if (!made_and_checked(&r, &s, &L, 2, label)) {
            continue;
        }
        if (s.q.paged) {
            size_t n0, n1;
            unsigned char *plain = lcase_output_bytes(&L, &n0);
            int32_t mem[2 * 3 + 2];
            lig_tensor *sched = make_schedule(&L, 3, mem);
            const lig_status st = lcase_run(&L, 2, sched);
            unsigned char *with = lcase_output_bytes(&L, &n1);
            CHECK(st == LIG_SUCCESS && n0 == n1 && memcmp(plain, with, n0) == 0, "%s with a schedule: %s", label,
                  st == LIG_SUCCESS ? "other bytes" : lig_get_last_error());
            lig_destroy_tensor(sched);
            free(plain);
            free(with);
        }
        lcase_free(&L);
    }
}

/*
 * Contract section 9: shapes past CANN's limits (D = 128, N2 = 1, N1 <= 64, K <= 2048, no BSND
 * lengths, no band), kept cheap: the work per counted slot is 6*G*D flops, so long sequences
 * with small D and K cost little, and the reference is a per-row loop. Each case goes through
 * suite_large (checked, timed, and failed when fewer slots than a quarter of the rows counted).
 *
 * LIG_TEST_QUICK=1 (used under sanitizers) shrinks the two 131072-row tests to 16384 rows; the
 * other tests keep their sizes.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include "case_generators.h"
#include "framework.h"
#include "lig.h"
#include "suite.h"

/* The case's data drawn with the generator options o (NULL: the defaults), then the backward's
 * check of it. */
static void data_and_check(th_rng *r, tcase *tc, const gen_opts *o, const char *label)
{
    gen_opts defaults;
    gen_opts_default(&defaults);
    gen_data(r, tc, o ? o : &defaults);
    suite_case sc = {.tc = tc};
    suite_large(&suite_backward, &sc, label);
    tc_free(tc);
}

/* One BSND case (no length arrays, or both): its seed, dims, dtypes, mode and lengths. */
typedef struct bsnd_case {
    uint64_t seed;
    int64_t B, N1, N2, D, K;
    lig_dtype dtype, dw_dtype;
    int64_t sparse_mode;
    int short_form;
    int64_t s1, s2;
    int with_seq;
    const char *label;
} bsnd_case;

static void check_bsnd_case(const bsnd_case *c, const gen_opts *o)
{
    th_rng r = th_rng_make(c->seed);
    tcase tc;
    tc_init(&tc);
    tc_set_dims(&tc, c->B, c->N1, c->N2, c->D, c->K);
    tc.p.sparse_mode = c->sparse_mode;
    tc.dtype = c->dtype;
    tc.dw_dtype = c->dw_dtype;
    tc.short_form = c->short_form;
    gen_layout(&r, &tc, 0, c->s1, c->s2, 0, 0, c->with_seq);
    data_and_check(&r, &tc, o, c->label);
}

LIG_TEST(large_bsnd_128k_causal)
{
    const int64_t S = suite_long_rows();
    char label[64];
    snprintf(label, sizeof label, "BSND S1=S2=%" PRId64 " causal", S);
    const bsnd_case c = {131072, 1, 2, 1, 4, 8, LIG_BFLOAT16, LIG_BFLOAT16, 3, 1, S, S, 0, label};
    gen_opts o;
    gen_opts_default(&o);
    o.tail_pad = 1;
    o.p_dup = 0.05;
    check_bsnd_case(&c, &o);
}

LIG_TEST(large_tnd_128k_varlen)
{
    const int64_t T = suite_long_rows();
    th_rng r = th_rng_make(7);
    tcase tc;
    tc_init(&tc);
    tc_set_dims(&tc, 4, 2, 1, 4, 8);
    tc.p.layout = REF_TND;
    tc.p.S1 = T;
    tc.p.S2 = T;
    tc.p.pre_tokens = 1000;
    tc.idx_dtype = LIG_INT64;
    tc.seq_dtype = LIG_INT32;
    tc.has_seq_q = tc.has_seq_k = 1;
    tc_alloc(&tc);
    /* Batches of T/4.4, 0 (empty), T/2.2 and the rest but 72 rows, which lie past the last end;
     * keys end at different places so Lk != Lq in every batch. */
    const int64_t q_ends[4] = {T * 10 / 44, T * 10 / 44, T * 30 / 44, T - 72};
    const int64_t k_ends[4] = {T * 12 / 44, T * 13 / 44, T * 32 / 44, T};
    for (int b = 0; b < 4; b++) {
        tc.seq_q[b] = q_ends[b];
        tc.seq_k[b] = k_ends[b];
    }
    char label[64];
    snprintf(label, sizeof label, "TND T=%" PRId64 " in 4 batches, band 1000", T);
    data_and_check(&r, &tc, NULL, label);
}

LIG_TEST(large_batch_1024)
{
    th_rng r = th_rng_make(1024);
    for (int layout = 0; layout < 2; layout++) {
        tcase tc;
        gen_batch_1024(&r, &tc, layout);
        tc.dw_dtype = LIG_FLOAT16;
        data_and_check(&r, &tc, NULL, layout == 0 ? "BSND B=1024 with lengths" : "TND B=1024");
    }
}

LIG_TEST(large_head_dims)
{
    static const bsnd_case cases[] = {
        {300, 2, 4, 2, 1, 8, LIG_FLOAT32, LIG_FLOAT32, 3, 0, 16, 32, 1, "D=1"},
        {301, 2, 4, 2, 300, 8, LIG_BFLOAT16, LIG_FLOAT32, 3, 0, 16, 32, 1, "D=300"},
    };
    for (int i = 0; i < 2; i++) check_bsnd_case(&cases[i], NULL);
}

LIG_TEST(large_topk_counts)
{
    static const bsnd_case cases[] = {
        {5000, 1, 2, 1, 8, 1, LIG_BFLOAT16, LIG_BFLOAT16, 0, 1, 16, 6000, 0, "K=1"},
        {5001, 1, 2, 1, 8, 5000, LIG_BFLOAT16, LIG_BFLOAT16, 0, 1, 16, 6000, 0, "K=5000"},
    };
    for (int i = 0; i < 2; i++) check_bsnd_case(&cases[i], NULL);
}

LIG_TEST(large_heads_80_groups_5)
{
    static const bsnd_case c = {80, 2, 80, 5, 16, 8, LIG_BFLOAT16, LIG_FLOAT32, 3, 0, 8, 16, 1, "N1=80 N2=5"};
    check_bsnd_case(&c, NULL);
}

/* CANN's own shape class (N1 = 64, N2 = 1, D = 128, bf16, causal) at a small sequence length, so the
 * blocked SIMD paths run with full-width heads; BSND and TND. */
LIG_TEST(large_deepseek_shape)
{
    for (int layout = 0; layout < 2; layout++) {
        th_rng r = th_rng_make(64128 + (uint64_t)layout);
        tcase tc;
        gen_deepseek_heads(&tc);
        tc.p.B = 2;
        tc.p.K = 32;
        tc.dw_dtype = LIG_FLOAT32;
        gen_layout(&r, &tc, layout, 96, layout ? 128 : 96, 4, 0, 0);
        data_and_check(&r, &tc, NULL, layout == 0 ? "BSND N1=64 D=128 K=32" : "TND N1=64 D=128 K=32");
    }
}

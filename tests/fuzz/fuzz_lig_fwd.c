/*
 * libFuzzer target: the forward (lig_indexer), the fused KL step (lig_kl_loss_and_dy), the
 * tensor descriptor (lig_create_tensor), the forward over a paged key cache
 * (lig_indexer_paged_get_workspace_size), the quantized forward and the fused KL loss
 * (lig_sparse_indexer_grad_kl_loss) through the public C API; the first byte picks which.
 *
 * Forward: threads and kernel set, up to two defects, the views of query, key, weights,
 * sparse_indices and sparse_values, the problem as for the backward (fuzz_case.h: dtypes, layout,
 * dims with zeros, lengths, mode, band; K = sparse_count 1..20) with grid or continuous data, and
 * whether sparse_values is passed and in which dtype. Success must match the float64 reference
 * (tests/harness/forward_kl_checks.h: exact top-k sets where the scores are exact, the fp32 error bound otherwise).
 * KL step: rank 1..4 (the last extent 0..9, the others 0..4), independent dtypes, optional indices, counted and
 * padded slots, targets >= 0 (negative or NaN ones in a counted slot with the target defect).
 * Descriptor: any dtype, rank, extents, strides and data pointer; lig_create_tensor must
 * return NULL exactly for what docs/contract.md 6.2 refuses.
 * Paged: the forward's problem with its keys scattered over a cache in a decoded block order,
 * block sizes 1..4, spare blocks and table columns, INT32 or INT64 tables with garbage where
 * nothing is read, and with the entry defect an entry that is read outside the cache; the
 * results must be the contiguous forward's, and the cache, table and lengths stay untouched.
 * Any failure must carry the status the defects call for, a message, and leave every output
 * unchanged.
 * Quantized forward (lig_quant_indexer_get_workspace_size): threads and kernel set, FP8, INT8 or
 * MXFP4 (FLOAT4_E2M1X2 with UINT8 / INT32 block scales),
 * BSND / TND / PA_BSND keys, with or without query scales, every scale, weight, index and value
 * dtype, mode, band, lengths, padded strides, short outputs, NaN codes, extreme INT8 codes,
 * dims with zeros (tests/harness/quant_case.h); the result must match the float64 reference
 * (exact index sets where the scores are apart by more than the fp32 bound) with every input
 * and every byte past the outputs unchanged.
 * Quantized logits (lig_quant_logits_get_workspace_size, byte 6): the quantized forward's data
 * (as above, MXFP4 included, no NaN codes), per-row key ranges (empty, up to the last key, starting at 0 with
 * key_start NULL), logits FLOAT32 or BFLOAT16, clean or not, compressed or not, strided, with or
 * without the top-k, and a schedule of 1..9 workers on a paged cache; the result must match the float64 reference
 * (tests/harness/logits_case.h: logits within the fp32 bound, unscored columns -inf or untouched,
 * exact index sets where the scores are apart), a schedule's the same bytes as none.
 * Fused KL loss (lig_sparse_indexer_grad_kl_loss, fuzz_kl_loss.h): the C tests' problems with dims
 * (zeros too), layouts, lengths, modes, bands, statistics, rope, targets and forms from the input,
 * defects (NULL, dtype, shape, aliased outputs, pointers, layout, mode, band, target, scale,
 * statistics, rope, lengths, an index out of range, phase-2 workspace and stream); the result
 * must match the float64 reference within the C tests' bounds, a failure change nothing.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor_buffers.h"
#include "fuzz_case.h"
#include "float_formats.h"
#include "framework.h"
#include "forward_kl_runner.h"
#include "quant_case.h"
#include "fuzz_quant_spec.h"
#include "logits_case.h"
#include "sparse_logits_case.h"
#include "fuzz_kl_loss.h"

/* ---- forward ---- */

enum { F_SEQ = FZ_D_COMMON, F_COUNT, F_SHORT_WS, F_STREAM, F_NULL_WS, F_DEFECTS };

static const int k_fwd_slots[5] = {FW_Q, FW_K, FW_W, FW_IDX, FW_VAL};

/* A forward call's defect kinds (up to two of n_kinds), views and problem, in that order. */
static void decode_forward(fz_in *in, int n_kinds, int *kinds, fz_views *vs, tcase *tc)
{
    fz_decode_defects_and_views(in, n_kinds, kinds, vs, 5);
    fz_decode_tcase(in, tc, 1);
}

/* The forward's instance of tc (the stride source uninstalled after it) and tc's description;
 * returns fz_creation_failed. */
static int setup_forward(tcase *tc, int with_values, lig_dtype val_dtype, op_inst *oi, char *desc, size_t size)
{
    fwd_setup(tc, with_values, val_dtype, oi);
    tbuf_set_stride_source(NULL, NULL);
    tc_describe(tc, desc, size);
    return fz_creation_failed(oi);
}

static void forward(fz_in *in, const char *env, char *label, size_t label_size)
{
    int kinds[2];
    fz_views vs;
    tcase tc;
    decode_forward(in, F_DEFECTS, kinds, &vs, &tc);
    const uint8_t v = fz_u8(in);
    const int with_values = v & 1;
    const lig_dtype val_dtype = v & 2 ? LIG_FLOAT32 : tc.dtype;
    fuzz_expect ex;
    memset(&ex, 0, sizeof ex);
    const int p2 = fz_p2_of(kinds, F_SHORT_WS, F_STREAM, F_NULL_WS);
    for (int i = 0; i < 2; i++) {
        if (kinds[i] == F_SEQ) {
            fz_defect_seq(in, &tc, &ex);
        }
    }
    op_inst oi;
    char desc[512];
    if (setup_forward(&tc, with_values, val_dtype, &oi, desc, sizeof desc)) {
        snprintf(label, label_size, "forward [%s] (a negative stride)", desc);
    } else {
        const ref_problem *p = &tc.p;
        ex.invalid1 |= !ref_seq_ok(p, NULL, 0);
        ex.empty = p->B == 0 || p->S1 == 0 || p->S2 == 0 || p->N1 == 0 || p->D == 0;
        fz_expect_outputs(&oi, &ex);
        fz_op_desc op = {k_fwd_slots, 5, k_fwd_slots, 4, {0}, 1};
        const unsigned fl = 1u << tc.dtype;
        op.allowed[FW_Q] = op.allowed[FW_K] = op.allowed[FW_W] = fl;
        op.allowed[FW_VAL] = fl | 1u << LIG_FLOAT32;
        op.allowed[FW_IDX] = 1u << LIG_INT32 | 1u << LIG_INT64;
        for (int i = 0; i < 2; i++) {
            if (kinds[i] >= 0 && kinds[i] < FZ_D_COMMON) {
                fz_defect_common(in, kinds[i], &oi, &op, &ex);
            } else if (kinds[i] == F_COUNT) {
                oi.sparse_count = fz_u8(in) & 1 ? 0 : -fz_range(in, 1, 100);
                ex.invalid1 = 1;
                fuzz_note_defect(&ex, "sparse_count < 1");
            }
        }
        snprintf(label, label_size, "forward [%s] values=%s %s defects: %s%s", desc,
                 with_values ? th_dtype_name(val_dtype) : "none", env, ex.what[0] ? ex.what : "none", fz_p2_name(p2));
        suite_case sc = {.tc = &tc, .with_values = with_values, .val_dtype = val_dtype};
        fz_run(in, &oi, &ex, p2, 0, &suite_forward, &sc, label);
    }
    inst_teardown(&oi);
    tc_free(&tc);
}

/* ---- forward over a paged key cache ---- */

/* The paged call's own tensors: the instance's phase 1 (an inst_phase1_fn) reads them here. */
static const lig_tensor *g_cache, *g_table, *g_lengths;

static lig_status paged_phase1(inst *oi)
{
    return lig_indexer_paged_get_workspace_size(oi->arg[FW_Q], g_cache, g_table, oi->arg[FW_W], oi->arg[FW_SQ],
                                                g_lengths, oi->layout, oi->sparse_count, oi->sparse_mode,
                                                oi->pre_tokens, oi->next_tokens, oi->arg[FW_IDX], oi->arg[FW_VAL],
                                                oi->workspace_size_arg, oi->executor_arg);
}

enum { P_BAD_ENTRY = 0, P_SHORT_WS, P_STREAM, P_NULL_WS, P_DEFECTS };

/* The forward's problem with its keys moved into a cache [num_blocks, block_size, N2, D] in an
 * order decoded from the input, read through a block table whose entries past each batch's keys
 * are garbage (never read); with the entry defect one entry that is read lies outside the cache.
 * The results must be the contiguous forward's (the same reference). */
static void paged(fz_in *in, const char *env, char *label, size_t label_size)
{
    int kinds[2];
    fz_views vs;
    tcase tc;
    decode_forward(in, P_DEFECTS, kinds, &vs, &tc);
    const ref_problem *p = &tc.p;
    if (p->layout == REF_BSND && !tc.has_seq_k) {
        tc.has_seq_k = 1; /* the paged form needs the key lengths */
        tc_sync_seq(&tc);
    }
    const uint8_t v = fz_u8(in);
    const int64_t bs = fz_range(in, 1, 4);
    const lig_dtype table_dtype = v & 4 ? LIG_INT64 : LIG_INT32;
    op_inst oi;
    char desc[512];
    const int creation_failed = setup_forward(&tc, v & 1, v & 2 ? LIG_FLOAT32 : tc.dtype, &oi, desc, sizeof desc);
    oi.phase1 = paged_phase1;
    if (creation_failed) {
        snprintf(label, label_size, "paged forward [%s] (a negative stride)", desc);
        inst_teardown(&oi);
        tc_free(&tc);
        return;
    }
    /* per-batch key lengths and where each batch's keys start in the contiguous key */
    const int64_t B = p->B, row = p->N2 * p->D;
    int64_t lk[3], first[3], longest = 0, used = 0;
    for (int64_t b = 0; b < B; b++) {
        first[b] = p->layout == REF_TND ? (b ? tc.seq_k[b - 1] : 0) : b * p->S2;
        lk[b] = p->layout == REF_TND ? tc.seq_k[b] - first[b] : tc.seq_k[b];
        longest = lk[b] > longest ? lk[b] : longest;
        used += (lk[b] + bs - 1) / bs;
    }
    const int64_t per_seq = (longest + bs - 1) / bs + fz_range(in, 0, 1);
    const int64_t blocks = used + fz_range(in, 0, 2);
    const size_t es = th_dtype_size(tc.dtype), ts = th_dtype_size(table_dtype);
    unsigned char *cache = th_xmalloc((size_t)(blocks * bs * row) * es + 1);
    unsigned char *table = th_xmalloc((size_t)(B * per_seq) * ts + 1);
    int64_t *lengths = th_xmalloc(sizeof(int64_t) * (size_t)B + 1);
    /* the cache's blocks in a decoded order: a permutation of 0..blocks-1 */
    int64_t *order = th_xmalloc(sizeof(int64_t) * (size_t)(blocks + 1));
    for (int64_t i = 0; i < blocks; i++) {
        order[i] = i;
    }
    for (int64_t i = blocks - 1; i > 0; i--) {
        const int64_t j = fz_range(in, 0, i), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    int64_t next = 0;
    for (int64_t b = 0; b < B; b++) {
        lengths[b] = lk[b];
        for (int64_t j = 0; j < per_seq; j++) {
            const int64_t block = j * bs < lk[b] ? order[next++] : (int64_t)(int8_t)fz_u8(in) * 1000;
            th_store_int(table, table_dtype, b * per_seq + j, block);
            for (int64_t s = j * bs; s < lk[b] && s < (j + 1) * bs; s++) {
                for (int64_t e = 0; e < row; e++) {
                    th_store(cache, tc.dtype, (block * bs + s % bs) * row + e, tc.k[(first[b] + s) * row + e]);
                }
            }
        }
    }
    free(order);
    fuzz_expect ex;
    memset(&ex, 0, sizeof ex);
    int invalid2 = 0;
    if (kinds[0] == P_BAD_ENTRY || kinds[1] == P_BAD_ENTRY) {
        for (int64_t b = 0; b < B && !invalid2; b++) {
            if (lk[b] > 0) {
                const int64_t j = fz_range(in, 0, (lk[b] - 1) / bs);
                th_store_int(table, table_dtype, b * per_seq + j, fz_u8(in) & 1 ? -1 : blocks + fz_range(in, 0, 9));
                invalid2 = 1;
                fuzz_note_defect(&ex, "a block table entry outside the cache");
            }
        }
    }
    const int64_t cs[4] = {blocks, bs, p->N2, p->D}, tsh[2] = {B, per_seq};
    g_cache = inst_adopt(&oi, lig_create_tensor(cache, tc.dtype, 4, cs, NULL));
    g_table = inst_adopt(&oi, lig_create_tensor(table, table_dtype, 2, tsh, NULL));
    g_lengths = inst_adopt(&oi, lig_create_tensor(lengths, LIG_INT64, 1, &B, NULL));
    /* the cache, table and lengths are inputs: they must come out as they went in */
    unsigned char *keep[3];
    const size_t keep_bytes[3] = {(size_t)(blocks * bs * row) * es, (size_t)(B * per_seq) * ts,
                                  sizeof(int64_t) * (size_t)B};
    const unsigned char *mem[3] = {cache, table, (unsigned char *)lengths};
    for (int i = 0; i < 3; i++) {
        keep[i] = th_xmalloc(keep_bytes[i] + 1);
        memcpy(keep[i], mem[i], keep_bytes[i]);
    }
    ex.invalid1 = !ref_seq_ok(p, NULL, 0);
    ex.empty = p->B == 0 || p->S1 == 0 || p->N1 == 0 || p->D == 0 || per_seq == 0 || blocks == 0;
    fz_expect_outputs(&oi, &ex);
    const int p2 = fz_p2_of(kinds, P_SHORT_WS, P_STREAM, P_NULL_WS);
    snprintf(label, label_size, "paged forward [%s] block_size=%lld blocks=%lld per_seq=%lld table=%s %s defects: %s%s",
             desc, (long long)bs, (long long)blocks, (long long)per_seq, th_dtype_name(table_dtype), env,
             ex.what[0] ? ex.what : "none", fz_p2_name(p2));
    suite_case sc = {.tc = &tc, .with_values = oi.present[FW_VAL], .val_dtype = oi.buf[FW_VAL].dtype};
    fz_run(in, &oi, &ex, p2, invalid2, &suite_forward, &sc, label);
    for (int i = 0; i < 3; i++) {
        CHECK(memcmp(keep[i], mem[i], keep_bytes[i]) == 0, "%s: the paged call wrote to its cache, table or lengths",
              label);
        free(keep[i]);
    }
    inst_teardown(&oi);
    free(cache);
    free(table);
    free(lengths);
    tc_free(&tc);
}

/* ---- KL step ---- */

enum { K_TARGET = FZ_D_COMMON, K_SHORT_WS, K_STREAM, K_NULL_WS, K_DEFECTS };

static const int k_kl_slots[5] = {KL_VAL, KL_TGT, KL_LOSS, KL_DY, KL_IDX};

static void decode_kl(fz_in *in, klcase *kc, int bad_target)
{
    static const lig_dtype floats[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    kl_init(kc);
    const uint8_t f = fz_u8(in);
    kc->v_dtype = floats[(f & 3) % 3];
    kc->t_dtype = floats[(f >> 2 & 3) % 3];
    kc->dy_dtype = floats[(f >> 4 & 3) % 3];
    kc->has_indices = (f & 64) != 0;
    kc->idx_dtype = f & 128 ? LIG_INT64 : LIG_INT32;
    const uint8_t g = fz_u8(in);
    kc->loss_ndim = g & 1;
    const int grid = (g & 2) != 0;
    kc->ndim = (int)fz_range(in, 1, 4);
    for (int d = 0; d < kc->ndim; d++) {
        kc->shape[d] = fz_range(in, 0, d == kc->ndim - 1 ? 9 : 4);
    }
    kc->in_strides = kc->out_strides = TC_SOURCE;
    kl_alloc(kc);
    const int64_t n = kl_rows(kc) * kl_K(kc);
    for (int64_t i = 0; i < n; i++) {
        const uint8_t b = fz_u8(in);
        const int counted = b >= 48;
        if (kc->has_indices) {
            kc->idx[i] = counted ? b % 50 : -1 - (b & 3);
            /* a slot that does not count is never read: a huge value there must not matter (not
             * NaN: a stride-0 view can carry it into a counted slot, where it would make every
             * output of the row NaN, which the checks cannot compare) */
            kc->values[i] = counted || !(b & 4) ? fz_value(in, kc->v_dtype, grid) : b & 16 ? 30000.0 : -30000.0;
        } else {
            kc->values[i] = counted ? fz_value(in, kc->v_dtype, grid) : -INFINITY;
        }
        if (counted) {
            static const double bad[3] = {-0.5, NAN, -INFINITY};
            const uint8_t t = fz_u8(in);
            kc->target[i] = bad_target && t >= 250 ? bad[t % 3] : (double)(t % 17) / 16.0;
        } else {
            kc->target[i] = b & 8 ? NAN : -1.0;
        }
    }
}

static void kl_step(fz_in *in, const char *env, char *label, size_t label_size)
{
    int kinds[2];
    fz_views vs;
    fz_decode_defects_and_views(in, K_DEFECTS, kinds, &vs, 5);
    klcase kc;
    decode_kl(in, &kc, kinds[0] == K_TARGET || kinds[1] == K_TARGET);
    const int p2 = fz_p2_of(kinds, K_SHORT_WS, K_STREAM, K_NULL_WS);
    op_inst oi;
    kl_setup(&kc, &oi);
    tbuf_set_stride_source(NULL, NULL);
    char desc[512];
    kl_describe(&kc, desc, sizeof desc);
    if (fz_creation_failed(&oi)) {
        snprintf(label, label_size, "%s (a negative stride)", desc);
    } else {
        fuzz_expect ex;
        memset(&ex, 0, sizeof ex);
        const int64_t n = kl_rows(&kc) * kl_K(&kc);
        ex.empty = n == 0;
        int invalid2 = 0;
        for (int64_t i = 0; i < n; i++) {
            invalid2 |= kl_counted(&kc, i) && !(kc.target[i] >= 0.0); /* after setup: what the library sees */
        }
        if (invalid2) {
            fuzz_note_defect(&ex, "negative or NaN target in a counted slot");
        }
        fz_expect_outputs(&oi, &ex);
        fz_op_desc op = {k_kl_slots, kc.has_indices ? 5 : 4, k_kl_slots, 4, {0}, 0};
        op.allowed[KL_VAL] = op.allowed[KL_TGT] = op.allowed[KL_DY] =
            1u << LIG_FLOAT32 | 1u << LIG_FLOAT16 | 1u << LIG_BFLOAT16;
        op.allowed[KL_LOSS] = 1u << LIG_FLOAT32;
        op.allowed[KL_IDX] = 1u << LIG_INT32 | 1u << LIG_INT64;
        for (int i = 0; i < 2; i++) {
            if (kinds[i] >= 0 && kinds[i] < FZ_D_COMMON) {
                fz_defect_common(in, kinds[i], &oi, &op, &ex);
            }
        }
        snprintf(label, label_size, "%s %s defects: %s%s", desc, env, ex.what[0] ? ex.what : "none", fz_p2_name(p2));
        suite_case sc = {.kc = &kc};
        fz_run(in, &oi, &ex, p2, invalid2, &suite_kl, &sc, label);
    }
    inst_teardown(&oi);
    kl_free(&kc);
}

/* ---- descriptors ---- */

/* a * b for a, b >= 0; 0 on overflow past INT64_MAX */
static int mul_ok(int64_t a, int64_t b, int64_t *out)
{
    if (a != 0 && b > INT64_MAX / a) {
        return 0;
    }
    *out = a * b;
    return 1;
}

static int64_t decode_extent(fz_in *in)
{
    const uint8_t b = fz_u8(in);
    if (b < 160) {
        return b % 6;
    }
    if (b < 200) {
        return (int64_t)1 << (20 + b % 43); /* 2^20 .. 2^62 */
    }
    if (b < 230) {
        return INT64_MAX - (b & 3);
    }
    return -1 - (b & 7);
}

static void descriptor(fz_in *in, char *label, size_t label_size)
{
    static unsigned char storage[8]; /* never read: a descriptor does not touch its data */
    const int dtype = (int)fz_range(in, -1, 8); /* -1 and 8: no dtype */
    const int64_t ndim = fz_range(in, -1, 9);
    const uint8_t f = fz_u8(in);
    const int with_strides = f & 1;
    void *data = f & 2 ? NULL : storage;
    int64_t shape[10], strides[10];
    for (int d = 0; d < 10; d++) {
        shape[d] = decode_extent(in);
        strides[d] = decode_extent(in);
    }
    /* the oracle, from docs/contract.md 6.2 */
    const size_t es = th_dtype_size((lig_dtype)dtype);
    int bad = es == 0 || dtype < 0 || ndim < 0 || ndim > LIG_MAX_DIMS;
    int64_t numel = 1, span = 1;
    for (int64_t d = 0; !bad && d < ndim; d++) {
        bad |= shape[d] < 0 || (with_strides && strides[d] < 0);
        /* the product of the non-zero extents must stay below 2^63, even with a zero extent */
        bad |= !bad && shape[d] > 0 && !mul_ok(span, shape[d], &span);
        numel = shape[d] == 0 ? 0 : numel;
    }
    if (!bad && numel > 0) {
        /* the furthest element must lie less than 2^60 - 1 elements past the first: a byte span
         * below 2^63 for every dtype */
        int64_t last = 0, inner = 1, term;
        for (int64_t d = ndim - 1; d >= 0 && !bad; d--) {
            const int64_t st = with_strides ? strides[d] : inner;
            bad |= !mul_ok(shape[d] - 1, st, &term) || last > INT64_MAX - term;
            last += bad ? 0 : term;
            inner *= shape[d]; /* no overflow: span did not */
        }
        bad |= last >= INT64_MAX / 8;
        bad |= data == NULL;
    }
    lig_tensor *t = lig_create_tensor(data, (lig_dtype)dtype, ndim, shape, with_strides ? strides : NULL);
    snprintf(label, label_size, "lig_create_tensor(dtype %d, ndim %lld, %s strides, data %s)%s%s", dtype,
             (long long)ndim, with_strides ? "explicit" : "NULL", data ? "set" : "NULL",
             bad ? " must fail" : " must succeed", t ? "" : ": refused");
    if (t == NULL) {
        CHECK(bad, "%s: %s", label, lig_get_last_error());
        CHECK(lig_get_last_error()[0] != '\0', "%s without a message", label);
    } else {
        CHECK(!bad, "%s: accepted", label);
        lig_destroy_tensor(t);
    }
}

/* ---- quantized forward ---- */

/* The MXFP4 cases the inputs reached (quantized forward, logits), printed at exit with
 * LIG_FUZZ_STATS=1: the format's share of the run is visible, not assumed. */
static int64_t g_mxfp4[2];

static void print_mxfp4(void)
{
    fprintf(stderr, "lig fuzz: %lld MXFP4 quantized-forward and %lld MXFP4 logits calls\n", (long long)g_mxfp4[0],
            (long long)g_mxfp4[1]);
}

static void count_mxfp4(const qspec *s, int logits_op)
{
    static int registered;
    if (s->qk != LIG_FLOAT4_E2M1X2) {
        return;
    }
    if (!registered && fz_env_flag("LIG_FUZZ_STATS")) {
        registered = 1;
        atexit(print_mxfp4);
    }
    g_mxfp4[logits_op]++;
}

static void quant(fz_in *in, const char *env, char *label, size_t label_size)
{
    qspec s;
    th_rng r = th_rng_make(fz_decode_qspec(in, &s, 1));
    count_mxfp4(&s, 0);
    qcase c;
    qcase_make(&r, &s, &c);
    char desc[400];
    qcase_describe(&c, desc, sizeof desc);
    snprintf(label, label_size, "quantized forward [%s] %s", desc, env);
    qcase_run_check(&c, "fuzz");
    qcase_free(&c);
}

/* ---- quantized logits ---- */

/* LIG_FUZZ_PERTURB: one scored logit (or, without logits, the first selected index) changed, which
 * the check must catch. */
static void logits_perturb(lcase *L)
{
    for (int64_t row = 0; row < L->rows; row++) {
        if (L->ke[row] == L->ks[row]) {
            continue;
        }
        if (L->s.with_logits) {
            const size_t at = (size_t)(row * L->rs + (L->s.compressed ? 0 : L->ks[row]) * L->cs);
            if (L->s.logits_dtype == LIG_BFLOAT16) {
                L->lbuf[at * 2 + 1] ^= 0x40; /* an exponent bit of the bf16 value: never the value itself */
            } else {
                float v;
                memcpy(&v, &L->lbuf[at * 4], sizeof v);
                v = v + 1.0f + fabsf(v); /* never v itself (finite scores) */
                memcpy(&L->lbuf[at * 4], &v, sizeof v);
            }
        } else {
            th_store_int(L->call.buf[QB_IDX], L->c.s.idx_dtype, row * L->c.p.N2 * L->c.p.K, -2);
        }
        return;
    }
}

/* The sparse logits over a logits case's inputs and ranges (its dense logits are the bitwise
 * reference, sparse_logits_case.h): block size, blocks per row, alignment, id and output dtypes,
 * strides from the input; defect (one byte in 8): a counted block id moved out of its row's blocks
 * or repeated, which phase 1 must refuse by name with nothing written. */
static int64_t g_sparse[2]; /* sparse-logits calls run, and those with a bad block id */

static void print_sparse(void)
{
    fprintf(stderr, "lig fuzz: %lld sparse-logits calls (%lld with a bad block id)\n", (long long)g_sparse[0],
            (long long)g_sparse[1]);
}

static void sparse(fz_in *in, th_rng *r, lcase *L, const char *label)
{
    static int registered;
    if (!registered && fz_env_flag("LIG_FUZZ_STATS")) {
        registered = 1;
        atexit(print_sparse);
    }
    const uint8_t a = fz_u8(in), b = fz_u8(in);
    scase S;
    memset(&S, 0, sizeof S);
    S.bk = a & 1 ? 8 << (a >> 1 & 1) : 1 + (a >> 2) % 12;
    S.M = b % 14;
    S.unaligned = (b >> 4) & 1;
    S.strided = (b >> 5) & 1;
    S.ids_dtype = a & 64 ? LIG_INT64 : LIG_INT32;
    S.out_dtype = (lig_dtype[]){LIG_FLOAT32, LIG_BFLOAT16, LIG_FLOAT16, LIG_FLOAT32}[a >> 6 & 3];
    S.short_out = L->c.p.N2 == 1 && (b >> 6) & 1;
    const int defect = (b >> 7) && (a & 32);
    scase_make(r, L, &S);
    char slabel[1500];
    snprintf(slabel, sizeof slabel, "%s; sparse: %lld blocks of %lld, unaligned %d, out %s%s", label, (long long)S.M,
             (long long)S.bk, S.unaligned, th_dtype_name(S.out_dtype), defect ? ", a bad block id" : "");
    int64_t bad_row = -1;
    for (int64_t row = 0; defect && row < S.rows && bad_row < 0; row++) {
        if (S.count[row] > 0) {
            bad_row = row;
            const int64_t v = S.count[row] > 1 && (a & 16) ? S.id[row * S.M] : L->ke[row] / S.bk + 1 + S.M;
            th_store_int(S.ids_buf, S.ids_dtype, row * S.M + S.count[row] - 1, v);
        }
    }
    g_sparse[0]++;
    g_sparse[1] += bad_row >= 0;
    if (bad_row >= 0) {
        memset(S.out_buf, 0x5a, S.out_bytes);
        uint64_t ws = 0;
        lig_executor *exec = NULL;
        const lig_status st = scase_phase1(L, &S, &ws, &exec);
        CHECK(st == LIG_ERR_PARAM_INVALID && exec == NULL &&
                  strncmp(lig_get_last_error(), "sparse_kv_block_indices:", 24) == 0,
              "%s: status %d (%s)", slabel, (int)st, lig_get_last_error());
        int untouched = 1;
        for (size_t i = 0; i < S.out_bytes; i++) untouched &= ((unsigned char *)S.out_buf)[i] == 0x5a;
        CHECK(untouched, "%s: the output was written on a failure", slabel);
    } else if (CHECK(scase_run(L, &S, 0) == LIG_SUCCESS, "%s: %s", slabel, lig_get_last_error())) {
        scase_check(L, &S, slabel);
    }
    scase_free(&S);
}

static void logits(fz_in *in, const char *env, char *label, size_t label_size)
{
    lspec s;
    lspec_default(&s);
    qspec *q = &s.q;
    const uint8_t a = fz_u8(in), b = fz_u8(in);
    fz_qspec_flags(q, a);
    q->idx_dtype = b & 1 ? LIG_INT64 : LIG_INT32;
    q->val_dtype = b & 2 ? LIG_BFLOAT16 : LIG_FLOAT32;
    q->w_dtype = b & 4 ? LIG_FLOAT16 : LIG_FLOAT32;
    s.clean = (b & 8) != 0;
    s.compressed = (b & 16) != 0;
    s.strided = (b & 32) != 0;
    s.with_topk = (b & 64) != 0;
    s.with_logits = !s.with_topk || (b & 128) != 0;
    const uint8_t c = fz_u8(in);
    s.start_null = c & 1;
    s.full = (c & 2) != 0;
    s.range_dtype = c & 4 ? LIG_INT32 : LIG_INT64;
    s.extra_cols = (c >> 3) % 3;
    s.p_empty = (c >> 5) / 8.0;
    fz_qspec_extents(in, q, 6, 200, 2, 9);
    if (((c >> 3) & 3) == 3) { /* extra_cols' value 3 (0 mod 3) chooses MXFP4 */
        fz_qspec_fp4(q, b);
    }
    count_mxfp4(q, 1);
    const int64_t workers = q->paged && !s.with_topk ? fz_range(in, 0, 9) : 0;
    th_rng r = th_rng_make(fz_u32(in));
    s.logits_dtype = fz_u8(in) & 1 ? LIG_BFLOAT16 : LIG_FLOAT32; /* DeepGEMM's logits_dtype */
    lcase L;
    lcase_make(&r, &s, &L);
    char desc[400];
    qcase_describe(&L.c, desc, sizeof desc);
    snprintf(label, label_size,
             "quantized logits [%s] clean %d compressed %d strided %d topk %d logits %d (%s) workers %lld %s", desc,
             s.clean, s.compressed, s.strided, s.with_topk, s.with_logits, th_dtype_name(s.logits_dtype),
             (long long)workers, env);
    const int ran = CHECK(lcase_run(&L, 0, NULL) == LIG_SUCCESS, "%s: %s", label, lig_get_last_error());
    if (ran && fz_perturb()) {
        logits_perturb(&L);
    }
    if (ran && lcase_check(&L, "fuzz") && workers > 0) {
        size_t n0, n1;
        unsigned char *plain = lcase_output_bytes(&L, &n0);
        int32_t mem[2 * 9 + 2];
        const int64_t shape[2] = {workers + 1, 2};
        lig_tensor *sched = lig_create_tensor(mem, LIG_INT32, 2, shape, NULL);
        CHECK(lig_quant_logits_schedule(L.key_end, q->block_size, workers, sched) == LIG_SUCCESS, "%s: schedule: %s",
              label, lig_get_last_error());
        const lig_status st = lcase_run(&L, 0, sched);
        unsigned char *with = lcase_output_bytes(&L, &n1);
        CHECK(st == LIG_SUCCESS && n0 == n1 && memcmp(plain, with, n0) == 0, "%s: a schedule wrote other bytes (%s)", label,
              lig_get_last_error());
        lig_destroy_tensor(sched);
        free(plain);
        free(with);
    }
    /* the sparse logits' bitwise reference is the dense FLOAT32 logit (a BFLOAT16 one has lost bits) */
    if (ran && s.with_logits && s.clean && !s.compressed && s.logits_dtype == LIG_FLOAT32 && !fz_perturb()) {
        sparse(in, &r, &L, label);
    }
    CHECK(lcase_inputs_unchanged(&L), "%s: an input changed", label);
    lcase_free(&L);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in;
    const int before = fz_begin(&in, data, size);
    const uint8_t op = fz_u8(&in) % 7;
    char env[96], label[1400];
    if (op == 2) {
        descriptor(&in, label, sizeof label);
    } else {
        fz_decode_env(&in, env, sizeof env);
        if (op == 0) {
            forward(&in, env, label, sizeof label);
        } else if (op == 1) {
            kl_step(&in, env, label, sizeof label);
        } else if (op == 3) {
            paged(&in, env, label, sizeof label);
        } else if (op == 5) {
            fz_kl_loss(&in, env, label, sizeof label);
        } else if (op == 6) {
            logits(&in, env, label, sizeof label);
        } else {
            quant(&in, env, label, sizeof label);
        }
        fz_reset_env();
    }
    fz_verdict(before, label);
    return 0;
}

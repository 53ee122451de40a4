#include "quant_case.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error_bounds.h"
#include "float_formats.h"
#include "framework.h"
#include "problem_case.h"
#include "reference/indexer_fwd_ref.h"
#include "tensor_buffers.h"

/* OCP E4M3FN, from its definition (test_fp8.c checks the library's decode against the same rule). */
static double fp8_value(unsigned c)
{
    const unsigned e = (c >> 3) & 15u, m = c & 7u;
    if (e == 15u && m == 7u) {
        return NAN;
    }
    const double v = e == 0 ? ldexp((double)m, -9) : ldexp((double)(8u + m), (int)e - 10);
    return (c & 0x80u) ? -v : v;
}

/* OCP E2M1 (one nibble), from its definition: S.EE.M, bias 1, E = 0 is M * 0.5. */
static double e2m1_value(unsigned c)
{
    const unsigned e = (c >> 1) & 3u, m = c & 1u;
    const double v = e == 0 ? 0.5 * m : ldexp(2.0 + m, (int)e - 2);
    return (c & 8u) ? -v : v;
}

static double code_value(lig_dtype dt, uint8_t c)
{
    return dt == LIG_FLOAT8_E4M3FN ? fp8_value(c) : dt == LIG_FLOAT4_E2M1X2 ? e2m1_value(c & 15u) : (double)(int8_t)c;
}

static int is_fp4(const qspec *s)
{
    return s->qk == LIG_FLOAT4_E2M1X2;
}

static int64_t fp4_blocks(int64_t D)
{
    return (D + 31) / 32;
}

/* e8m0 byte E: 2^(E-127), 0xFF NaN. */
static double e8m0_value(uint8_t e)
{
    return e == 0xffu ? NAN : ldexp(1.0, (int)e - 127);
}

/* A byte that is NaN in FP8 and an absurd value in INT8: what memory nobody may read holds. */
#define QC_POISON_CODE 0x7f

void qspec_dims(qspec *s, int64_t S1, int64_t S2, int64_t N2, int64_t G, int64_t D, int64_t K)
{
    s->S1 = S1;
    s->S2 = S2;
    s->N2 = N2;
    s->G = G;
    s->D = D;
    s->K = K;
}

/* qspec_default's spec: every field not named is 0. */
static const qspec k_qspec_default = {
    .layout = REF_BSND,
    .qk = LIG_FLOAT8_E4M3FN,
    .w_dtype = LIG_FLOAT32,
    .sq_dtype = LIG_FLOAT32,
    .sk_dtype = LIG_FLOAT32,
    .idx_dtype = LIG_INT32,
    .val_dtype = LIG_FLOAT32,
    .has_sq = 1,
    .with_values = 1,
    .B = 2,
    .S1 = 5,
    .S2 = 9,
    .N2 = 1,
    .G = 4,
    .D = 16,
    .K = 4,
    .sparse_mode = 3,
    .pre_tokens = INT64_MAX,
    .next_tokens = INT64_MAX,
    .block_size = 4,
    .p_dup_key = 0.1,
};

void qspec_default(qspec *s)
{
    *s = k_qspec_default;
}

static double scale_value(th_rng *r, lig_dtype dt)
{
    /* log-uniform in [2^-12, 2^-8], now and then negative: DeepSeek's scales are amax / 448 */
    const double v = ldexp(1.0 + th_rng_unit(r), -(int)th_rng_range(r, 9, 12));
    return th_round_dtype(dt, th_rng_chance(r, 0.05) ? -v : v);
}

static uint8_t draw_code(th_rng *r, const qspec *s)
{
    if (is_fp4(s)) {
        return (uint8_t)th_rng_range(r, 0, 15);
    }
    if (s->qk == LIG_INT8) {
        return s->int8_extreme == 1 ? 0x80 : s->int8_extreme == 2 ? 0x7f : (uint8_t)th_rng_range(r, 0, 255);
    }
    const uint8_t sign = th_rng_chance(r, 0.5) ? 0x80 : 0;
    if (s->p_nan_code > 0 && th_rng_chance(r, s->p_nan_code)) {
        return sign | 0x7f;
    }
    return sign | (uint8_t)th_rng_range(r, 0, 0x7e);
}

/* First logical key row of batch b. */
static int64_t key_base(const qcase *c, int64_t b)
{
    if (c->p.layout == REF_BSND) {
        return b * c->p.S2;
    }
    return b == 0 ? 0 : c->p.seq_k[b - 1];
}

/* MXFP4: an e8m0 byte per (row, head, block of 32) -- 0xFF (NaN) where nothing may be read, and,
 * at the rate of NaN codes, among the valid data -- folded into the logical values, whose sq and
 * sk become 1 (the reference then sees the exact MXFP4 products). Duplicate keys copy their
 * source's bytes. */
static void fp4_block_scales(th_rng *r, qcase *c)
{
    const qspec *s = &c->s;
    const int64_t N1 = c->p.N1, N2 = c->p.N2, D = c->p.D, nb = fp4_blocks(D);
    c->sqe = th_xmalloc((size_t)(c->rows_q * N1 * nb + 1));
    c->ske = th_xmalloc((size_t)(c->rows_k * N2 * nb + 1));
    for (int64_t i = 0; i < c->rows_q * N1; i++) {
        for (int64_t j = 0; j < nb; j++) {
            const int nan = isnan(c->sq[i]) || (s->p_nan_code > 0 && th_rng_chance(r, s->p_nan_code));
            c->sqe[i * nb + j] = nan ? 0xffu : (uint8_t)th_rng_range(r, 118, 134);
        }
        c->sq[i] = isnan(c->sq[i]) ? NAN : 1.0;
    }
    for (int64_t row = 0; row < c->rows_k; row++) {
        for (int64_t i = row * N2; i < (row + 1) * N2; i++) {
            for (int64_t j = 0; j < nb; j++) {
                const int nan = isnan(c->sk[i]) || (s->p_nan_code > 0 && th_rng_chance(r, s->p_nan_code));
                c->ske[i * nb + j] = c->dup_of[row] >= 0 ? c->ske[(c->dup_of[row] * N2 + i - row * N2) * nb + j]
                                     : nan               ? 0xffu
                                                         : (uint8_t)th_rng_range(r, 118, 134);
            }
            c->sk[i] = isnan(c->sk[i]) ? NAN : 1.0;
        }
    }
    for (int64_t i = 0; i < c->rows_q * N1 * D; i++) {
        c->q[i] *= e8m0_value(c->sqe[(i / D) * nb + (i % D) / 32]);
    }
    for (int64_t i = 0; i < c->rows_k * N2 * D; i++) {
        c->k[i] *= e8m0_value(c->ske[(i / D) * nb + (i % D) / 32]);
    }
}

void qcase_make(th_rng *r, const qspec *s, qcase *c)
{
    memset(c, 0, sizeof *c);
    c->s = *s;
    ref_problem *p = &c->p;
    const int64_t B = s->B;
    p->layout = s->layout;
    p->B = B;
    p->N2 = s->N2;
    p->N1 = s->N2 * s->G;
    p->D = s->D;
    p->K = s->K;
    p->sparse_mode = s->sparse_mode;
    p->pre_tokens = s->pre_tokens;
    p->next_tokens = s->next_tokens;
    int64_t lq[QC_MAX_B];
    for (int64_t b = 0; b < B; b++) {
        lq[b] = s->layout == REF_TND || s->lengths ? th_rng_range(r, 0, s->S1) : s->S1;
        c->lk[b] = s->layout == REF_TND || s->lengths || s->paged ? th_rng_range(r, 0, s->S2) : s->S2;
    }
    if (s->paged) {
        c->max_blocks = s->block_size > 0 ? (s->S2 + s->block_size - 1) / s->block_size + th_rng_range(r, 0, 1) : 1;
    }
    if (s->layout == REF_BSND) {
        p->S1 = s->S1;
        p->S2 = s->paged ? c->max_blocks * s->block_size : s->S2;
        for (int64_t b = 0; b < B; b++) {
            c->seq_q[b] = lq[b];
            c->seq_k[b] = c->lk[b];
        }
        p->seq_q = s->lengths ? c->seq_q : NULL;
        p->seq_k = s->lengths || s->paged ? c->seq_k : NULL;
    } else {
        int64_t eq = 0, ek = 0;
        for (int64_t b = 0; b < B; b++) {
            c->seq_q[b] = eq += lq[b];
            c->seq_k[b] = ek += c->lk[b];
        }
        p->S1 = eq + th_rng_range(r, 0, 2); /* rows past the last end: invalid */
        p->S2 = ek + (s->paged ? 0 : th_rng_range(r, 0, 2));
        p->seq_q = c->seq_q;
        p->seq_k = c->seq_k;
    }
    c->rows_q = ref_rows_q(p);
    c->rows_k = ref_rows_k(p);
    const int64_t N1 = p->N1, N2 = p->N2, D = p->D;
    const size_t nq = (size_t)(c->rows_q * N1 * D), nk = (size_t)(c->rows_k * N2 * D);
    c->qc = th_xmalloc(nq + 1);
    c->kc = th_xmalloc(nk + 1);
    c->q = th_xmalloc((nq + 1) * sizeof(double));
    c->k = th_xmalloc((nk + 1) * sizeof(double));
    c->w = th_xmalloc((size_t)(c->rows_q * N1 + 1) * sizeof(double));
    c->sq = th_xmalloc((size_t)(c->rows_q * N1 + 1) * sizeof(double));
    c->sk = th_xmalloc((size_t)(c->rows_k * N2 + 1) * sizeof(double));
    c->dup_of = th_xmalloc((size_t)(c->rows_k + 1) * sizeof(int64_t));
    for (int64_t row = 0; row < c->rows_q; row++) {
        ref_row info;
        ref_row_info(p, row, &info);
        for (int64_t h = 0; h < N1; h++) {
            for (int64_t d = 0; d < D; d++) {
                c->qc[(row * N1 + h) * D + d] = info.valid ? draw_code(r, s) : QC_POISON_CODE;
            }
            const int one = s->int8_extreme;
            c->w[row * N1 + h] = !info.valid ? NAN : one ? 1.0 : th_rng_chance(r, 0.1) ? 0.0
                                 : th_round_dtype(s->w_dtype, 2.0 * th_rng_unit(r) - 1.0);
            c->sq[row * N1 + h] = !info.valid ? NAN : one ? 1.0 : scale_value(r, s->sq_dtype);
        }
    }
    for (int64_t b = 0; b < B; b++) {
        const int64_t base = key_base(c, b);
        const int64_t extent = s->layout == REF_BSND ? p->S2 : c->lk[b];
        for (int64_t sidx = 0; sidx < extent; sidx++) {
            const int64_t row = base + sidx;
            c->dup_of[row] = -1;
            const int exists = sidx < c->lk[b];
            if (exists && sidx > 0 && th_rng_chance(r, s->p_dup_key)) {
                const int64_t from = base + th_rng_range(r, 0, sidx - 1);
                memcpy(c->kc + row * N2 * D, c->kc + from * N2 * D, (size_t)(N2 * D));
                memcpy(c->sk + row * N2, c->sk + from * N2, (size_t)N2 * sizeof(double));
                c->dup_of[row] = from;
                continue;
            }
            for (int64_t i = 0; i < N2 * D; i++) {
                c->kc[row * N2 * D + i] = exists ? draw_code(r, s) : QC_POISON_CODE;
            }
            for (int64_t g = 0; g < N2; g++) {
                c->sk[row * N2 + g] = !exists ? NAN : s->int8_extreme ? 1.0 : scale_value(r, s->sk_dtype);
            }
        }
    }
    /* TND key rows past the last end exist in the tensor only */
    const int64_t past = s->layout == REF_TND ? (B > 0 ? c->seq_k[B - 1] : 0) : c->rows_k;
    for (int64_t row = past; row < c->rows_k; row++) {
        c->dup_of[row] = -1;
        memset(c->kc + row * N2 * D, QC_POISON_CODE, (size_t)(N2 * D));
        for (int64_t g = 0; g < N2; g++) {
            c->sk[row * N2 + g] = NAN;
        }
    }
    for (size_t i = 0; i < nq; i++) {
        c->q[i] = code_value(s->qk, c->qc[i]);
    }
    for (size_t i = 0; i < nk; i++) {
        c->k[i] = code_value(s->qk, c->kc[i]);
    }
    if (is_fp4(s)) {
        fp4_block_scales(r, c);
    }
    if (s->paged) {
        int64_t used = 0;
        for (int64_t b = 0; b < B; b++) {
            used += s->block_size > 0 ? (c->lk[b] + s->block_size - 1) / s->block_size : 0;
        }
        c->num_blocks = used + 2;
        int64_t *perm = th_xmalloc((size_t)c->num_blocks * sizeof(int64_t));
        for (int64_t i = 0; i < c->num_blocks; i++) {
            perm[i] = i;
        }
        for (int64_t i = c->num_blocks - 1; i > 0; i--) {
            const int64_t j = th_rng_range(r, 0, i), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        c->table = th_xmalloc((size_t)(B * c->max_blocks + 1) * sizeof(int64_t));
        int64_t next = 0;
        for (int64_t b = 0; b < B; b++) {
            const int64_t nb = s->block_size > 0 ? (c->lk[b] + s->block_size - 1) / s->block_size : 0;
            for (int64_t j = 0; j < c->max_blocks; j++) {
                /* entries past the batch's blocks are never read: garbage */
                c->table[b * c->max_blocks + j] = j < nb ? perm[next++] : (j % 2 ? -7 : c->num_blocks + 5);
            }
        }
        free(perm);
    }
}

void qcase_free(qcase *c)
{
    void *const owned[] = {c->qc, c->kc, c->q, c->k, c->w, c->sq, c->sk, c->dup_of, c->table, c->sqe, c->ske};
    th_free_all(owned, sizeof owned / sizeof owned[0]);
    memset(c, 0, sizeof *c);
}

void qcase_describe(const qcase *c, char *buf, size_t size)
{
    const qspec *s = &c->s;
    snprintf(buf, size,
             "%s%s %s B=%" PRId64 " S1=%" PRId64 " S2=%" PRId64 " N1=%" PRId64 " N2=%" PRId64 " D=%" PRId64
             " K=%" PRId64 " mode=%" PRId64 " pre=%" PRId64 " next=%" PRId64 " w=%s sq=%s sk=%s idx=%s val=%s%s%s",
             s->layout == REF_BSND ? "BSND" : "TND", s->paged ? "+PA_BSND" : "", th_dtype_name(s->qk), c->p.B, c->p.S1,
             c->p.S2, c->p.N1, c->p.N2, c->p.D, c->p.K, c->p.sparse_mode, c->p.pre_tokens, c->p.next_tokens,
             th_dtype_name(s->w_dtype), s->has_sq ? th_dtype_name(s->sq_dtype) : "none", th_dtype_name(s->sk_dtype),
             th_dtype_name(s->idx_dtype), s->with_values ? th_dtype_name(s->val_dtype) : "none", s->pad ? " padded" : "",
             s->short_form ? " short" : "");
}

/* ---- materialization ---- */

static size_t esize(lig_dtype dt)
{
    return dt == LIG_FLOAT8_E4M3FN || dt == LIG_INT8 || dt == LIG_UINT8 || dt == LIG_FLOAT4_E2M1X2 ? 1 : th_dtype_size(dt);
}

/* A buffer of `bytes` (+ a guard of 64 bytes) filled with `fill`. */
static void *make_buf(qcall *call, int slot, size_t bytes, unsigned char fill)
{
    call->bytes[slot] = bytes + 64;
    call->buf[slot] = th_xmalloc(call->bytes[slot]);
    memset(call->buf[slot], fill, call->bytes[slot]);
    return call->buf[slot];
}

static void snapshot(qcall *call)
{
    for (int i = 0; i < 10; i++) {
        if (call->buf[i] != NULL) {
            call->snapshot[i] = th_xmalloc(call->bytes[i]);
            memcpy(call->snapshot[i], call->buf[i], call->bytes[i]);
        }
    }
}

static lig_tensor *lengths_tensor(qcall *call, int slot, const int64_t *v, int64_t B, lig_dtype dt)
{
    int64_t *mem = make_buf(call, slot, (size_t)(B > 0 ? B : 1) * 8, 0);
    for (int64_t b = 0; b < B; b++) {
        th_store_int(mem, dt, b, v[b]);
    }
    return lig_create_tensor(mem, dt, 1, &B, NULL);
}

/* MXFP4: a head's D codes packed two a byte, element 2j in the low nibble. */
static void pack_fp4(uint8_t *dst, const uint8_t *codes, int64_t D)
{
    for (int64_t j = 0; j < D / 2; j++) {
        dst[j] = (uint8_t)((codes[2 * j] & 15u) | (codes[2 * j + 1] & 15u) << 4);
    }
}

/* MXFP4: the elements of one head's block scales: UINT8 bytes, or INT32 words of four. */
static int64_t fp4_scale_per(lig_dtype dt, int64_t D)
{
    return dt == LIG_INT32 ? (fp4_blocks(D) + 3) / 4 : fp4_blocks(D);
}

/* MXFP4: head i's block bytes into element i * per of buf (INT32: block 4w + m in bits 8m.. of
 * word w, built as a value; the bytes past the last block 127). */
static void store_fp4_scales(char *buf, lig_dtype dt, int64_t i, const uint8_t *bytes, int64_t D)
{
    const int64_t nb = fp4_blocks(D), per = fp4_scale_per(dt, D);
    if (dt != LIG_INT32) {
        memcpy(buf + i * per, bytes, (size_t)nb);
        return;
    }
    for (int64_t w = 0; w < per; w++) {
        uint32_t word = 0;
        for (int64_t m = 0; m < 4; m++) {
            word |= (uint32_t)(4 * w + m < nb ? bytes[4 * w + m] : 127u) << (8 * m);
        }
        memcpy(buf + (i * per + w) * 4, &word, 4);
    }
}

/* MXFP4 query and keys: the packed codes (padded: three poison bytes a head) and both block-scale
 * tensors, each [.., per] after the shape without D. */
static void make_fp4_operands(const qcase *c, qcall *call)
{
    const qspec *s = &c->s;
    const ref_problem *p = &c->p;
    const int tnd = p->layout == REF_TND;
    const int64_t B = p->B, N1 = p->N1, N2 = p->N2, D = p->D, nb = fp4_blocks(D), half = D / 2;
    const int64_t Hp = s->pad ? half + 3 : half;
    const int64_t pq = fp4_scale_per(s->sq_dtype, D), pk = fp4_scale_per(s->sk_dtype, D);
    const size_t eq = esize(s->sq_dtype), ek = esize(s->sk_dtype);
    uint8_t *m = make_buf(call, QB_Q, (size_t)(c->rows_q * N1 * Hp), QC_POISON_CODE);
    for (int64_t i = 0; i < c->rows_q * N1; i++) {
        pack_fp4(m + i * Hp, c->qc + i * D, D);
    }
    const int64_t qshape[4] = {B, p->S1, N1, half}, qst[4] = {p->S1 * N1 * Hp, N1 * Hp, Hp, 1};
    call->query = tnd ? lig_create_tensor(m, s->qk, 3, qshape + 1, qst + 1) : lig_create_tensor(m, s->qk, 4, qshape, qst);
    char *sq = make_buf(call, QB_SQ, (size_t)(c->rows_q * N1 * pq) * eq, 0xff);
    for (int64_t i = 0; i < c->rows_q * N1; i++) {
        store_fp4_scales(sq, s->sq_dtype, i, c->sqe + i * nb, D);
    }
    const int64_t sqshape[4] = {B, p->S1, N1, pq};
    call->sq = tnd ? lig_create_tensor(sq, s->sq_dtype, 3, sqshape + 1, NULL) : lig_create_tensor(sq, s->sq_dtype, 4, sqshape, NULL);
    if (!s->paged) {
        uint8_t *k = make_buf(call, QB_K, (size_t)(c->rows_k * N2 * Hp), QC_POISON_CODE);
        char *sk = make_buf(call, QB_SK, (size_t)(c->rows_k * N2 * pk) * ek, 0xff);
        for (int64_t i = 0; i < c->rows_k * N2; i++) {
            pack_fp4(k + i * Hp, c->kc + i * D, D);
            store_fp4_scales(sk, s->sk_dtype, i, c->ske + i * nb, D);
        }
        const int64_t shape[4] = {B, p->S2, N2, half}, st[4] = {p->S2 * N2 * Hp, N2 * Hp, Hp, 1};
        const int64_t skshape[4] = {B, p->S2, N2, pk};
        call->key = tnd ? lig_create_tensor(k, s->qk, 3, shape + 1, st + 1) : lig_create_tensor(k, s->qk, 4, shape, st);
        call->sk = tnd ? lig_create_tensor(sk, s->sk_dtype, 3, skshape + 1, NULL)
                       : lig_create_tensor(sk, s->sk_dtype, 4, skshape, NULL);
        return;
    }
    const int64_t bs = s->block_size, nbk = c->num_blocks;
    uint8_t *k = make_buf(call, QB_K, (size_t)(nbk * bs * N2 * Hp), QC_POISON_CODE);
    char *sk = make_buf(call, QB_SK, (size_t)(nbk * bs * N2 * pk) * ek, 0xff); /* rows no batch owns: NaN */
    for (int64_t b = 0; b < B; b++) {
        for (int64_t sidx = 0; sidx < c->lk[b]; sidx++) {
            const int64_t at = c->table[b * c->max_blocks + sidx / bs] * bs + sidx % bs, row = key_base(c, b) + sidx;
            for (int64_t g = 0; g < N2; g++) {
                pack_fp4(k + (at * N2 + g) * Hp, c->kc + (row * N2 + g) * D, D);
                store_fp4_scales(sk, s->sk_dtype, at * N2 + g, c->ske + (row * N2 + g) * nb, D);
            }
        }
    }
    const int64_t shape[4] = {nbk, bs, N2, half}, st[4] = {bs * N2 * Hp, N2 * Hp, Hp, 1}, skshape[4] = {nbk, bs, N2, pk};
    call->key = lig_create_tensor(k, s->qk, 4, shape, st);
    call->sk = lig_create_tensor(sk, s->sk_dtype, 4, skshape, NULL);
}

void qcall_make(const qcase *c, qcall *call)
{
    memset(call, 0, sizeof *call);
    const qspec *s = &c->s;
    const ref_problem *p = &c->p;
    const int tnd = p->layout == REF_TND;
    const int64_t B = p->B, N1 = p->N1, N2 = p->N2, D = p->D, K = p->K;
    const int64_t Dp = s->pad ? D + 3 : D; /* padded head stride: three poison bytes per head */
    if (is_fp4(s)) {
        make_fp4_operands(c, call);
    }
    /* query */
    if (!is_fp4(s)) {
        uint8_t *m = make_buf(call, QB_Q, (size_t)(c->rows_q * N1 * Dp), QC_POISON_CODE);
        for (int64_t row = 0; row < c->rows_q; row++)
            for (int64_t h = 0; h < N1; h++) memcpy(m + (row * N1 + h) * Dp, c->qc + (row * N1 + h) * D, (size_t)D);
        const int64_t shape[4] = {B, p->S1, N1, D}, st[4] = {p->S1 * N1 * Dp, N1 * Dp, Dp, 1};
        call->query = tnd ? lig_create_tensor(m, s->qk, 3, shape + 1, st + 1) : lig_create_tensor(m, s->qk, 4, shape, st);
    }
    /* keys and their scales */
    if (is_fp4(s)) {
        /* made above */
    } else if (!s->paged) {
        uint8_t *m = make_buf(call, QB_K, (size_t)(c->rows_k * N2 * Dp), QC_POISON_CODE);
        for (int64_t row = 0; row < c->rows_k; row++)
            for (int64_t g = 0; g < N2; g++) memcpy(m + (row * N2 + g) * Dp, c->kc + (row * N2 + g) * D, (size_t)D);
        const int64_t shape[4] = {B, p->S2, N2, D}, st[4] = {p->S2 * N2 * Dp, N2 * Dp, Dp, 1};
        call->key = tnd ? lig_create_tensor(m, s->qk, 3, shape + 1, st + 1) : lig_create_tensor(m, s->qk, 4, shape, st);
        char *ks = make_buf(call, QB_SK, (size_t)(c->rows_k * N2) * esize(s->sk_dtype), 0xff);
        for (int64_t i = 0; i < c->rows_k * N2; i++) {
            th_store(ks, s->sk_dtype, i, c->sk[i]);
        }
        call->sk = tnd ? lig_create_tensor(ks, s->sk_dtype, 2, shape + 1, NULL) : lig_create_tensor(ks, s->sk_dtype, 3, shape, NULL);
    } else {
        const int64_t bs = s->block_size, nbk = c->num_blocks;
        uint8_t *m = make_buf(call, QB_K, (size_t)(nbk * bs * N2 * Dp), QC_POISON_CODE);
        char *ks = make_buf(call, QB_SK, (size_t)(nbk * bs * N2) * esize(s->sk_dtype), 0);
        for (int64_t i = 0; i < nbk * bs * N2; i++) {
            th_store(ks, s->sk_dtype, i, NAN); /* rows no batch owns */
        }
        for (int64_t b = 0; b < B; b++) {
            for (int64_t sidx = 0; sidx < c->lk[b]; sidx++) {
                const int64_t blk = c->table[b * c->max_blocks + sidx / bs], at = blk * bs + sidx % bs;
                const int64_t row = key_base(c, b) + sidx;
                for (int64_t g = 0; g < N2; g++) {
                    memcpy(m + (at * N2 + g) * Dp, c->kc + (row * N2 + g) * D, (size_t)D);
                    th_store(ks, s->sk_dtype, at * N2 + g, c->sk[row * N2 + g]);
                }
            }
        }
        const int64_t shape[4] = {nbk, bs, N2, D}, st[4] = {bs * N2 * Dp, N2 * Dp, Dp, 1};
        call->key = lig_create_tensor(m, s->qk, 4, shape, st);
        call->sk = lig_create_tensor(ks, s->sk_dtype, 3, shape, NULL);
    }
    if (s->paged) {
        int64_t *t = make_buf(call, QB_TABLE, (size_t)(B * c->max_blocks) * 8, 0);
        for (int64_t i = 0; i < B * c->max_blocks; i++) {
            th_store_int(t, s->idx_dtype, i, c->table[i]);
        }
        const int64_t tshape[2] = {B, c->max_blocks};
        call->table = lig_create_tensor(t, s->idx_dtype, 2, tshape, NULL);
    }
    /* weights and query scales */
    {
        const int64_t shape[3] = {B, p->S1, N1};
        char *w = make_buf(call, QB_W, (size_t)(c->rows_q * N1) * esize(s->w_dtype), 0);
        for (int64_t i = 0; i < c->rows_q * N1; i++) {
            th_store(w, s->w_dtype, i, c->w[i]);
        }
        call->weights = tnd ? lig_create_tensor(w, s->w_dtype, 2, shape + 1, NULL) : lig_create_tensor(w, s->w_dtype, 3, shape, NULL);
        if (s->has_sq && !is_fp4(s)) {
            char *q = make_buf(call, QB_SQ, (size_t)(c->rows_q * N1) * esize(s->sq_dtype), 0);
            for (int64_t i = 0; i < c->rows_q * N1; i++) {
                th_store(q, s->sq_dtype, i, c->sq[i]);
            }
            call->sq = tnd ? lig_create_tensor(q, s->sq_dtype, 2, shape + 1, NULL) : lig_create_tensor(q, s->sq_dtype, 3, shape, NULL);
        }
    }
    /* lengths: TND ends; paged per-batch key lengths; BSND optional */
    if (tnd) {
        call->aq = lengths_tensor(call, QB_AQ, c->seq_q, B, s->idx_dtype);
        call->ak = lengths_tensor(call, QB_AK, s->paged ? c->lk : c->seq_k, B, s->idx_dtype);
    } else {
        if (s->lengths) {
            call->aq = lengths_tensor(call, QB_AQ, c->seq_q, B, s->idx_dtype);
        }
        if (s->lengths || s->paged) {
            call->ak = lengths_tensor(call, QB_AK, c->lk, B, s->idx_dtype);
        }
    }
    /* outputs */
    {
        const int short_form = s->short_form && N2 == 1;
        int64_t shape[4], n = 0;
        if (!tnd) {
            shape[n++] = B;
        }
        shape[n++] = p->S1;
        if (!short_form) {
            shape[n++] = N2;
        }
        shape[n++] = K;
        const size_t slots = (size_t)(c->rows_q * N2 * K);
        call->idx = lig_create_tensor(make_buf(call, QB_IDX, slots * esize(s->idx_dtype), 0xcd), s->idx_dtype, n, shape,
                                      NULL);
        if (s->with_values) {
            call->val = lig_create_tensor(make_buf(call, QB_VAL, slots * esize(s->val_dtype), 0xcd), s->val_dtype, n,
                                          shape, NULL);
        }
    }
    call->layout_query = tnd ? "TND" : "BSND";
    call->layout_key = s->paged ? "PA_BSND" : call->layout_query;
    call->sparse_count = K;
    call->sparse_mode = p->sparse_mode;
    call->pre_tokens = p->pre_tokens;
    call->next_tokens = p->next_tokens;
    lig_tensor *const made[10] = {call->query, call->key, call->weights, call->sq, call->sk, call->aq, call->ak,
                                  call->table, call->idx, call->val};
    memcpy(call->own, made, sizeof made);
    snapshot(call);
}

lig_tensor *qcall_adopt(qcall *call, lig_tensor *t)
{
    if (call->n_extra < 8) {
        call->extra[call->n_extra++] = t;
    }
    return t;
}

void qcall_free(qcall *call)
{
    for (int i = 0; i < 10; i++) {
        lig_destroy_tensor(call->own[i]);
    }
    for (int j = 0; j < call->n_extra; j++) {
        lig_destroy_tensor(call->extra[j]);
    }
    for (int i = 0; i < 10; i++) {
        free(call->buf[i]);
        free(call->snapshot[i]);
    }
    memset(call, 0, sizeof *call);
}

lig_status qcall_phase1(qcall *call, uint64_t *ws, lig_executor **exec)
{
    return lig_quant_indexer_get_workspace_size(
        call->query, call->key, call->weights, call->sq, call->sk, call->aq, call->ak, call->table,
        call->query_quant_mode, call->key_quant_mode, call->layout_query, call->layout_key, call->sparse_count,
        call->sparse_mode, call->pre_tokens, call->next_tokens, call->idx, call->val, ws, exec);
}

int qcall_unchanged(const qcall *call)
{
    for (int i = 0; i < 10; i++) {
        if (call->buf[i] != NULL && memcmp(call->buf[i], call->snapshot[i], call->bytes[i]) != 0) {
            return 0;
        }
    }
    return 1;
}

lig_status qcase_run(const qcase *c, int threads, int64_t *idx, double *val, int *inputs_ok, unsigned char **raw,
                     size_t *raw_bytes)
{
    qcall call;
    qcall_make(c, &call);
    if (!CHECK(call.query && call.key && call.weights && call.sk && call.idx, "qcase_run: the case's tensors: %s",
               lig_get_last_error())) {
        qcall_free(&call);
        *inputs_ok = 0;
        return LIG_ERR_INNER;
    }
    if (threads > 0) { /* else the count in effect (a fuzz input's, say) */
        lig_set_num_threads(threads);
    }
    uint64_t ws = 0;
    lig_executor *exec = NULL;
    lig_status st = qcall_phase1(&call, &ws, &exec);
    if (threads > 0) {
        lig_set_num_threads(0);
    }
    if (st == LIG_SUCCESS) {
        void *mem = ws ? th_xmalloc((size_t)ws) : NULL;
        if (mem) {
            memset(mem, 0xab, (size_t)ws);
        }
        st = lig_quant_indexer(mem, ws, exec, NULL);
        free(mem);
    }
    /* inputs unchanged; outputs unchanged past their views (the guards) */
    int ok = 1;
    for (int i = 0; i < 10; i++) {
        if (call.buf[i] == NULL) {
            continue;
        }
        const size_t n = i == QB_IDX || i == QB_VAL ? call.bytes[i] - 64 : 0;
        ok &= memcmp((char *)call.buf[i] + n, (char *)call.snapshot[i] + n, call.bytes[i] - n) == 0;
    }
    *inputs_ok = ok;
    const int64_t slots = c->rows_q * c->p.N2 * c->p.K;
    if (st == LIG_SUCCESS) {
        for (int64_t i = 0; i < slots; i++) {
            idx[i] = th_load_int(call.buf[QB_IDX], c->s.idx_dtype, i);
            if (val != NULL) {
                val[i] = th_load(call.buf[QB_VAL], c->s.val_dtype, i);
            }
        }
    }
    if (raw != NULL) {
        const size_t a = call.bytes[QB_IDX] - 64, b = call.buf[QB_VAL] ? call.bytes[QB_VAL] - 64 : 0;
        *raw = th_xmalloc(a + b + 1);
        memcpy(*raw, call.buf[QB_IDX], a);
        if (b) {
            memcpy(*raw + a, call.buf[QB_VAL], b);
        }
        *raw_bytes = a + b;
    }
    qcall_free(&call);
    return st;
}

/* ---- checks ---- */

static qcheck_stats g_qstats;

void qcheck_stats_reset(void)
{
    memset(&g_qstats, 0, sizeof g_qstats);
}

qcheck_stats qcheck_stats_get(void)
{
    return g_qstats;
}

void qcheck_stats_note(const char *what)
{
    const qcheck_stats s = g_qstats;
    th_note("%s: %" PRId64 " cases, %" PRId64 " units (%" PRId64 " compared exactly, %" PRId64 " up to the bound), %" PRId64
            " selected, %" PRId64 " padded, %" PRId64 " exact ties between twin keys",
            what, s.cases, s.units, s.exact_units, s.tolerant_units, s.selected, s.padded, s.twins);
    CHECK(s.cases == 0 || s.selected > 0, "%s selected nothing at all", what);
}

/* Keys a and b of the unit's batch hold the same codes and scale for head g: the library scores
 * them bitwise alike. */
static int twins(const qcase *c, int64_t base, int64_t g, int64_t a, int64_t b)
{
    const int64_t D = c->p.D, N2 = c->p.N2, ra = base + a, rb = base + b;
    const double sa = c->sk[ra * N2 + g], sb = c->sk[rb * N2 + g];
    return memcmp(c->kc + (ra * N2 + g) * D, c->kc + (rb * N2 + g) * D, (size_t)D) == 0 && sa == sb;
}

typedef struct ranked {
    double score, tol;
    int64_t key;
} ranked;

static int cmp_ranked(const void *x, const void *y)
{
    const ranked *a = x, *b = y;
    return ref_fwd_order(a->score, a->key, b->score, b->key);
}

int qcase_check(const qcase *c, const int64_t *idx, const double *val, const char *label)
{
    const ref_problem *p = &c->p;
    const int64_t K = p->K, G = p->N2 ? p->N1 / p->N2 : 0;
    /* every elementary product w sq sk q_d k_d goes through at most D - 1 additions in the dot (FP8;
     * INT8: one rounding of the exact integer), the two scale products, the weight product and
     * G - 1 additions over the heads */
    const double steps = (double)(p->D + G + 4);
    const lig_dtype vd = c->s.val_dtype;
    const ref_quant_data x = {c->q, c->k, c->w, c->s.has_sq ? c->sq : NULL, c->sk};
    g_qstats.cases++;
    int64_t bad = 0;
    char why[400];
    for (int64_t row = 0; row < c->rows_q; row++) {
        ref_row info;
        ref_row_info(p, row, &info);
        for (int64_t g = 0; g < p->N2; g++) {
            const int64_t *li = idx + (row * p->N2 + g) * K;
            const double *lv = val ? val + (row * p->N2 + g) * K : NULL;
            int ok = 1;
            why[0] = 0;
            int64_t lo = 0, hi = -1;
            if (info.valid) {
                ref_visible_range(p, &info, &lo, &hi);
                g_qstats.units++;
            }
            const int64_t nv = hi >= lo ? hi - lo + 1 : 0, n = nv < K ? nv : K;
            ranked *rk = th_xmalloc((size_t)(nv + 1) * sizeof *rk);
            for (int64_t s = lo; s <= hi; s++) {
                double mag;
                rk[s - lo].key = s;
                rk[s - lo].score = ref_quant_score(p, &x, row, &info, g, s, &mag);
                rk[s - lo].tol = tol_accumulated(steps, mag);
            }
            qsort(rk, (size_t)nv, sizeof *rk, cmp_ranked);
            /* decidable: every neighbour pair up to the cut (and across it) separated beyond the bounds */
            int exact = info.valid;
            for (int64_t j = 1; exact && j < nv && j <= K; j++) {
                const ranked *a = &rk[j - 1], *b = &rk[j];
                if (a->score - b->score > a->tol + b->tol) {
                    continue;
                }
                if (a->score == b->score && twins(c, info.key_base, g, a->key, b->key)) {
                    g_qstats.twins++;
                    continue;
                }
                if (a->score == 0.0 && b->score == 0.0 && c->s.qk == LIG_INT8) {
                    continue; /* exact integer dots: the library's closed gates are the reference's */
                }
                exact = 0;
            }
            for (int64_t j = 0; j < K && ok; j++) {
                if (j >= n) {
                    if (li[j] != -1 || (lv && lv[j] != -INFINITY)) {
                        snprintf(why, sizeof why, "slot %" PRId64 ": expected -1 / -inf (%" PRId64 " visible), got %" PRId64
                                 " / %g", j, nv, li[j], lv ? lv[j] : 0.0);
                        ok = 0;
                    }
                    continue;
                }
                const int64_t s = li[j];
                if (s < lo || s > hi) {
                    snprintf(why, sizeof why, "slot %" PRId64 " holds %" PRId64 ", not a visible key [%" PRId64 ", %" PRId64
                             "]", j, s, lo, hi);
                    ok = 0;
                    break;
                }
                double mag;
                const double sc = ref_quant_score(p, &x, row, &info, g, s, &mag);
                const double tol = tol_accumulated(steps, mag);
                if (exact && s != rk[j].key) {
                    snprintf(why, sizeof why, "slot %" PRId64 ": key %" PRId64 " (reference %.9g), expected key %" PRId64
                             " (%.9g): the scores around it are apart by more than the bound", j, s, sc, rk[j].key,
                             rk[j].score);
                    ok = 0;
                } else if (!exact) {
                    const ranked *kth = &rk[n - 1];
                    if (sc < kth->score - tol - kth->tol) {
                        snprintf(why, sizeof why, "slot %" PRId64 ": key %" PRId64 " scores %.9g, below the k-th %.9g beyond "
                                 "the bound", j, s, sc, kth->score);
                        ok = 0;
                    }
                    for (int64_t i = 0; i < j && ok; i++) {
                        if (li[i] == s) {
                            snprintf(why, sizeof why, "key %" PRId64 " selected twice", s);
                            ok = 0;
                        }
                    }
                }
                if (ok && lv != NULL) {
                    const double te = tol_element(vd, sc, steps, mag);
                    /* past the dtype's range the value is the infinity the score (up to its bound) rounds to */
                    const int overflow = isinf(lv[j]) && th_round_dtype(vd, sc + copysign(tol, sc)) == lv[j];
                    if (!(fabs(lv[j] - sc) <= te) && !overflow) {
                        snprintf(why, sizeof why, "slot %" PRId64 " (key %" PRId64 "): value %.9g, reference %.9g (bound %.3g)",
                                 j, s, lv[j], sc, te);
                        ok = 0;
                    }
                }
                g_qstats.selected++;
            }
            if (info.valid) {
                g_qstats.padded += K - n;
                if (exact) {
                    g_qstats.exact_units++;
                } else {
                    g_qstats.tolerant_units++;
                }
            }
            free(rk);
            if (!ok) {
                if (bad < 3) {
                    CHECK(0, "%s: row %" PRId64 " (batch %" PRId64 " t %" PRId64 "%s) key head %" PRId64 ": %s", label, row,
                          info.b, info.t, info.valid ? "" : ", invalid", g, why);
                }
                bad++;
            }
        }
    }
    if (bad > 3) {
        CHECK(0, "%s: %" PRId64 " units wrong in all", label, bad);
    }
    return bad == 0;
}

int qcase_run_check(const qcase *c, const char *label)
{
    char desc[400], full[800];
    qcase_describe(c, desc, sizeof desc);
    snprintf(full, sizeof full, "%s [%s]", label, desc);
    const int64_t slots = c->rows_q * c->p.N2 * c->p.K;
    int64_t *idx = th_xmalloc((size_t)(slots + 1) * sizeof(int64_t));
    double *val = c->s.with_values ? th_xmalloc((size_t)(slots + 1) * sizeof(double)) : NULL;
    int inputs_ok = 0;
    const lig_status st = qcase_run(c, 0, idx, val, &inputs_ok, NULL, NULL);
    int ok = CHECK(st == LIG_SUCCESS, "%s: status %d: %s", full, (int)st, lig_get_last_error());
    ok &= CHECK(inputs_ok, "%s: an input changed or a byte past an output was written", full);
    if (st == LIG_SUCCESS) {
        ok &= qcase_check(c, idx, val, full);
    }
    free(idx);
    free(val);
    return ok;
}

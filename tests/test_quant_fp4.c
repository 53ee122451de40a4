/* The quantized operators on MXFP4 queries and keys (FLOAT4_E2M1X2 codes with UINT8 or INT32 e8m0
 * block scales, contract 2.4 "MXFP4"): lig_quant_logits against a float64 reference written here
 * (codes and scales decoded independently of the library), the dense, TND and fused paged FP4
 * cache forms, both scale dtypes with and without their block axis, partial last blocks; the
 * block term's over- and underflow and NaN scales exactly; lig_quant_indexer's scores bit for bit
 * the logits'; every row alone against the same row inside a batch of other rows and lengths,
 * at 1 and 2 threads (decode rows run on the key split); and the error table (named errors,
 * nothing written). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework.h"
#include "lig.h"
#include "quant_case.h"
#include "rng.h"
#include "testing/lig_testing.h"

enum { MAXT = 24 };

/* ---- the float64 reference's own decoding ----------------------------------------------- */

static double ref_e2m1(unsigned code) {
    const unsigned e = (code >> 1) & 3u, m = code & 1u;
    const double mag = e == 0 ? 0.5 * m : (1.0 + 0.5 * m) * ldexp(1.0, (int)e - 1);
    return (code & 8u) ? -mag : mag;
}

static double ref_e8m0(unsigned byte) { return byte == 255u ? NAN : ldexp(1.0, (int)byte - 127); }

/* ---- a case: logical codes and scale bytes, materialized into tensors ------------------- */

typedef struct fcase {
    int64_t B, S1, S2, N2, G, D; /* TND: B = 1 */
    int tnd;
    lig_dtype sdt;           /* UINT8 or INT32 */
    int sq_axis, sk_axis;    /* keep the block axis (forced when it has more than one element) */
    int pad_bytes;           /* UINT8: the axis padded to whole words */
    lig_dtype wdt;           /* FLOAT32 or BFLOAT16 */
    uint8_t *q, *k;          /* packed: [rows][N1][D/2], [keys][N2][D/2] (keys: B*S2 rows) */
    uint8_t *sqb, *skb;      /* [rows][N1][nblk], [keys][N2][nblk] */
    float *w;                /* [rows][N1] (values exact in wdt) */
} fcase;

static int64_t nblk_of(int64_t D) { return (D + 31) / 32; }

static void fcase_make(th_rng *r, fcase *c, uint8_t scale_lo, uint8_t scale_hi) {
    const int64_t rows = c->B * c->S1, keys = c->B * c->S2, N1 = c->N2 * c->G, half = c->D / 2, nb = nblk_of(c->D);
    c->q = malloc((size_t)(rows * N1 * half) + 1);
    c->k = malloc((size_t)(keys * c->N2 * half) + 1);
    c->sqb = malloc((size_t)(rows * N1 * nb) + 1);
    c->skb = malloc((size_t)(keys * c->N2 * nb) + 1);
    c->w = malloc(sizeof(float) * (size_t)(rows * N1) + 4);
    for (int64_t i = 0; i < rows * N1 * half; i++) c->q[i] = (uint8_t)th_rng_range(r, 0, 255);
    for (int64_t i = 0; i < keys * c->N2 * half; i++) c->k[i] = (uint8_t)th_rng_range(r, 0, 255);
    for (int64_t i = 0; i < rows * N1 * nb; i++) c->sqb[i] = (uint8_t)th_rng_range(r, scale_lo, scale_hi);
    for (int64_t i = 0; i < keys * c->N2 * nb; i++) c->skb[i] = (uint8_t)th_rng_range(r, scale_lo, scale_hi);
    for (int64_t i = 0; i < rows * N1; i++) /* multiples of 1/64 in (-1, 2): exact in bf16 */
        c->w[i] = (float)th_rng_range(r, -63, 127) / 64.0f;
}

static void fcase_free(fcase *c) {
    free(c->q);
    free(c->k);
    free(c->sqb);
    free(c->skb);
    free(c->w);
}

/* The reference's exact value of (row, head h, key) before the ReLU: sum over blocks of the exact
 * block dot times both scales; *mag receives the sum of the terms' magnitudes. */
static double ref_dot(const fcase *c, int64_t row, int64_t h, int64_t key, double *mag) {
    const int64_t N1 = c->N2 * c->G, g = h / c->G, half = c->D / 2, nb = nblk_of(c->D);
    const uint8_t *qp = c->q + (row * N1 + h) * half, *kp = c->k + (key * c->N2 + g) * half;
    double sum = 0, m = 0;
    for (int64_t j = 0; j < nb; j++) {
        double blk = 0;
        for (int64_t d = 32 * j; d < c->D && d < 32 * (j + 1); d++) {
            const unsigned qc = (qp[d / 2] >> (4 * (d % 2))) & 15u, kc = (kp[d / 2] >> (4 * (d % 2))) & 15u;
            blk += ref_e2m1(qc) * ref_e2m1(kc);
        }
        const double t = blk * ref_e8m0(c->sqb[(row * N1 + h) * nb + j]) * ref_e8m0(c->skb[(key * c->N2 + g) * nb + j]);
        sum += t;
        m += fabs(t);
    }
    *mag = m;
    return sum;
}

/* The reference score of (row, key head g, key) and its fp32 error bound (contract 2.4, MXFP4). */
static double ref_score(const fcase *c, int64_t row, int64_t g, int64_t key, double *bound) {
    const int64_t N1 = c->N2 * c->G;
    double s = 0, b = 0;
    for (int64_t h = g * c->G; h < (g + 1) * c->G; h++) {
        double mag;
        const double x = ref_dot(c, row, h, key, &mag), w = c->w[row * N1 + h];
        s += x > 0 ? w * x : 0;
        b += fabs(w) * mag;
    }
    *bound = 2.0 * (double)(nblk_of(c->D) + c->G + 4) * ldexp(b, -24) + ldexp(1.0, -140);
    return s;
}

/* The tensors of one call (destroyed together) and the buffers made for them. */
typedef struct tens {
    lig_tensor *t[40];
    void *mem[40];
    int n, nm;
} tens;

static lig_tensor *tk(tens *T, lig_tensor *t) {
    if (!CHECK(t != NULL && T->n < 40, "tensor: %s", lig_get_last_error())) abort();
    T->t[T->n++] = t;
    return t;
}

static void *tmem(tens *T, size_t bytes) {
    void *m = calloc(bytes ? bytes : 1, 1);
    T->mem[T->nm++] = m;
    return m;
}

static void tens_free(tens *T) {
    for (int i = 0; i < T->n; i++) lig_destroy_tensor(T->t[i]);
    for (int i = 0; i < T->nm; i++) free(T->mem[i]);
    memset(T, 0, sizeof *T);
}

/* A scale tensor of `heads` heads a token over `tokens` tokens from bytes [tokens][heads][nblk]:
 * `base` its shape without the block axis (rank `rank`); UINT8 bytes (padded to whole words when
 * asked, with byte 127) or INT32 words; the block axis kept when `axis` or longer than one. */
static lig_tensor *scale_tensor(tens *T, const fcase *c, const uint8_t *bytes, int64_t tokens, int64_t heads,
                                int64_t rank, const int64_t *base, int axis) {
    const int64_t nb = nblk_of(c->D), words = (nb + 3) / 4;
    const int64_t per = c->sdt == LIG_INT32 ? words : c->pad_bytes ? 4 * words : nb;
    uint8_t *m = tmem(T, (size_t)(tokens * heads * per * (c->sdt == LIG_INT32 ? 4 : 1)));
    for (int64_t t = 0; t < tokens * heads; t++)
        for (int64_t j = 0; j < per * (c->sdt == LIG_INT32 ? 4 : 1); j++) {
            const uint8_t v = j < nb ? bytes[t * nb + j] : 127u;
            if (c->sdt == LIG_INT32) { /* word j/4, bits 8(j%4).. as a value */
                uint32_t word;
                memcpy(&word, m + (t * per + j / 4) * 4, 4);
                word |= (uint32_t)v << (8 * (j % 4));
                memcpy(m + (t * per + j / 4) * 4, &word, 4);
            } else
                m[t * per + j] = v;
        }
    int64_t shape[8];
    for (int64_t i = 0; i < rank; i++) shape[i] = base[i];
    const int keep = axis || per > 1;
    if (keep) shape[rank] = per;
    return tk(T, lig_create_tensor(m, c->sdt, rank + keep, shape, NULL));
}

static uint16_t bf16_of(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    return (uint16_t)(x >> 16); /* exact: the weights are exact in bf16 */
}

static lig_tensor *weights_tensor(tens *T, const fcase *c) {
    const int64_t rows = c->B * c->S1, N1 = c->N2 * c->G;
    const int64_t shape[3] = {c->B, c->S1, N1}, shape_tnd[2] = {c->S1, N1};
    void *m;
    if (c->wdt == LIG_BFLOAT16) {
        uint16_t *h = tmem(T, sizeof(uint16_t) * (size_t)(rows * N1));
        for (int64_t i = 0; i < rows * N1; i++) h[i] = bf16_of(c->w[i]);
        m = h;
    } else {
        m = tmem(T, sizeof(float) * (size_t)(rows * N1));
        memcpy(m, c->w, sizeof(float) * (size_t)(rows * N1));
    }
    return tk(T, c->tnd ? lig_create_tensor(m, c->wdt, 2, shape_tnd, NULL) : lig_create_tensor(m, c->wdt, 3, shape, NULL));
}

/* The query, weights and query scales of rows [row0, row0 + S1) of c (B = 1 then), or of all of c. */
typedef struct qside {
    lig_tensor *q, *w, *sq;
} qside;

static qside query_side(tens *T, const fcase *c) {
    const int64_t N1 = c->N2 * c->G, half = c->D / 2, rows = c->B * c->S1;
    qside s;
    const int64_t qshape[4] = {c->B, c->S1, N1, half}, qtnd[3] = {c->S1, N1, half};
    s.q = tk(T, c->tnd ? lig_create_tensor(c->q, LIG_FLOAT4_E2M1X2, 3, qtnd, NULL)
                       : lig_create_tensor(c->q, LIG_FLOAT4_E2M1X2, 4, qshape, NULL));
    s.w = weights_tensor(T, c);
    const int64_t wshape[3] = {c->B, c->S1, N1}, wtnd[2] = {c->S1, N1};
    s.sq = scale_tensor(T, c, c->sqb, rows, N1, c->tnd ? 2 : 3, c->tnd ? wtnd : wshape, c->sq_axis);
    return s;
}

/* Dense keys [B,S2,N2,D/2] (TND: [S2,N2,D/2]) and their scales. */
static void key_side(tens *T, const fcase *c, lig_tensor **key, lig_tensor **sk) {
    const int64_t half = c->D / 2;
    const int64_t kshape[4] = {c->B, c->S2, c->N2, half}, ktnd[3] = {c->S2, c->N2, half};
    *key = tk(T, c->tnd ? lig_create_tensor(c->k, LIG_FLOAT4_E2M1X2, 3, ktnd, NULL)
                        : lig_create_tensor(c->k, LIG_FLOAT4_E2M1X2, 4, kshape, NULL));
    *sk = scale_tensor(T, c, c->skb, c->B * c->S2, c->N2, c->tnd ? 2 : 3, c->tnd ? ktnd : kshape, c->sk_axis);
}

/* DeepGEMM's fused FP4 paged cache (N2 = 1, D % 8 == 0, INT32 scales of one word: D <= 128):
 * uint8 [num_blocks, bs, 1, D/2 + 4], each block its codes token-major then one int32 a token;
 * batch b's keys in blocks drawn from a shuffled table. key and sk are the two strided views. */
static void paged_side(tens *T, th_rng *r, const fcase *c, int64_t bs, lig_tensor **key, lig_tensor **sk,
                       lig_tensor **table) {
    const int64_t half = c->D / 2, per_b = (c->S2 + bs - 1) / bs, nblocks = c->B * per_b + 2;
    const int64_t tok = half + 4, blk = bs * tok;
    uint8_t *cache = tmem(T, (size_t)(nblocks * blk));
    for (int64_t i = 0; i < nblocks * blk; i++) cache[i] = (uint8_t)th_rng_range(r, 0, 255); /* unread bytes */
    int64_t *perm = tmem(T, sizeof(int64_t) * (size_t)nblocks);
    for (int64_t i = 0; i < nblocks; i++) perm[i] = i;
    for (int64_t i = nblocks - 1; i > 0; i--) {
        const int64_t j = th_rng_range(r, 0, i), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    int32_t *tab = tmem(T, sizeof(int32_t) * (size_t)(c->B * per_b));
    const int64_t nb = nblk_of(c->D);
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t s = 0; s < c->S2; s++) {
            const int64_t block = perm[b * per_b + s / bs], pos = s % bs, key_row = b * c->S2 + s;
            tab[b * per_b + s / bs] = (int32_t)block;
            memcpy(cache + block * blk + pos * half, c->k + key_row * half, (size_t)half);
            uint32_t word = 0x7f7f7f7fu;
            for (int64_t j = 0; j < nb; j++)
                word = (word & ~(0xffu << (8 * j))) | (uint32_t)c->skb[key_row * nb + j] << (8 * j);
            memcpy(cache + block * blk + bs * half + pos * 4, &word, 4);
        }
    const int64_t kshape[4] = {nblocks, bs, 1, half}, kstr[4] = {blk, half, half, 1};
    *key = tk(T, lig_create_tensor(cache, LIG_FLOAT4_E2M1X2, 4, kshape, kstr));
    const int64_t sshape[3] = {nblocks, bs, 1}, sstr[3] = {blk / 4, 1, 1};
    *sk = tk(T, lig_create_tensor(cache + bs * half, LIG_INT32, 3, sshape, sstr));
    const int64_t tshape[2] = {c->B, per_b};
    *table = tk(T, lig_create_tensor(tab, LIG_INT32, 2, tshape, NULL));
}

/* lig_quant_logits over rows' ranges [ks, ke) (per row), logits [rows][N2][S2] (-inf cleaned)
 * and the top-K (K 0: none) into idx / val (FLOAT32). Returns the status. */
static lig_status run_logits(tens *T, const fcase *c, qside qs, lig_tensor *key, lig_tensor *sk, lig_tensor *table,
                             const int64_t *ks, const int64_t *ke, int64_t W, float *logits, int64_t K, int64_t *idx,
                             float *val, int threads) {
    const int64_t rows = c->B * c->S1;
    int64_t *kst = tmem(T, sizeof(int64_t) * (size_t)rows), *ken = tmem(T, sizeof(int64_t) * (size_t)rows);
    memcpy(kst, ks, sizeof(int64_t) * (size_t)rows);
    memcpy(ken, ke, sizeof(int64_t) * (size_t)rows);
    const int64_t rshape[2] = {c->B, c->S1}, rt[1] = {c->S1};
    lig_tensor *ts = tk(T, c->tnd ? lig_create_tensor(kst, LIG_INT64, 1, rt, NULL)
                                  : lig_create_tensor(kst, LIG_INT64, 2, rshape, NULL));
    lig_tensor *te = tk(T, c->tnd ? lig_create_tensor(ken, LIG_INT64, 1, rt, NULL)
                                  : lig_create_tensor(ken, LIG_INT64, 2, rshape, NULL));
    const int64_t lshape[4] = {c->B, c->S1, c->N2, W}, ltnd[3] = {c->S1, c->N2, W};
    lig_tensor *lt = tk(T, c->tnd ? lig_create_tensor(logits, LIG_FLOAT32, 3, ltnd, NULL)
                                  : lig_create_tensor(logits, LIG_FLOAT32, 4, lshape, NULL));
    lig_tensor *it = NULL, *vt = NULL;
    if (K > 0) {
        const int64_t kshape[4] = {c->B, c->S1, c->N2, K}, ktnd[3] = {c->S1, c->N2, K};
        it = tk(T, c->tnd ? lig_create_tensor(idx, LIG_INT64, 3, ktnd, NULL) : lig_create_tensor(idx, LIG_INT64, 4, kshape, NULL));
        vt = tk(T, c->tnd ? lig_create_tensor(val, LIG_FLOAT32, 3, ktnd, NULL)
                          : lig_create_tensor(val, LIG_FLOAT32, 4, kshape, NULL));
    }
    const char *lq = c->tnd ? "TND" : "BSND";
    uint64_t ws = 0;
    lig_executor *ex = NULL;
    lig_status st = lig_quant_logits_get_workspace_size(qs.q, key, qs.w, qs.sq, sk, table, ts, te, lq,
                                                        table ? "PA_BSND" : lq, true, false, lt, K, it, vt, NULL, &ws,
                                                        &ex);
    if (st != LIG_SUCCESS) return st;
    const int saved = lig_get_num_threads();
    lig_set_num_threads(threads);
    void *w = malloc(ws ? ws : 1);
    st = lig_quant_logits(w, ws, ex, NULL); /* frees the executor */
    lig_set_num_threads(saved);
    free(w);
    return st;
}

static int same_bits(const void *a, const void *b, size_t n) { return memcmp(a, b, n) == 0; }

/* Checks logits against the reference and the top-k against the logits (descending, ties to the
 * lower key, -1 / -inf padding; values the logits' bits). */
static void check_logits(const fcase *c, const int64_t *ks, const int64_t *ke, int64_t W, const float *logits, int64_t K,
                         const int64_t *idx, const float *val, const char *label) {
    const int64_t rows = c->B * c->S1;
    int bad = 0;
    for (int64_t r = 0; r < rows && bad < 3; r++)
        for (int64_t g = 0; g < c->N2 && bad < 3; g++) {
            const float *L = logits + (r * c->N2 + g) * W;
            const int64_t b = r / c->S1;
            for (int64_t s = 0; s < W && bad < 3; s++) {
                if (s < ks[r] || s >= ke[r]) {
                    if (!CHECK(isinf(L[s]) && L[s] < 0, "%s: row %lld col %lld unscored: got %g, want -inf", label,
                               (long long)r, (long long)s, (double)L[s]))
                        bad++;
                    continue;
                }
                double bound;
                const double want = ref_score(c, r, g, c->tnd ? s : b * c->S2 + s, &bound);
                if (!CHECK(fabs((double)L[s] - want) <= bound, "%s: row %lld head %lld key %lld: got %.9g, want %.9g (bound %.3g)",
                           label, (long long)r, (long long)g, (long long)s, (double)L[s], want, bound))
                    bad++;
            }
            if (K == 0) continue;
            /* the top-k of the logits: selection by repeated maximum */
            char *taken = calloc((size_t)W + 1, 1);
            for (int64_t slot = 0; slot < K; slot++) {
                int64_t best = -1;
                for (int64_t s = ks[r]; s < ke[r]; s++)
                    if (!taken[s] && (best < 0 || L[s] > L[best])) best = s;
                const int64_t got = idx[(r * c->N2 + g) * K + slot];
                const float gv = val[(r * c->N2 + g) * K + slot];
                if (best >= 0) {
                    taken[best] = 1;
                    if (!CHECK(got == best && same_bits(&gv, &L[best], 4), "%s: row %lld slot %lld: got key %lld (%g), want %lld (%g)",
                               label, (long long)r, (long long)slot, (long long)got, (double)gv, (long long)best,
                               (double)L[best]))
                        bad++;
                } else if (!CHECK(got == -1 && isinf(gv) && gv < 0, "%s: row %lld slot %lld: got %lld, want padding", label,
                                  (long long)r, (long long)slot, (long long)got))
                    bad++;
            }
            free(taken);
        }
}

/* ---- the tests ---------------------------------------------------------------------------- */

/* Random shapes, both query layouts, both scale dtypes with and without their axis, partial
 * last blocks, weights FLOAT32 / BFLOAT16, top-k over the logits; plus the fused paged cache's
 * logits bit for bit the dense keys'. */
LIG_TEST(quant_fp4_logits_reference) {
    static const int64_t Ds[] = {64, 128, 2, 40, 96, 256, 34};
    th_rng r = th_rng_make(0xf4f4);
    for (int v = 0; v < 28; v++) {
        fcase c = {0};
        c.tnd = v % 3 == 1;
        c.B = c.tnd ? 1 : 1 + th_rng_range(&r, 0, 2);
        c.S1 = 1 + th_rng_range(&r, 0, 5);
        c.S2 = 1 + th_rng_range(&r, 0, 60);
        c.N2 = 1 + v % 2;
        c.G = v % 4 == 0 ? 1 : v % 4 == 1 ? 3 : v % 4 == 2 ? 8 : 16;
        c.D = Ds[v % 7];
        c.sdt = v % 2 ? LIG_INT32 : LIG_UINT8;
        c.sq_axis = v % 5 == 0;
        c.sk_axis = v % 3 == 0;
        c.pad_bytes = v % 4 == 2;
        c.wdt = v % 3 == 2 ? LIG_BFLOAT16 : LIG_FLOAT32;
        fcase_make(&r, &c, 112, 140);
        const int64_t rows = c.B * c.S1, W = c.S2, K = v % 4 == 3 ? 0 : 1 + th_rng_range(&r, 0, 8);
        int64_t ks[MAXT * 4], ke[MAXT * 4];
        for (int64_t i = 0; i < rows; i++) {
            ks[i] = th_rng_range(&r, 0, W);
            ke[i] = th_rng_range(&r, ks[i], W);
        }
        float *logits = malloc(sizeof(float) * (size_t)(rows * c.N2 * W));
        float *val = malloc(sizeof(float) * (size_t)(rows * c.N2 * (K + 1)));
        int64_t *idx = malloc(sizeof(int64_t) * (size_t)(rows * c.N2 * (K + 1)));
        tens T = {0};
        const qside qs = query_side(&T, &c);
        lig_tensor *key, *sk;
        key_side(&T, &c, &key, &sk);
        char label[96];
        snprintf(label, sizeof label, "case %d (%s B %lld S1 %lld S2 %lld N2 %lld G %lld D %lld %s)", v, c.tnd ? "TND" : "BSND",
                 (long long)c.B, (long long)c.S1, (long long)c.S2, (long long)c.N2, (long long)c.G, (long long)c.D,
                 c.sdt == LIG_INT32 ? "INT32" : "UINT8");
        lig_status st = run_logits(&T, &c, qs, key, sk, NULL, ks, ke, W, logits, K, idx, val, 2);
        if (CHECK(st == LIG_SUCCESS, "%s: %s", label, lig_get_last_error())) check_logits(&c, ks, ke, W, logits, K, idx, val, label);
        /* the fused paged cache: the same logits, bit for bit */
        if (!c.tnd && c.N2 == 1 && c.D % 8 == 0 && c.D <= 128 && c.sdt == LIG_INT32) {
            lig_tensor *pk, *psk, *table;
            paged_side(&T, &r, &c, 1 + v % 5 * 4, &pk, &psk, &table);
            const qside qs2 = query_side(&T, &c);
            float *pl = malloc(sizeof(float) * (size_t)(rows * W));
            st = run_logits(&T, &c, qs2, pk, psk, table, ks, ke, W, pl, 0, NULL, NULL, 1);
            if (CHECK(st == LIG_SUCCESS, "%s paged: %s", label, lig_get_last_error()))
                CHECK(same_bits(pl, logits, sizeof(float) * (size_t)(rows * W)), "%s: the paged logits differ from the dense ones",
                      label);
            free(pl);
        }
        tens_free(&T);
        free(logits);
        free(val);
        free(idx);
        fcase_free(&c);
    }
}

/* The block term at the edges of fp32, exactly: scales whose product overflows (+inf), lands on a
 * subnormal (exact), underflows to zero, and a NaN scale byte (the head adds exactly 0). One query
 * head, D = 64 (two blocks), every value 1 (code 2): each block's dot is 32. */
LIG_TEST(quant_fp4_scale_edges) {
    typedef struct edge {
        uint8_t q0, k0, q1, k1;
        float want; /* the score with weight 1 */
    } edge;
    const edge edges[] = {
        {127, 127, 127, 127, 64.0f},                       /* 32 + 32 */
        {254, 254, 127, 127, INFINITY},                     /* 32 * 2^254 overflows */
        {1, 1, 127, 127, 32.0f},                            /* 32 * 2^-252 rounds to +0, then + 32 */
        {10, 7, 3, 1, 0.0f},                                /* both terms below fp32's subnormals: +0 */
        {127, 255, 127, 127, 0.0f},                         /* NaN scale: NaN dot, the head adds 0 */
        {100, 22, 1, 1, 0x1p-127f},                         /* 32 * 2^-132 = 2^-127 (subnormal, exact) */
    };
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++) {
        fcase c = {.B = 1, .S1 = 1, .S2 = 1, .N2 = 1, .G = 1, .D = 64, .tnd = 1, .sdt = LIG_UINT8, .wdt = LIG_FLOAT32};
        th_rng r = th_rng_make(e);
        fcase_make(&r, &c, 127, 127);
        memset(c.q, 0x22, 32); /* code 2 = 1.0 in both nibbles */
        memset(c.k, 0x22, 32);
        c.sqb[0] = edges[e].q0;
        c.skb[0] = edges[e].k0;
        c.sqb[1] = edges[e].q1;
        c.skb[1] = edges[e].k1;
        c.w[0] = 1.0f;
        const float want = edges[e].want;
        tens T = {0};
        const qside qs = query_side(&T, &c);
        lig_tensor *key, *sk;
        key_side(&T, &c, &key, &sk);
        const int64_t ks = 0, ke = 1;
        float logit = 0;
        lig_status st = run_logits(&T, &c, qs, key, sk, NULL, &ks, &ke, 1, &logit, 0, NULL, NULL, 1);
        if (CHECK(st == LIG_SUCCESS, "edge %zu: %s", e, lig_get_last_error()))
            CHECK(same_bits(&logit, &want, 4), "edge %zu: got %a, want %a", e, (double)logit, (double)want);
        tens_free(&T);
        fcase_free(&c);
    }
}

/* lig_quant_indexer's FP4 scores are the logits' (bit for bit), and each batch alone gives the
 * same indices and values as inside the batch (other rows, other key lengths), at 1 and 2
 * threads; lig_quant_logits likewise per row (one row alone, long ranges: the decode split). */
LIG_TEST(quant_fp4_batch_invariance) {
    th_rng r = th_rng_make(0xba7c4);
    fcase c = {.B = 3, .S1 = 2, .S2 = 700, .N2 = 1, .G = 8, .D = 128, .sdt = LIG_INT32, .wdt = LIG_FLOAT32};
    fcase_make(&r, &c, 118, 134);
    const int64_t K = 16, N1 = c.G, half = c.D / 2, nb = nblk_of(c.D), rows = c.B * c.S1;
    int64_t lq[3] = {2, 1, 2}, lk[3] = {700, 37, 411};
    /* the whole batch, threads 1 and 2 */
    int64_t idx_all[2][6 * 16];
    float val_all[2][6 * 16];
    for (int th = 0; th < 2; th++) {
        tens T = {0};
        const qside qs = query_side(&T, &c);
        lig_tensor *key, *sk;
        key_side(&T, &c, &key, &sk);
        const int64_t ls[1] = {c.B}, ishape[4] = {c.B, c.S1, 1, K};
        lig_tensor *aq = tk(&T, lig_create_tensor(lq, LIG_INT64, 1, ls, NULL));
        lig_tensor *ak = tk(&T, lig_create_tensor(lk, LIG_INT64, 1, ls, NULL));
        lig_tensor *it = tk(&T, lig_create_tensor(idx_all[th], LIG_INT64, 4, ishape, NULL));
        lig_tensor *vt = tk(&T, lig_create_tensor(val_all[th], LIG_FLOAT32, 4, ishape, NULL));
        uint64_t ws;
        lig_executor *ex = NULL;
        lig_status st = lig_quant_indexer_get_workspace_size(qs.q, key, qs.w, qs.sq, sk, aq, ak, NULL, 0, 0, "BSND", "BSND", K,
                                                             3, INT64_MAX, INT64_MAX, it, vt, &ws, &ex);
        REQUIRE(st == LIG_SUCCESS, "phase 1: %s", lig_get_last_error());
        lig_set_num_threads(th + 1);
        void *w = malloc(ws ? ws : 1);
        st = lig_quant_indexer(w, ws, ex, NULL); /* frees the executor */
        free(w);
        lig_set_num_threads(0);
        CHECK(st == LIG_SUCCESS, "phase 2: %s", lig_get_last_error());
        tens_free(&T);
    }
    CHECK(same_bits(idx_all[0], idx_all[1], sizeof idx_all[0]) && same_bits(val_all[0], val_all[1], sizeof val_all[0]),
          "1 and 2 threads differ");
    /* each batch alone: B = 1 over its own rows and keys */
    for (int64_t b = 0; b < c.B; b++) {
        fcase one = c;
        one.B = 1;
        one.q = c.q + b * c.S1 * N1 * half;
        one.sqb = c.sqb + b * c.S1 * N1 * nb;
        one.w = c.w + b * c.S1 * N1;
        one.k = c.k + b * c.S2 * half;
        one.skb = c.skb + b * c.S2 * nb;
        tens T = {0};
        const qside qs = query_side(&T, &one);
        lig_tensor *key, *sk;
        key_side(&T, &one, &key, &sk);
        int64_t idx[2 * 16];
        float val[2 * 16];
        const int64_t ls[1] = {1}, ishape[4] = {1, c.S1, 1, K};
        lig_tensor *aq = tk(&T, lig_create_tensor(&lq[b], LIG_INT64, 1, ls, NULL));
        lig_tensor *ak = tk(&T, lig_create_tensor(&lk[b], LIG_INT64, 1, ls, NULL));
        lig_tensor *it = tk(&T, lig_create_tensor(idx, LIG_INT64, 4, ishape, NULL));
        lig_tensor *vt = tk(&T, lig_create_tensor(val, LIG_FLOAT32, 4, ishape, NULL));
        uint64_t ws;
        lig_executor *ex = NULL;
        lig_status st = lig_quant_indexer_get_workspace_size(qs.q, key, qs.w, qs.sq, sk, aq, ak, NULL, 0, 0, "BSND", "BSND", K,
                                                             3, INT64_MAX, INT64_MAX, it, vt, &ws, &ex);
        REQUIRE(st == LIG_SUCCESS, "phase 1: %s", lig_get_last_error());
        void *w = malloc(ws ? ws : 1);
        st = lig_quant_indexer(w, ws, ex, NULL); /* frees the executor */
        free(w);
        CHECK(st == LIG_SUCCESS, "phase 2: %s", lig_get_last_error());
        for (int64_t t = 0; t < lq[b]; t++)
            CHECK(same_bits(idx + t * K, idx_all[0] + (b * c.S1 + t) * K, sizeof(int64_t) * K) &&
                      same_bits(val + t * K, val_all[0] + (b * c.S1 + t) * K, sizeof(float) * K),
                  "batch %lld row %lld: alone differs from inside the batch (slot 0: %lld %a against %lld %a)", (long long)b,
                  (long long)t, (long long)idx[t * K], (double)val[t * K], (long long)idx_all[0][(b * c.S1 + t) * K],
                  (double)val_all[0][(b * c.S1 + t) * K]);
        /* the indexer's scores are the logits' over the causal ranges */
        if (lq[b] == c.S1) {
            int64_t ks[2] = {0, 0}, ke[2];
            for (int64_t t = 0; t < c.S1; t++) ke[t] = lk[b] - lq[b] + t + 1;
            float *lg = malloc(sizeof(float) * (size_t)(c.S1 * c.S2));
            int64_t li[2 * 16];
            float lv[2 * 16];
            st = run_logits(&T, &one, qs, key, sk, NULL, ks, ke, c.S2, lg, K, li, lv, 2);
            if (CHECK(st == LIG_SUCCESS, "logits: %s", lig_get_last_error()))
                CHECK(same_bits(li, idx, sizeof li) && same_bits(lv, val, sizeof lv),
                      "batch %lld: the indexer's top-k differs from the logits'", (long long)b);
            check_logits(&one, ks, ke, c.S2, lg, K, li, lv, "batch alone");
            free(lg);
        }
        tens_free(&T);
    }
    /* lig_quant_logits: every row of a TND batch alone (one row: the key split) against the batch */
    fcase all = c;
    all.tnd = 1;
    all.B = 1;
    all.S1 = rows;
    all.S2 = c.S2; /* the first batch's keys for every row */
    int64_t ks[6], ke[6];
    for (int64_t i = 0; i < rows; i++) {
        ks[i] = th_rng_range(&r, 0, 40);
        ke[i] = th_rng_range(&r, ks[i], c.S2);
    }
    float *batch = malloc(sizeof(float) * (size_t)(rows * c.S2));
    tens T = {0};
    lig_tensor *key, *sk;
    key_side(&T, &all, &key, &sk);
    lig_status st = run_logits(&T, &all, query_side(&T, &all), key, sk, NULL, ks, ke, c.S2, batch, 0, NULL, NULL, 2);
    REQUIRE(st == LIG_SUCCESS, "logits batch: %s", lig_get_last_error());
    for (int64_t i = 0; i < rows; i++) {
        fcase one = all;
        one.S1 = 1;
        one.q = all.q + i * N1 * half;
        one.sqb = all.sqb + i * N1 * nb;
        one.w = all.w + i * N1;
        float *alone = malloc(sizeof(float) * (size_t)c.S2);
        static const int64_t slices[3] = {-1, 0, 64}; /* the default key split, none, slices of 64 keys */
        for (int th = 1; th <= 2; th++)
            for (int sl = 0; sl < 3; sl++) {
                tens R = {0};
                lig_testing_set_fwd_split_keys(slices[sl]);
                st = run_logits(&R, &one, query_side(&R, &one), key, sk, NULL, &ks[i], &ke[i], c.S2, alone, 0, NULL, NULL, th);
                lig_testing_set_tuning(NULL); /* the environment's values again */
                if (CHECK(st == LIG_SUCCESS, "logits row %lld: %s", (long long)i, lig_get_last_error()))
                    CHECK(same_bits(alone, batch + i * c.S2, sizeof(float) * (size_t)c.S2),
                          "logits row %lld alone (%d threads, split keys %lld) differs from the batch", (long long)i, th,
                          (long long)slices[sl]);
                tens_free(&R);
            }
        free(alone);
    }
    tens_free(&T);
    free(batch);
    fcase_free(&c);
}

/* The same logits bytes on every kernel set this CPU has (the engine is portable, the epilogue the
 * sets' quant_scores, bit for bit the scalar kernel's), 64 heads so the sets' vector paths run. */
LIG_TEST(quant_fp4_same_on_every_set) {
    th_rng r = th_rng_make(0x5e7);
    fcase c = {.B = 2, .S1 = 3, .S2 = 150, .N2 = 1, .G = 64, .D = 128, .sdt = LIG_INT32, .wdt = LIG_BFLOAT16};
    fcase_make(&r, &c, 116, 136);
    const int64_t rows = c.B * c.S1, W = c.S2;
    int64_t ks[6], ke[6];
    for (int64_t i = 0; i < rows; i++) {
        ks[i] = th_rng_range(&r, 0, 20);
        ke[i] = th_rng_range(&r, ks[i], W);
    }
    float *first = malloc(sizeof(float) * (size_t)(rows * W)), *now = malloc(sizeof(float) * (size_t)(rows * W));
    char list[256];
    snprintf(list, sizeof list, "%s", lig_kernel_sets());
    int n = 0;
    for (char *name = strtok(list, ","); name != NULL; name = strtok(NULL, ",")) {
        if (!CHECK(lig_set_kernel_set(name) == LIG_SUCCESS, "forcing %s: %s", name, lig_get_last_error())) continue;
        tens T = {0};
        lig_tensor *key, *sk;
        key_side(&T, &c, &key, &sk);
        const lig_status st = run_logits(&T, &c, query_side(&T, &c), key, sk, NULL, ks, ke, W, n ? now : first, 0, NULL,
                                         NULL, 2);
        if (CHECK(st == LIG_SUCCESS, "set %s: %s", name, lig_get_last_error()) && n > 0)
            CHECK(same_bits(now, first, sizeof(float) * (size_t)(rows * W)), "set %s: logits differ from the first set's", name);
        if (st == LIG_SUCCESS && n == 0) check_logits(&c, ks, ke, W, first, 0, NULL, NULL, "first set");
        n++;
        tens_free(&T);
    }
    lig_set_kernel_set(NULL);
    th_note("%d kernel sets compared", n);
    free(first);
    free(now);
    fcase_free(&c);
}

/* lig_quant_indexer on MXFP4 through the quantized forward's harness (tests/harness/quant_case.h:
 * block scales folded into the float64 reference's values, NaN scale bytes where nothing may be
 * read): BSND, TND and paged keys, both sparse modes and bands, lengths, padded strides, short
 * outputs, duplicate keys (exact ties), NaN scale bytes among the data, every scale dtype pair,
 * partial last blocks; exact index sets wherever the reference's scores are apart. */
LIG_TEST(quant_fp4_forward_matrix) {
    static const int64_t Ds[] = {2, 32, 64, 66, 128, 130, 256};
    static const lig_dtype wd[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    th_rng r = th_rng_make(0x4d58);
    for (int v = 0; v < 48; v++) {
        qspec s;
        qspec_default(&s);
        s.qk = LIG_FLOAT4_E2M1X2;
        s.layout = v % 3 == 1 ? REF_TND : REF_BSND;
        s.paged = v % 3 == 2 || v % 7 == 1;
        s.has_sq = 1;
        s.sq_dtype = v % 2 ? LIG_INT32 : LIG_UINT8;
        s.sk_dtype = (v / 2) % 2 ? LIG_INT32 : LIG_UINT8;
        s.w_dtype = wd[v % 3];
        s.val_dtype = wd[(v / 3) % 3];
        s.idx_dtype = v % 5 ? LIG_INT32 : LIG_INT64;
        s.sparse_mode = v % 4 == 0 ? 0 : 3;
        if (v % 6 == 5) s.pre_tokens = th_rng_range(&r, 0, 6);
        s.B = 1 + th_rng_range(&r, 0, 2);
        qspec_dims(&s, 1 + th_rng_range(&r, 0, 6), 1 + th_rng_range(&r, 0, 50), 1 + v % 2, 1 + th_rng_range(&r, 0, 9),
                   Ds[v % 7], 1 + th_rng_range(&r, 0, 20));
        s.block_size = 1 + v % 5;
        s.lengths = v % 2;
        s.pad = v % 4 == 1;
        s.short_form = v % 3 == 0;
        s.p_dup_key = 0.2;
        s.p_nan_code = v % 5 == 2 ? 0.05 : 0.0;
        qcase c;
        qcase_make(&r, &s, &c);
        char label[400];
        qcase_describe(&c, label, sizeof label);
        CHECK(qcase_run_check(&c, label), "%s", label);
        qcase_free(&c);
    }
}

/* ---- errors: one thing broken, the status, the name, no executor, nothing written ---------- */

typedef struct ecall {
    lig_tensor *q, *k, *w, *sq, *sk;
} ecall;

typedef struct ecase {
    const char *name;
    lig_dtype q_dtype, k_dtype, sq_dtype, sk_dtype;
    int sq_null;
    int64_t sq_last, sk_last; /* -1: no block axis */
    int64_t k_half;           /* the key's last extent */
    lig_status want;
    const char *names;
} ecase;

LIG_TEST(quant_fp4_errors) {
    /* the base: TND, T1 = 2, T2 = 5, N1 = 2, N2 = 1, D = 64 (32 bytes, 2 blocks, 1 word) */
    const ecase cases[] = {
        {"valid (INT32 scales without axis)", LIG_FLOAT4_E2M1X2, LIG_FLOAT4_E2M1X2, LIG_INT32, LIG_INT32, 0, -1, -1, 32,
         LIG_SUCCESS, NULL},
        {"valid (UINT8 scales, padded)", LIG_FLOAT4_E2M1X2, LIG_FLOAT4_E2M1X2, LIG_UINT8, LIG_UINT8, 0, 4, 2, 32, LIG_SUCCESS,
         NULL},
        {"FP4 query, INT8 key", LIG_FLOAT4_E2M1X2, LIG_INT8, LIG_INT32, LIG_INT32, 0, -1, -1, 32, LIG_ERR_PARAM_INVALID,
         "key: expected dtype FLOAT4_E2M1X2"},
        {"FP8 query, FP4 key", LIG_FLOAT8_E4M3FN, LIG_FLOAT4_E2M1X2, LIG_FLOAT32, LIG_FLOAT32, 0, -1, -1, 32,
         LIG_ERR_PARAM_INVALID, "key: expected dtype FLOAT8_E4M3FN"},
        {"UINT8 query", LIG_UINT8, LIG_UINT8, LIG_INT32, LIG_INT32, 0, -1, -1, 32, LIG_ERR_PARAM_INVALID,
         "query: expected dtype FLOAT8_E4M3FN, INT8 or FLOAT4_E2M1X2"},
        {"no query scales", LIG_FLOAT4_E2M1X2, LIG_FLOAT4_E2M1X2, LIG_INT32, LIG_INT32, 1, -1, -1, 32, LIG_ERR_PARAM_NULLPTR,
         "query_dequant_scale: expected the query's MXFP4 block scales"},
        {"FLOAT32 query scales", LIG_FLOAT4_E2M1X2, LIG_FLOAT4_E2M1X2, LIG_FLOAT32, LIG_INT32, 0, -1, -1, 32,
         LIG_ERR_PARAM_INVALID, "query_dequant_scale: expected dtype UINT8"},
        {"FLOAT16 key scales", LIG_FLOAT4_E2M1X2, LIG_FLOAT4_E2M1X2, LIG_INT32, LIG_FLOAT16, 0, -1, -1, 32,
         LIG_ERR_PARAM_INVALID, "key_dequant_scale: expected dtype UINT8"},
        {"INT32 key scales of 2 words", LIG_FLOAT4_E2M1X2, LIG_FLOAT4_E2M1X2, LIG_INT32, LIG_INT32, 0, -1, 2, 32,
         LIG_ERR_PARAM_INVALID, "key_dequant_scale: expected shape"},
        {"UINT8 query scales of 1 byte", LIG_FLOAT4_E2M1X2, LIG_FLOAT4_E2M1X2, LIG_UINT8, LIG_UINT8, 0, 1, 2, 32,
         LIG_ERR_PARAM_INVALID, "query_dequant_scale: expected shape"},
        {"UINT8 query scales of 5 bytes", LIG_FLOAT4_E2M1X2, LIG_FLOAT4_E2M1X2, LIG_UINT8, LIG_UINT8, 0, 5, 2, 32,
         LIG_ERR_PARAM_INVALID, "query_dequant_scale: expected shape"},
        {"UINT8 key scales without axis", LIG_FLOAT4_E2M1X2, LIG_FLOAT4_E2M1X2, LIG_UINT8, LIG_UINT8, 0, 2, -1, 32,
         LIG_ERR_PARAM_INVALID, "key_dequant_scale: expected shape"},
        {"key of other D", LIG_FLOAT4_E2M1X2, LIG_FLOAT4_E2M1X2, LIG_INT32, LIG_INT32, 0, -1, -1, 16, LIG_ERR_PARAM_INVALID,
         "key: expected shape"},
        {"INT8 with UINT8 scales", LIG_INT8, LIG_INT8, LIG_UINT8, LIG_UINT8, 0, -1, -1, 32, LIG_ERR_PARAM_INVALID,
         "key_dequant_scale: expected dtype FLOAT32 or FLOAT16"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const ecase *e = &cases[i];
        static uint8_t qb[2 * 2 * 64], kb[5 * 64], sqb[64], skb[64], wb[64];
        static int64_t ke[2] = {5, 3};
        static float logits[2 * 8], val[2 * 4];
        static int64_t idx[2 * 4];
        for (size_t j = 0; j < sizeof logits / sizeof logits[0]; j++) logits[j] = 7.0f;
        for (size_t j = 0; j < sizeof idx / sizeof idx[0]; j++) idx[j] = 77;
        const float wf = 1.0f;
        memcpy(wb, &wf, 4);
        memcpy(wb + 4, &wf, 4);
        memset(sqb, 127, sizeof sqb);
        memset(skb, 127, sizeof skb);
        const int64_t D = e->q_dtype == LIG_FLOAT4_E2M1X2 ? 32 : 64;
        const int64_t qs[3] = {2, 2, D}, ks[3] = {5, 1, e->q_dtype == LIG_FLOAT4_E2M1X2 ? e->k_half : 64}, ws[2] = {2, 2};
        const int64_t sqs[3] = {2, 2, e->sq_last}, sks[3] = {5, 1, e->sk_last}, es[1] = {2}, ls[3] = {2, 1, 8},
                      is[3] = {2, 1, 4};
        tens T = {0};
        lig_tensor *q = tk(&T, lig_create_tensor(qb, e->q_dtype, 3, qs, NULL));
        lig_tensor *k = tk(&T, lig_create_tensor(kb, e->k_dtype, 3, ks, NULL));
        lig_tensor *w = tk(&T, lig_create_tensor(wb, LIG_FLOAT32, 2, ws, NULL));
        lig_tensor *sq = e->sq_null ? NULL : tk(&T, lig_create_tensor(sqb, e->sq_dtype, e->sq_last < 0 ? 2 : 3, sqs, NULL));
        lig_tensor *sk = tk(&T, lig_create_tensor(skb, e->sk_dtype, e->sk_last < 0 ? 2 : 3, sks, NULL));
        lig_tensor *te = tk(&T, lig_create_tensor(ke, LIG_INT64, 1, es, NULL));
        lig_tensor *lt = tk(&T, lig_create_tensor(logits, LIG_FLOAT32, 3, ls, NULL));
        lig_tensor *it = tk(&T, lig_create_tensor(idx, LIG_INT64, 3, is, NULL));
        lig_tensor *vt = tk(&T, lig_create_tensor(val, LIG_FLOAT32, 3, is, NULL));
        uint64_t wsz = 0;
        lig_executor *ex = NULL;
        const lig_status st = lig_quant_logits_get_workspace_size(q, k, w, sq, sk, NULL, NULL, te, "TND", "TND", true, false, lt,
                                                                  4, it, vt, NULL, &wsz, &ex);
        CHECK(st == e->want, "%s: status %d, want %d (%s)", e->name, (int)st, (int)e->want, lig_get_last_error());
        if (e->want != LIG_SUCCESS) {
            CHECK(ex == NULL, "%s: an executor on failure", e->name);
            CHECK(strstr(lig_get_last_error(), e->names) != NULL, "%s: message \"%s\" lacks \"%s\"", e->name,
                  lig_get_last_error(), e->names);
            int untouched = 1;
            for (size_t j = 0; j < sizeof logits / sizeof logits[0]; j++) untouched &= logits[j] == 7.0f;
            for (size_t j = 0; j < sizeof idx / sizeof idx[0]; j++) untouched &= idx[j] == 77;
            CHECK(untouched, "%s: an output was written", e->name);
        } else if (ex) {
            void *m = malloc(wsz ? wsz : 1);
            CHECK(lig_quant_logits(m, wsz, ex, NULL) == LIG_SUCCESS, "%s: phase 2: %s", e->name, lig_get_last_error());
            free(m);
            /* every value 0 (zero codes): the logits are +0 in the ranges */
            CHECK(logits[0] == 0.0f && isinf(logits[5]) && logits[8 + 2] == 0.0f && isinf(logits[8 + 3]),
                  "%s: logits %g %g %g %g", e->name, (double)logits[0], (double)logits[5], (double)logits[10],
                  (double)logits[11]);
        }
        tens_free(&T);
    }
}

/* Every kernel set's MXFP4 dots (the int8-unit families: vpdpbusd, vpmaddubsw) against the portable
 * ones (the scalar set, which has no family), bit for bit: logits and top-k, odd D (the last block
 * short), 1 to 65 heads (partial column panels), 1 to 4 query rows (next_n), key counts that leave
 * partial key tiles, dense and the fused paged cache, 1 and 2 threads, the default key split, none
 * and slices of 64 keys; scales in the units' exact range, and cases where some blocks lie outside
 * it (extreme and NaN bytes on a few keys: those blocks take the portable dots, the others the
 * units', in one stripe). */
LIG_TEST(quant_fp4_int8_units_match_portable) {
    typedef struct ucase {
        int64_t S1, S2, G, D;
        int tnd, paged, wide; /* wide: a few keys' scales far outside the units' range */
    } ucase;
    static const ucase cases[] = {
        {4, 203, 64, 128, 0, 0, 0}, {3, 150, 65, 130, 0, 0, 0}, {2, 97, 16, 66, 1, 0, 0}, {1, 300, 1, 34, 1, 0, 0},
        {4, 77, 3, 226, 0, 0, 1},   {2, 131, 64, 96, 0, 1, 0},  {3, 90, 8, 40, 0, 1, 0},  {4, 65, 17, 2, 0, 0, 0},
        {2, 140, 64, 128, 0, 1, 1}, {2, 700, 64, 128, 1, 0, 0},
    };
    static const int64_t slices[3] = {-1, 0, 64};
    char list[256];
    snprintf(list, sizeof list, "%s", lig_kernel_sets());
    int compared = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const ucase u = cases[ci];
        th_rng r = th_rng_make(0xf4u + ci);
        fcase c = {.B = u.tnd ? 1 : 2, .S1 = u.S1, .S2 = u.S2, .N2 = 1, .G = u.G, .D = u.D, .tnd = u.tnd,
                   .sdt = u.paged || ci % 2 ? LIG_INT32 : LIG_UINT8, .wdt = ci % 3 ? LIG_FLOAT32 : LIG_BFLOAT16};
        fcase_make(&r, &c, 112, 140);
        const int64_t rows = c.B * c.S1, W = c.S2, K = 8, nb = nblk_of(c.D);
        if (u.wide) /* every 7th key: its first block's scale at an extreme (NaN, 2^-127, 2^127, 2^-100) */
            for (int64_t key = 0; key < c.B * c.S2; key += 7) {
                static const uint8_t far[4] = {255, 0, 254, 27};
                c.skb[key * nb] = far[(key / 7) % 4];
            }
        int64_t ks[8], ke[8];
        for (int64_t i = 0; i < rows; i++) {
            ks[i] = th_rng_range(&r, 0, 9);
            ke[i] = th_rng_range(&r, W / 2, W);
        }
        const size_t lbytes = sizeof(float) * (size_t)(rows * W);
        float *want = malloc(lbytes), *got = malloc(lbytes);
        int64_t want_i[8 * 8], got_i[8 * 8];
        float want_v[8 * 8], got_v[8 * 8];
        char names[256];
        snprintf(names, sizeof names, "%s", list);
        int have_want = 0;
        for (char *name = strtok(names, ","); name != NULL; name = strtok(NULL, ",")) {
            const int portable = strcmp(name, "scalar") == 0;
            if (!CHECK(lig_set_kernel_set(name) == LIG_SUCCESS, "forcing %s: %s", name, lig_get_last_error())) continue;
            for (int th = 1; th <= (portable ? 1 : 2); th++)
                for (int sl = 0; sl < (portable ? 1 : 3); sl++) {
                    tens T = {0};
                    th_rng pr = th_rng_make(0x9a9e + ci); /* the same cache placement for every run */
                    lig_tensor *key, *sk, *table = NULL;
                    if (u.paged) paged_side(&T, &pr, &c, 16 + (int64_t)ci % 3 * 8, &key, &sk, &table);
                    else key_side(&T, &c, &key, &sk);
                    lig_testing_set_fwd_split_keys(slices[sl]);
                    const lig_status st = run_logits(&T, &c, query_side(&T, &c), key, sk, table, ks, ke, W,
                                                     portable ? want : got, K, portable ? want_i : got_i,
                                                     portable ? want_v : got_v, th);
                    lig_testing_set_tuning(NULL);
                    tens_free(&T);
                    if (!CHECK(st == LIG_SUCCESS, "case %zu set %s: %s", ci, name, lig_get_last_error())) continue;
                    if (portable) {
                        have_want = 1;
                        /* (the float64 reference has no fp32 overflow of a term: quant_fp4_scale_edges
                         * checks those values) */
                        if (!u.wide) check_logits(&c, ks, ke, W, want, K, want_i, want_v, "portable");
                        continue;
                    }
                    if (!have_want) continue;
                    size_t at = 0;
                    while (at < (size_t)(rows * W) && same_bits(got + at, want + at, sizeof(float))) at++;
                    CHECK(at == (size_t)(rows * W), "case %zu (D %lld, G %lld) set %s, %d threads, split %lld: logit %zu is %a, portable %a",
                          ci, (long long)c.D, (long long)c.G, name, th, (long long)slices[sl], at,
                          at < (size_t)(rows * W) ? (double)got[at] : 0.0, at < (size_t)(rows * W) ? (double)want[at] : 0.0);
                    CHECK(same_bits(got_i, want_i, sizeof(int64_t) * (size_t)(rows * K)) &&
                              same_bits(got_v, want_v, sizeof(float) * (size_t)(rows * K)),
                          "case %zu set %s, %d threads, split %lld: top-k differs from the portable one", ci, name, th,
                          (long long)slices[sl]);
                    compared++;
                }
        }
        lig_set_kernel_set(NULL);
        free(want);
        free(got);
        fcase_free(&c);
    }
    th_note("%d runs compared with the portable dots", compared);
}

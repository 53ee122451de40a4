/* The KL loss's teacher scores (see teacher_engine.h). fp32: the row's heads are converted and
 * transposed once (Q^T [Dt][N1], the GEMM's B panel), each block's key rows converted (A), one
 * GEMM. bf16: heads and the reduction padded with zeros (which add nothing) to multiples of the
 * set's bf16 col_pad and k_pad, Q^T in the VNNI pair layout, blocks of 64 slots padded with zero
 * keys. */
#include "backends/cpu/operators/teacher_engine.h"

#include <math.h>
#include <string.h>

#include "backends/cpu/operators/bf16_operands.h"
#include "core/dtype_convert.h"
#include "core/workspace.h"

#define NB16 64

typedef struct layout {
    int64_t np, dp; /* bf16: N1 and Dm + Dr padded; fp32: N1 and Dm + Dr */
    uint64_t q;     /* fp32: float[N1][Dt] staging; bf16: bf16[np][dp] */
    uint64_t qt;    /* fp32: float[Dt][N1]; bf16: pairs [dp/2][np] */
    uint64_t kp;    /* fp32: float[block][Dt]; bf16: bf16[NB16][dp] */
    uint64_t total;
} layout;

static layout layout_for(const lig_teacher_ctx *c) {
    layout l;
    uint64_t at = 0;
    const uint64_t dt = lig_size_add((uint64_t)c->Dm, (uint64_t)c->Dr);
    if (c->bf16) {
        l.np = lig_bf16_pad((uint64_t)c->N1, c->ks->bf16->col_pad);
        l.dp = lig_bf16_pad(dt, c->ks->bf16->k_pad);
        l.q = lig_ws_take(&at, lig_size_mul3(2, (uint64_t)l.np, (uint64_t)l.dp));
        l.qt = lig_ws_take(&at, lig_size_mul3(2, (uint64_t)l.np, (uint64_t)l.dp));
        l.kp = lig_ws_take(&at, lig_size_mul(2 * NB16, (uint64_t)l.dp));
    } else {
        l.np = c->N1;
        l.dp = (int64_t)dt;
        l.q = lig_ws_take(&at, lig_size_mul3(4, (uint64_t)c->N1, dt));
        l.qt = lig_ws_take(&at, lig_size_mul3(4, (uint64_t)c->N1, dt));
        l.kp = lig_ws_take(&at, lig_size_mul3(4, (uint64_t)c->block, dt));
    }
    l.total = at;
    return l;
}

void lig_teacher_configure(lig_teacher_ctx *c) {
    c->bf16 = c->dtype == LIG_BFLOAT16 && c->ks->bf16 != NULL && c->N1 >= c->ks->bf16->min_group;
    c->block = c->bf16 ? NB16 : c->ks->f32->grad_block;
    c->ld = c->bf16 ? lig_bf16_pad((uint64_t)c->N1, c->ks->bf16->col_pad) : c->N1;
}

uint64_t lig_teacher_scratch_bytes(const lig_teacher_ctx *c) { return layout_for(c).total; }

void lig_teacher_begin_row(const lig_teacher_ctx *c, char *s, const char *q, const char *qr) {
    const layout L = layout_for(c);
    const int64_t N1 = c->N1, Dm = c->Dm, Dr = c->Dr, esize = c->dtype == LIG_FLOAT32 ? 4 : 2;
    if (c->bf16) {
        uint16_t *row = (uint16_t *)(void *)(s + L.q);
        for (int64_t h = 0; h < L.np; h++) {
            uint16_t *dst = row + h * L.dp;
            if (h >= N1) {
                memset(dst, 0, sizeof(uint16_t) * (size_t)L.dp);
                continue;
            }
            lig_bf16_copy_row(dst, q + 2 * h * c->q_head, c->q_dim, Dm, Dm);
            if (Dr > 0) lig_bf16_copy_row(dst + Dm, qr + 2 * h * c->qr_head, c->qr_dim, Dr, L.dp - Dm);
            else memset(dst + Dm, 0, sizeof(uint16_t) * (size_t)(L.dp - Dm));
        }
        lig_bf16_transpose_pairs(row, L.np, L.dp, (uint32_t *)(void *)(s + L.qt));
        return;
    }
    float *rows = (float *)(void *)(s + L.q), *qt = (float *)(void *)(s + L.qt);
    const int64_t Dt = L.dp;
    for (int64_t h = 0; h < N1; h++) {
        c->ks->f32->load_row(c->dtype, q + h * c->q_head * esize, c->q_dim, Dm, rows + h * Dt);
        if (Dr > 0) c->ks->f32->load_row(c->dtype, qr + h * c->qr_head * esize, c->qr_dim, Dr, rows + h * Dt + Dm);
    }
    for (int64_t h = 0; h < N1; h++)
        for (int64_t d = 0; d < Dt; d++) qt[d * N1 + h] = rows[h * Dt + d];
}

void lig_teacher_scores(const lig_teacher_ctx *c, char *s, int64_t n, const char *const *key,
                        const char *const *key_rope, float *out) {
    const layout L = layout_for(c);
    const int64_t Dm = c->Dm, Dr = c->Dr;
    if (L.dp == 0 || c->N1 == 0) { /* no dims: every score is 0; no heads: nothing to score */
        memset(out, 0, sizeof(float) * (size_t)(n * c->ld));
        return;
    }
    if (c->bf16) {
        uint16_t *kb = (uint16_t *)(void *)(s + L.kp);
        for (int64_t i = 0; i < n; i++) {
            lig_bf16_copy_row(kb + i * L.dp, key[i], c->k_dim, Dm, Dm);
            if (Dr > 0) lig_bf16_copy_row(kb + i * L.dp + Dm, key_rope[i], c->kr_dim, Dr, L.dp - Dm);
            else memset(kb + i * L.dp + Dm, 0, sizeof(uint16_t) * (size_t)(L.dp - Dm));
        }
        if (n < NB16) memset(kb + n * L.dp, 0, sizeof(uint16_t) * (size_t)((NB16 - n) * L.dp));
        lig_bf16_gemm(&c->ks->bf16->gemm, NB16, L.np, L.dp, kb, L.dp, (const uint16_t *)(const void *)(s + L.qt),
                      L.np, out, c->ld, false);
        return;
    }
    float *kp = (float *)(void *)(s + L.kp);
    const int64_t Dt = L.dp;
    for (int64_t i = 0; i < n; i++) {
        c->ks->f32->load_row(c->dtype, key[i], c->k_dim, Dm, kp + i * Dt);
        if (Dr > 0) c->ks->f32->load_row(c->dtype, key_rope[i], c->kr_dim, Dr, kp + i * Dt + Dm);
    }
    lig_f32_gemm(&c->ks->f32->gemm, n, c->N1, Dt, kp, Dt, 1, (const float *)(const void *)(s + L.qt), c->N1, out,
                 c->ld, false);
}

void lig_teacher_mass(const lig_teacher_ctx *c, int64_t n, const float *s, float scale, const float *m, const float *z,
                      float *mass) {
    for (int64_t i = 0; i < n; i++) {
        const float *row = s + i * c->ld;
        float acc = 0.0f;
        for (int64_t h = 0; h < c->N1; h++) { /* fixed order: heads ascending, each term rounded as written */
            const float arg = scale * row[h] - m[h];
            acc += expf(arg) / z[h];
        }
        mass[i] = acc;
    }
}

/* The demo's main attention (mla_attention.h): its weights, and its softmax statistics over a
 * sparse selection or over every visible key. */
#include "mla_attention.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static float *alloc_floats(int64_t n) {
    float *p = calloc((size_t)(n > 0 ? n : 1), sizeof(float));
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

/* out[n][f] = gain * sum_i E[n][i] * M[i][f]   (E: N x r, M: r x F) */
static void embed(const float *E, const float *M, int64_t N, int64_t r, int64_t F, double gain, float *out) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t f = 0; f < F; f++) {
            double s = 0;
            for (int64_t i = 0; i < r; i++) s += (double)E[n * r + i] * M[i * F + f];
            out[n * F + f] = (float)(gain * s);
        }
}

void mla_init(mla_attention *a, int64_t F, int64_t N1, int64_t Dm, int64_t Dr, int64_t r, double tau, double spread,
              float (*gaussian)(void)) {
    const int64_t Dk = Dm + Dr;
    if (r > Dk) r = Dk; /* the code must fit in the key dims */
    *a = (mla_attention){.F = F, .N1 = N1, .Dm = Dm, .Dr = Dr, .scale = (float)(1.0 / sqrt((double)Dk))};
    a->Wq = alloc_floats(N1 * Dm * F);
    a->Wqr = alloc_floats(N1 * Dr * F);
    a->Wkv = alloc_floats(Dm * F);
    a->Wkr = alloc_floats(Dr * F);

    /* E: r orthonormal directions in the Dk key dims (Gram-Schmidt of gaussian columns), rows 0..Dm-1
     * in the latent, the rest in the rope dims */
    float *E = alloc_floats(Dk * r);
    for (int64_t i = 0; i < Dk * r; i++) E[i] = gaussian();
    for (int64_t c = 0; c < r; c++) {
        for (int64_t p = 0; p < c; p++) {
            double d = 0;
            for (int64_t n = 0; n < Dk; n++) d += (double)E[n * r + c] * E[n * r + p];
            for (int64_t n = 0; n < Dk; n++) E[n * r + c] -= (float)(d * E[n * r + p]);
        }
        double norm = 0;
        for (int64_t n = 0; n < Dk; n++) norm += (double)E[n * r + c] * E[n * r + c];
        for (int64_t n = 0; n < Dk; n++) E[n * r + c] = (float)(E[n * r + c] / sqrt(norm));
    }
    /* the key side: b_s = B x_s along E */
    float *A = alloc_floats(r * F), *B = alloc_floats(r * F), *Qh = alloc_floats(r * F);
    for (int64_t i = 0; i < r * F; i++) {
        A[i] = gaussian() / sqrtf((float)F);
        B[i] = gaussian() / sqrtf((float)F);
    }
    embed(E, B, Dm, r, F, 1.0, a->Wkv);
    embed(E + Dm * r, B, Dr, r, F, 1.0, a->Wkr);
    /* the query side: head h reads a_h = Q_h x_t along E with the gain that makes
     * scale * (q . kv + qr . kr) = (a_h . b_s) / tau; Q_h keeps unit variance per code dim */
    const double gain = 1.0 / (tau * (double)a->scale), norm = 1.0 / sqrt(1.0 + spread * spread);
    for (int64_t h = 0; h < N1; h++) {
        for (int64_t i = 0; i < r * F; i++) Qh[i] = (float)(norm * (A[i] + spread * gaussian() / sqrt((double)F)));
        embed(E, Qh, Dm, r, F, gain, a->Wq + h * Dm * F);
        embed(E + Dm * r, Qh, Dr, r, F, gain, a->Wqr + h * Dr * F);
    }
    free(E);
    free(A);
    free(B);
    free(Qh);
}

void mla_free(mla_attention *a) {
    free(a->Wq);
    free(a->Wqr);
    free(a->Wkv);
    free(a->Wkr);
}

/* the fp32 logit of head h (q, qr: that head's rows) for key row s, summed over the latent dims,
 * then the rope dims, in dim order (the order mla_dense_row adds them in) */
static float logit(const mla_attention *a, const float *q, const float *qr, const float *kv, const float *kr,
                   int64_t s) {
    float d = 0.0f;
    for (int64_t i = 0; i < a->Dm; i++) d += q[i] * kv[s * a->Dm + i];
    for (int64_t i = 0; i < a->Dr; i++) d += qr[i] * kr[s * a->Dr + i];
    return a->scale * d;
}

void mla_sparse_stats(const mla_attention *a, const float *q, const float *qr, const float *kv, const float *kr,
                      const int32_t *idx, int64_t K, int64_t visible, float *softmax_max, float *softmax_sum) {
    for (int64_t h = 0; h < a->N1; h++) {
        const float *qh = q + h * a->Dm, *qrh = qr + h * a->Dr;
        float m = -INFINITY;
        for (int64_t j = 0; j < K; j++)
            if (idx[j] >= 0 && idx[j] < visible) m = fmaxf(m, logit(a, qh, qrh, kv, kr, idx[j]));
        double z = 0;
        for (int64_t j = 0; j < K; j++)
            if (idx[j] >= 0 && idx[j] < visible) z += exp((double)(logit(a, qh, qrh, kv, kr, idx[j]) - m));
        softmax_max[h] = isfinite(m) ? m : 0.0f;
        softmax_sum[h] = z > 0 ? (float)z : 1.0f;
    }
}

void mla_dense_row(const mla_attention *a, const float *q, const float *qr, const float *keysT, int64_t S_ld,
                   int64_t visible, float *logits, double *prob, float *softmax_max, float *softmax_sum) {
    const int64_t Dk = a->Dm + a->Dr;
    for (int64_t s = 0; s < visible; s++) prob[s] = 0;
    for (int64_t h = 0; h < a->N1; h++) {
        /* logits over contiguous keys, one dim at a time (a loop the compiler vectorises) */
        for (int64_t s = 0; s < visible; s++) logits[s] = 0.0f;
        for (int64_t i = 0; i < Dk; i++) {
            const float c = i < a->Dm ? q[h * a->Dm + i] : qr[h * a->Dr + (i - a->Dm)];
            const float *kt = keysT + i * S_ld;
            for (int64_t s = 0; s < visible; s++) logits[s] += c * kt[s];
        }
        float m = -INFINITY;
        for (int64_t s = 0; s < visible; s++) {
            logits[s] *= a->scale;
            m = fmaxf(m, logits[s]);
        }
        double z = 0;
        for (int64_t s = 0; s < visible; s++) {
            logits[s] = (float)exp((double)(logits[s] - m)); /* now the unnormalised probability */
            z += logits[s];
        }
        softmax_max[h] = m;
        softmax_sum[h] = (float)z;
        const double inv = 1.0 / (z * (double)a->N1);
        for (int64_t s = 0; s < visible; s++) prob[s] += logits[s] * inv;
    }
}

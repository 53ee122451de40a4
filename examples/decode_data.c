/* The decode demo's keys and queries (decode_data.h). */
#include "decode_data.h"

#include <math.h>
#include <stdlib.h>

#include "demo_common.h"

/* unit variance, cheaper than gaussian(): the queries' per-head noise (N1 * D values a token) */
static float uniform_noise(void) { return (float)((uniform01() - 0.5) * 3.4641016151377544); }
static int64_t below(int64_t n) { return (int64_t)(uniform01() * (double)n); } /* in [0, n) */

void decode_data_init(decode_data *m, int64_t D, int64_t r, int64_t N1, int64_t anchors) {
    *m = (decode_data){.D = D, .r = r, .N1 = N1, .anchors = anchors < DECODE_MAX_ANCHORS ? anchors : DECODE_MAX_ANCHORS};
    m->u = xcalloc((size_t)D, sizeof(float));
    m->L = xcalloc((size_t)(D * r), sizeof(float));
    m->g = xcalloc((size_t)D, sizeof(float));
    m->z = xcalloc((size_t)r, sizeof(float));
    m->eta = xcalloc((size_t)D, sizeof(float));
    double norm = 0;
    for (int64_t d = 0; d < D; d++) {
        m->u[d] = gaussian();
        norm += (double)m->u[d] * m->u[d];
    }
    for (int64_t d = 0; d < D; d++) {
        m->u[d] = (float)(m->u[d] / sqrt(norm));
        m->g[d] = d % 32 == 7 ? 3.0f : 1.0f;
    }
    for (int64_t i = 0; i < D * r; i++) m->L[i] = gaussian() / sqrtf((float)r);
}

void decode_data_free(decode_data *m) {
    free(m->u);
    free(m->L);
    free(m->g);
    free(m->z);
    free(m->eta);
}

/* out = gain * L z for a fresh z ~ N(0, I_r) */
static void low_rank_sample(decode_data *m, float gain, float *out) {
    for (int64_t i = 0; i < m->r; i++) m->z[i] = gaussian();
    for (int64_t d = 0; d < m->D; d++) {
        float s = 0.0f;
        for (int64_t i = 0; i < m->r; i++) s += m->L[d * m->r + i] * m->z[i];
        out[d] = gain * s;
    }
}

float decode_data_key(decode_data *m, float *k) {
    const float shared = 0.8f * sqrtf((float)m->D) * (1.0f + 0.25f * gaussian());
    low_rank_sample(m, 1.0f, k);
    double n = 0;
    for (int64_t d = 0; d < m->D; d++) {
        k[d] = m->g[d] * (shared * m->u[d] + k[d] + 0.5f * gaussian());
        n += (double)k[d] * k[d];
    }
    return (float)(1.0 / sqrt(n));
}

void decode_data_query(decode_data *m, const float *keys, const float *inv_norm, int64_t pos, float *q, float *w) {
    const int64_t D = m->D, A = pos > 0 ? m->anchors : 0;
    int64_t anchor[DECODE_MAX_ANCHORS];
    for (int64_t j = 0; j < A; j++) anchor[j] = j == 0 ? pos - 1 - below(pos < 32 ? pos : 32) : below(pos);
    low_rank_sample(m, 0.5f, m->eta);
    const float root_d = sqrtf((float)D);
    for (int64_t h = 0; h < m->N1; h++) {
        float *qh = q + h * D;
        const float shared = h % 2 ? -0.3f * root_d : 0.3f * root_d;
        for (int64_t d = 0; d < D; d++) qh[d] = m->eta[d] + shared * m->u[d] + 0.5f * uniform_noise();
        for (int64_t j = 0; j < A; j++) {
            if (uniform01() < 0.5) continue;
            const float c = fabsf(gaussian()) * root_d * inv_norm[anchor[j]];
            const float *ka = keys + anchor[j] * D;
            for (int64_t d = 0; d < D; d++) qh[d] += c * ka[d];
        }
        w[h] = (0.5f + 0.5f * gaussian()) / sqrtf((float)m->N1);
    }
}

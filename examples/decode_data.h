/* The decode demo's data (decode_indexer.c): keys and queries shaped like a trained indexer's,
 * drawn from demo_common.h's seeded generator.
 *
 * Keys share a direction and a low-rank structure, with a few outlier channels:
 *   k_s = g .* ( m (1 + 0.25 xi_s) u  +  L z_s  +  0.5 n_s )
 * u a unit vector, m = 0.8 sqrt(D), L a D x r matrix (entries N(0, 1/r)), z_s ~ N(0, I_r),
 * n_s ~ N(0, I_D), xi_s ~ N(0, 1), g = 1 except every 32nd channel, 3 (outliers stretch a token's
 * amax, hence its quantization step). The query of token t attends to a few earlier tokens, its
 * anchors a_j (one among the 32 before it, the others anywhere before it); head h is
 *   q_th = sqrt(D) sum_j c_thj k_aj / |k_aj|  +  0.5 L zeta_t  +- 0.3 sqrt(D) u  +  0.5 nu_th
 * with c_thj = |N(0,1)| or, with probability 1/2, 0 (each head follows about half the anchors),
 * the sign of u alternating over the heads, zeta_t ~ N(0, I_r) shared by the heads, nu_th uniform
 * noise of unit variance; its weight w_th = (0.5 + 0.5 N(0,1)) / sqrt(N1) (some heads negative, as
 * the weights projection's output can be). */
#ifndef LIG_EXAMPLES_DECODE_DATA_H
#define LIG_EXAMPLES_DECODE_DATA_H

#include <stdint.h>

#define DECODE_MAX_ANCHORS 16

typedef struct decode_data {
    int64_t D, r, N1, anchors;
    float *u, *L, *g; /* [D], [D, r], [D] */
    float *z, *eta;   /* scratch: [r], [D] */
} decode_data;

/* anchors is capped at DECODE_MAX_ANCHORS */
void decode_data_init(decode_data *m, int64_t D, int64_t r, int64_t N1, int64_t anchors);
void decode_data_free(decode_data *m);
/* a fresh key k [D]; returns 1 / |k| */
float decode_data_key(decode_data *m, float *k);
/* the query q [N1, D] and weights w [N1] of the token at position pos (>= 0) of a sequence whose
 * keys [0, pos) are keys [pos, D] with their 1 / |k| in inv_norm */
void decode_data_query(decode_data *m, const float *keys, const float *inv_norm, int64_t pos, float *q, float *w);

#endif

/* The demo's main attention: a small, fixed MLA-like attention (N1 query heads, one shared key
 * latent of Dm dims plus Dr decoupled "rope" dims, N2 = 1), the model whose attention the indexer
 * of train_indexer.c learns to predict. Plain C, single-threaded, deterministic.
 *
 * Its weights map F-dim token features x to
 *   query latent   q[t,h,:] = Wq[h] x_t   (Dm)     query rope   qr[t,h,:] = Wqr[h] x_t   (Dr)
 *   key latent     kv[s,:]  = Wkv x_s     (Dm)     key rope     kr[s,:]   = Wkr x_s      (Dr)
 * and head h attends with softmax over the visible keys of scale * (q . kv + qr . kr),
 * scale = 1/sqrt(Dm + Dr). The weights are built with structure the indexer can learn: every key
 * carries an r-dim relevance code b_s = B x_s, embedded in the Dm + Dr key dims along orthonormal
 * directions E, and head h reads the code a_h = Q_h x_t of its query along the same directions,
 * so its score is (a_h . b_s) / tau. The heads' query maps Q_h = A + spread * N_h share A and differ
 * by N_h; with tau = 0.5 each head puts most of its mass on a few dozen of thousands of keys. The
 * rope dims carry part of the code without a rotation (the indexer sees no positions). */
#ifndef LIG_EXAMPLES_MLA_ATTENTION_H
#define LIG_EXAMPLES_MLA_ATTENTION_H

#include <stdint.h>

typedef struct mla_attention {
    int64_t F, N1, Dm, Dr;
    float scale;    /* the score scale, 1/sqrt(Dm + Dr), as lig_sparse_indexer_grad_kl_loss gets it */
    float *Wq, *Wqr; /* [N1*Dm, F], [N1*Dr, F]: row h*Dm + i is dim i of head h */
    float *Wkv, *Wkr; /* [Dm, F], [Dr, F] */
} mla_attention;

/* Draws the weights (gaussian() gives N(0,1) samples; the demo's seeded generator). */
void mla_init(mla_attention *a, int64_t F, int64_t N1, int64_t Dm, int64_t Dr, int64_t r, double tau, double spread,
              float (*gaussian)(void));
void mla_free(mla_attention *a);

/* Softmax statistics of each head over the counted slots of one query row (the row's sparse
 * attention): idx[0..K) are key rows of the batch, -1 padding, a key s counts when 0 <= s < visible.
 * softmax_max[h] = max over counted slots of the fp32 logit scale * (q . kv + qr . kr), and
 * softmax_sum[h] = sum of exp(logit - max) (accumulated in double). A row without counted slots
 * gets max 0 and sum 1 (it adds nothing to the loss). q: [N1, Dm], qr: [N1, Dr] of this row. */
void mla_sparse_stats(const mla_attention *a, const float *q, const float *qr, const float *kv, const float *kr,
                      const int32_t *idx, int64_t K, int64_t visible, float *softmax_max, float *softmax_sum);

/* Dense attention of one query row over its visible keys 0..visible-1: the statistics of each
 * head over all of them (as mla_sparse_stats with every visible key selected) and the head mean of
 * the probabilities, prob[s] = (1/N1) sum_h P[h,s]. keysT: [Dm + Dr, S_ld] the key latent and key
 * rope transposed (kv dims, then kr dims), so the logits of a head are one pass over contiguous
 * keys; logits: scratch of visible floats. */
void mla_dense_row(const mla_attention *a, const float *q, const float *qr, const float *keysT, int64_t S_ld,
                   int64_t visible, float *logits, double *prob, float *softmax_max, float *softmax_sum);

#endif

/*
 * The fused KL loss (lig_sparse_indexer_grad_kl_loss, docs/contract.md 2.5) for the libFuzzer targets:
 * a problem decoded from the input (tests/kl_loss_case.h builds its data and tensors, the same
 * cases as the C tests), its defects, and the lig call judged against the float64 reference.
 * fuzz-lig-fwd runs it as one of its operators; fuzz-aclnn decodes the same problems for
 * aclnnSparseLightningIndexerGradKLLoss.
 */
#ifndef LIG_FUZZ_KL_LOSS_H
#define LIG_FUZZ_KL_LOSS_H

#include <stddef.h>

#include "fuzz_input.h"
#include "kl_loss_case.h"

/* Dims (zeros included: B, S1, S2, N1, D, K, the main heads, Dm; rope or not), dtypes, BSND with
 * or without lengths or TND, sparse_mode 0 / 3 with a band, statistics dense or sparse, max/sum
 * or lse, the target (head_mean, l1, cann), the short index form, index and d_weights dtypes,
 * determinism; then the data from a seed read from the input (indices with padding, duplicates
 * and masked keys; absurd values in invalid rows). With `cann`, CANN's operator's problem: target
 * LIG_KL_TARGET_CANN, softmax_max / softmax_sum. Either way, at times V2: sinks (one of them -inf at
 * times), or V2 without them (c->d.sinks, c->d.v2). */
void fz_decode_lkcase(fz_in *in, lkcase *c, int cann, char *desc, size_t desc_size);

/* One call of lig_sparse_indexer_grad_kl_loss with up to two decoded defects; the label receives the
 * call in words. */
void fz_kl_loss(fz_in *in, const char *env, char *label, size_t label_size);

#endif /* LIG_FUZZ_KL_LOSS_H */

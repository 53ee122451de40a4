/*
 * lig: the DeepSeek-V3.2 sparse-attention lightning indexer, in C.
 *
 * One public header. The operator contract (formulas, shapes, layouts, which slots count,
 * error codes) is docs/contract.md; the README summarises it.
 *
 * Protocol (as aclnn): phase 1 (`*_get_workspace_size`) validates every argument, reads the
 * host-side sequence-length arrays, and returns the exact workspace size plus an executor;
 * phase 2 runs the executor inside a caller-owned workspace, allocates nothing proportional
 * to the problem, and consumes (frees) the executor whether it succeeds or not.
 * On failure nothing is written to any output and `lig_get_last_error()` names the
 * parameter, what was expected and what was received.
 */
#ifndef LIG_H
#define LIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LIG_VERSION_MAJOR 0
#define LIG_VERSION_MINOR 1
#define LIG_VERSION_PATCH 0
#define LIG_VERSION_STRING "0.1.0"

/* Tensors have at most this many dimensions. */
#define LIG_MAX_DIMS 8

#if defined(_WIN32) && defined(LIG_SHARED_BUILD)
#define LIG_API __declspec(dllexport)
#elif defined(__GNUC__) || defined(__clang__)
#define LIG_API __attribute__((visibility("default")))
#else
#define LIG_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lig_status {
    LIG_SUCCESS = 0,
    LIG_ERR_PARAM_NULLPTR = 161001,
    LIG_ERR_PARAM_INVALID = 161002,
    LIG_ERR_RUNTIME = 361001,
    LIG_ERR_INNER = 561000
} lig_status;

typedef enum lig_dtype {
    LIG_FLOAT32 = 0,
    LIG_FLOAT16 = 1,
    LIG_BFLOAT16 = 2,
    LIG_INT32 = 3,
    LIG_INT64 = 4,
    LIG_FLOAT8_E4M3FN = 5, /* OCP FP8 E4M3 "fn": no infinities, S.1111.111 is NaN, max 448 */
    LIG_INT8 = 6,          /* signed, two's complement (symmetric quantization) */
    LIG_UINT8 = 7,         /* raw bytes (packed caches; e8m0 scale bytes) */
    LIG_FLOAT4_E2M1X2 = 8  /* two OCP FP4 E2M1 codes a byte, element 2j in the low nibble (MXFP4 values) */
} lig_dtype;

/* Where a tensor's data lives: the kinds of memory lig knows (as DLPack lists device types), whether
 * or not this build has a backend for them. Phase 1 picks the backend from the device of the tensors
 * (docs/contract.md, "Device tensors"); a kind this build has no backend for is refused by name. */
typedef enum lig_device {
    LIG_DEVICE_HOST = 0, /* host memory: the CPU backend */
    LIG_DEVICE_CUDA = 1, /* CUDA device memory: the CUDA backend (a build with -DLIG_CUDA=ON) */
    LIG_DEVICE_ROCM = 2, /* AMD GPU memory (HIP): no backend yet */
    LIG_DEVICE_ASCEND = 3 /* Ascend NPU memory: no backend yet */
} lig_device;

/* Opaque descriptor of a strided view; it never owns the data. */
typedef struct lig_tensor lig_tensor;
/* Opaque plan made by phase 1 and consumed by phase 2. */
typedef struct lig_executor lig_executor;

/*
 * Describes `data` as a tensor of `ndim` (0..LIG_MAX_DIMS) dimensions.
 * `strides` are in elements and must be >= 0; NULL means contiguous row-major.
 * `data` may be NULL only when the tensor has no elements.
 * Returns NULL (and sets the last error) on bad arguments.
 */
LIG_API lig_tensor *lig_create_tensor(void *data, lig_dtype dtype, int64_t ndim,
                                      const int64_t *shape, const int64_t *strides);
/*
 * As lig_create_tensor, for memory on `device` (`device_index`: the device ordinal; 0 and
 * only 0 for LIG_DEVICE_HOST). lig_create_tensor(...) is lig_create_tensor_on(..., LIG_DEVICE_HOST, 0).
 * Every tensor of one call lives on one device, except the actual_seq_lengths_* arrays, which
 * phase 1 reads and which are therefore always host tensors.
 */
LIG_API lig_tensor *lig_create_tensor_on(void *data, lig_dtype dtype, int64_t ndim, const int64_t *shape,
                                         const int64_t *strides, lig_device device, int device_index);
LIG_API void lig_destroy_tensor(lig_tensor *tensor);

/*
 * LightningIndexerGrad, phase 1. Layout "BSND" or "TND".
 *   query  [B,S1,N1,D] | [T1,N1,D]        key  [B,S2,N2,D] | [T2,N2,D]
 *   sparse_indices, dy  [B,S1,N2,K] | [T1,N2,K]  (or without the N2 axis when N2 == 1)
 *   weights [B,S1,N1] | [T1,N1]
 *   actual_seq_lengths_*: optional [B] lengths (BSND); required [B] cumulative ends (TND)
 * Outputs d_query, d_key, d_weights are shaped like query, key, weights; d_query and d_key
 * take the query dtype, d_weights the query dtype or FLOAT32.
 * sparse_mode 0 (band around the diagonal) or 3 (right-down causal); pre/next_tokens >= 0,
 * INT64_MAX for no band. head_num must be N1 or 0.
 */
LIG_API lig_status lig_indexer_grad_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *dy,
    const lig_tensor *sparse_indices, const lig_tensor *weights,
    const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key,
    int64_t head_num, const char *layout, int64_t sparse_mode,
    int64_t pre_tokens, int64_t next_tokens, bool deterministic,
    const lig_tensor *d_query, const lig_tensor *d_key, const lig_tensor *d_weights,
    uint64_t *workspace_size, lig_executor **executor);

/* LightningIndexerGrad, phase 2. `stream` is NULL for the CPU backend. */
LIG_API lig_status lig_indexer_grad(void *workspace, uint64_t workspace_size,
                                    lig_executor *executor, void *stream);

/*
 * LightningIndexer (forward), phase 1: scores I = sum_h w * ReLU(q . k) over the visible keys
 * of each (b, t, g) and selects the sparse_count best, by descending score, ties to the lower
 * key index; -1 (and -inf values) in slots left over when fewer keys are visible.
 *   sparse_indices out: [B,S1,N2,K] | [T1,N2,K] (or without N2 when N2 == 1), INT32 or INT64,
 *                       K = sparse_count >= 1
 *   sparse_values out:  same shape, query dtype or FLOAT32; may be NULL
 * Query, key, weights, lengths, layout and masks as for the backward.
 */
LIG_API lig_status lig_indexer_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights,
    const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key,
    const char *layout, int64_t sparse_count, int64_t sparse_mode,
    int64_t pre_tokens, int64_t next_tokens,
    const lig_tensor *sparse_indices, const lig_tensor *sparse_values /* may be NULL */,
    uint64_t *workspace_size, lig_executor **executor);

/*
 * LightningIndexer over a paged key cache, phase 1 (phase 2 is lig_indexer). As
 * lig_indexer_get_workspace_size, except that the keys are read from
 *   key_cache   [num_blocks, block_size, N2, D], the query's dtype
 * through
 *   block_table [B, max_blocks_per_seq], INT32 or INT64: key s of batch b is
 *               key_cache[block_table[b, s / block_size], s % block_size]
 * actual_seq_lengths_key is required and holds per-batch key lengths (not cumulative), each at
 * most max_blocks_per_seq * block_size, whatever the query's layout ("BSND" or "TND"; for TND,
 * B is the length of actual_seq_lengths_query). Indices written are batch-local positions s.
 * The table entries of the blocks that hold keys [0, Lk) must lie in [0, num_blocks): phase 2
 * checks them before writing anything (LIG_ERR_PARAM_INVALID otherwise); other entries are
 * never read.
 */
LIG_API lig_status lig_indexer_paged_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key_cache, const lig_tensor *block_table, const lig_tensor *weights,
    const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key, const char *layout,
    int64_t sparse_count, int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
    const lig_tensor *sparse_indices, const lig_tensor *sparse_values /* may be NULL */, uint64_t *workspace_size,
    lig_executor **executor);

/* LightningIndexer, phase 2. */
LIG_API lig_status lig_indexer(void *workspace, uint64_t workspace_size,
                               lig_executor *executor, void *stream);

/*
 * QuantLightningIndexer, phase 1 (CANN's aclnnQuantLightningIndexer in lig's style; contract 2.4):
 * the forward's top-k over the scores
 *   I[t,g,s] = sum over the heads h of key head g of  w[t,h] * ReLU( sq[t,h] * sk[s,g] * (q[t,h,:] . k[s,g,:]) )
 *   query   [B,S1,N1,D] | [T1,N1,D]            FLOAT8_E4M3FN, INT8, or FLOAT4_E2M1X2 (MXFP4: the last
 *                                              extent is D/2 bytes)
 *   key     [B,S2,N2,D] | [T2,N2,D] | paged [num_blocks,block_size,N2,D], query's dtype
 *   weights [B,S1,N1] | [T1,N1]                FLOAT32, FLOAT16 or BFLOAT16
 *   query_dequant_scale  like weights, FLOAT32 or FLOAT16; NULL: every sq is 1 (the scale folded into w)
 *   key_dequant_scale    like key without D, FLOAT32 or FLOAT16
 *   MXFP4: both scales required, one e8m0 byte per 32 values of a head, UINT8 [.., ceil(D/32)]
 *     (up to whole words) or INT32 [.., ceil(D/128)] (four bytes a word, block 4i+m in bits 8m..;
 *     a last axis of one may be left out); each block an exact integer dot scaled once
 *     (docs/contract.md 2.4, "MXFP4 queries and keys")
 *   block_table          layout_key "PA_BSND" only (as lig_indexer_paged_get_workspace_size); else NULL
 *   query_quant_mode, key_quant_mode: 0 (per token and head), the only mode
 *   layout_query "BSND" or "TND"; layout_key the same as layout_query, or "PA_BSND"
 *   sparse_indices / sparse_values out as for lig_indexer_get_workspace_size; sparse_values may be
 *   NULL, else FLOAT32, FLOAT16 or BFLOAT16.
 * Selection, lengths, sparse_mode and the band as for the forward. The products are exact and
 * the sums fp32 in a fixed order (docs/contract.md 2.4): bitwise reproducible for a kernel set.
 */
LIG_API lig_status lig_quant_indexer_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights,
    const lig_tensor *query_dequant_scale /* may be NULL */, const lig_tensor *key_dequant_scale,
    const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key,
    const lig_tensor *block_table /* PA_BSND only */, int64_t query_quant_mode, int64_t key_quant_mode,
    const char *layout_query, const char *layout_key, int64_t sparse_count, int64_t sparse_mode,
    int64_t pre_tokens, int64_t next_tokens, const lig_tensor *sparse_indices,
    const lig_tensor *sparse_values /* may be NULL */, uint64_t *workspace_size, lig_executor **executor);

/* QuantLightningIndexer, phase 2 (runs only executors of lig_quant_indexer_get_workspace_size). */
LIG_API lig_status lig_quant_indexer(void *workspace, uint64_t workspace_size,
                                     lig_executor *executor, void *stream);

/*
 * The quantized indexer's logits (DeepGEMM's fp8_mqa_logits / fp8_paged_mqa_logits; contract 2.6),
 * phase 1: lig_quant_indexer's scores I over per-row key ranges, as fp32 logits and/or their top-k.
 *   query, key, weights, the two scales, block_table, layout_query, layout_key: as for
 *     lig_quant_indexer_get_workspace_size (the same formula and order: a row's scores are that
 *     operator's, bit for bit, for the same keys and kernel set)
 *   key_start (NULL: all 0), key_end: INT32 or INT64 host tensors [B,S1] (BSND query) or [T1]
 *     (TND), read here: row r scores the keys s with key_start[r] <= s < key_end[r], positions within
 *     its batch's keys (BSND [0,S2), paged [0, max_blocks_per_seq * block_size)) or, TND, within the
 *     T2 keys (one sequence; a paged cache then has one table row)
 *   logits (may be NULL): FLOAT32 [B,S1,N2,W] | [T1,N2,W] (or without N2 when N2 == 1), any strides;
 *     column s holds key s (W >= the largest key_end), or, compressed, column j key key_start[r] + j
 *     (W >= the longest range); clean_logits: -inf in every column a row does not score, else those
 *     columns are left as they are
 *   sparse_count, sparse_indices, sparse_values (may be NULL): the top-k of each row's range, as
 *     lig_quant_indexer's outputs; sparse_indices NULL: no top-k (sparse_count ignored, sparse_values
 *     must be NULL). At least one of logits and sparse_indices.
 *   schedule (may be NULL): a paged cache's work split, INT32 [W+1,2] as made by
 *     lig_quant_logits_schedule (logits only); the results are the same bytes with or without one.
 * Paged table entries of the blocks holding keys a row scores are checked in phase 2, before
 * anything is written.
 */
LIG_API lig_status lig_quant_logits_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights,
    const lig_tensor *query_dequant_scale /* may be NULL */, const lig_tensor *key_dequant_scale,
    const lig_tensor *block_table /* PA_BSND only */, const lig_tensor *key_start /* may be NULL: 0 */,
    const lig_tensor *key_end, const char *layout_query, const char *layout_key, bool clean_logits,
    bool compressed, const lig_tensor *logits /* may be NULL */, int64_t sparse_count,
    const lig_tensor *sparse_indices /* may be NULL */, const lig_tensor *sparse_values /* may be NULL */,
    const lig_tensor *schedule /* may be NULL */, uint64_t *workspace_size, lig_executor **executor);

/* The quantized indexer's logits, phase 2 (runs only executors of lig_quant_logits_get_workspace_size). */
LIG_API lig_status lig_quant_logits(void *workspace, uint64_t workspace_size, lig_executor *executor, void *stream);

/* A balanced schedule for lig_quant_logits_get_workspace_size (DeepGEMM's
 * get_paged_mqa_logits_metadata form) into the host INT32 tensor `schedule` [workers+1, 2]: batch
 * b of key_end ([B,S1], or [T1]: one batch) has ceil(max over its rows of key_end / block_size)
 * blocks; entry w = (batch, block) where worker w's piece starts, taking block floor(w * total /
 * workers) of the blocks in (batch, block) order; entry `workers` = (B, 0). */
LIG_API lig_status lig_quant_logits_schedule(const lig_tensor *key_end, int64_t block_size, int64_t workers,
                                             const lig_tensor *schedule);

/*
 * The sparse ("candidate") logits (DeepGEMM 2.8's fp8_fp4_sparse_mqa_logits and
 * fp8_fp4_paged_sparse_mqa_logits; contract 2.8), phase 1: lig_quant_logits' scores at the keys of
 * chosen blocks only.
 *   query, key, weights, the two scales, block_table, key_start (NULL: all 0), key_end,
 *     layout_query, layout_key: as for lig_quant_logits_get_workspace_size (row r's range
 *     [key_start[r], key_end[r]))
 *   sparse_kv_block_indices: INT32 or INT64 host tensor [B,S1,M] | [T1,M], read here; M =
 *     max_blocks. Row r uses its first count(r) = min(M, ceil((key_end - key_start) / block_kv))
 *     entries, which must be strictly increasing ids in [key_start / block_kv, that + count of
 *     the range's blocks); the entries after them are never read (any value: -1, the last id)
 *   sparse_block_kv: keys per block, >= 1 (DeepGEMM: 8 or 16)
 *   use_unaligned_ks: block id i starts at key i * sparse_block_kv + key_start[r] % sparse_block_kv
 *     (false: at i * sparse_block_kv)
 *   sparse_logits: FLOAT32, FLOAT16 or BFLOAT16 [B,S1,N2,M * block_kv] | [T1,N2,M * block_kv]
 *     (without N2 when N2 == 1), any strides: column j * block_kv + o holds the score of key
 *     start(id_j) + o, rounded once from fp32, when j < count(r) and the key is in the row's range;
 *     every other column gets -inf.
 * Each written score is, bit for bit, lig_quant_logits' fp32 logit of that row and key on the same
 * kernel set (rounded once when sparse_logits is not FLOAT32). Paged table entries of the blocks
 * holding a scored key are checked in phase 2, before anything is written.
 */
LIG_API lig_status lig_sparse_logits_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights,
    const lig_tensor *query_dequant_scale /* may be NULL */, const lig_tensor *key_dequant_scale,
    const lig_tensor *block_table /* PA_BSND only */, const lig_tensor *key_start /* may be NULL: 0 */,
    const lig_tensor *key_end, const char *layout_query, const char *layout_key,
    const lig_tensor *sparse_kv_block_indices, int64_t sparse_block_kv, bool use_unaligned_ks,
    const lig_tensor *sparse_logits, uint64_t *workspace_size, lig_executor **executor);

/* The sparse logits, phase 2 (runs only executors of lig_sparse_logits_get_workspace_size). */
LIG_API lig_status lig_sparse_logits(void *workspace, uint64_t workspace_size, lig_executor *executor, void *stream);

/*
 * The fused training step of the indexer (DeepSeek-V3.2's KL objective), phase 1.
 * Rows run along the last axis of same-shaped tensors (e.g. [B,S1,N2,K] or [T1,K]):
 *   sparse_values  I at the selected slots (the forward's output), any float dtype
 *   sparse_indices optional: slot j counts when its index is >= 0; when NULL, slots whose
 *                  value is -inf (the forward's padding) do not count
 *   target         p over the same slots (>= 0, e.g. the main attention's probabilities
 *                  summed over heads and L1-normalised), any float dtype
 * Outputs:
 *   loss  FLOAT32, one element: sum over rows of KL(p_t || softmax(I_t)), the softmax taken
 *         over the counted slots only
 *   dy    like sparse_values, any float dtype: softmax(I_t) * sum(p_t) - p_t on counted
 *         slots, 0 elsewhere — the `dy` that lig_indexer_grad takes
 */
LIG_API lig_status lig_kl_loss_and_dy_get_workspace_size(
    const lig_tensor *sparse_values, const lig_tensor *sparse_indices /* may be NULL */,
    const lig_tensor *target, const lig_tensor *loss, const lig_tensor *dy,
    uint64_t *workspace_size, lig_executor **executor);

/* The fused training step, phase 2. */
LIG_API lig_status lig_kl_loss_and_dy(void *workspace, uint64_t workspace_size,
                                       lig_executor *executor, void *stream);

/*
 * The indexer's softmax log-sum-exp over every visible compressed key (DeepSeek-V4's dense
 * warm-up; CANN's aclnnDenseLightningIndexerSoftmaxLse(V2)), phase 1. docs/contract.md 2.7.
 *   query    [B,S1,N1,D] | [T1,N1,D]   FLOAT32, FLOAT16 or BFLOAT16
 *   key      [B,S2,N2,D] | [T2,N2,D]   the query's dtype: S2 (T2) compressed entries
 *   weights  [B,S1,N1]   | [T1,N1]     the query's dtype or FLOAT32
 *   actual_seq_lengths_query / _key    as for lig_indexer (INT32 or INT64, host): the key
 *            lengths count compressed entries
 *   cmp_residual_k  [B], INT32 or INT64 (host), may be NULL (all 0): each batch's original
 *            tokens past its last whole block, 0 .. cmp_ratio-1
 *   mask_mode 0 (every entry) or 3 (right-down causal over the original positions), cmp_ratio
 *            1..128: row t sees the entries of contract 4.1
 * Output:
 *   softmax_lse FLOAT32 [B,N2,S1] | [N2,T1]: log(sum_j exp(I[t,g,j])) over the visible entries,
 *            I = sum_h w_h ReLU(q_h . k_j) as the forward scores it; -inf for a row that sees no
 *            entry or is past its batch's valid length. Every element is written.
 */
LIG_API lig_status lig_dense_indexer_softmax_lse_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights,
    const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key,
    const lig_tensor *cmp_residual_k /* may be NULL */, const char *layout, int64_t mask_mode,
    int64_t cmp_ratio, const lig_tensor *softmax_lse, uint64_t *workspace_size, lig_executor **executor);

/* The indexer's softmax log-sum-exp, phase 2. */
LIG_API lig_status lig_dense_indexer_softmax_lse(void *workspace, uint64_t workspace_size,
                                                 lig_executor *executor, void *stream);

/*
 * The dense KL gradient of the indexer over compressed keys (DeepSeek-V4's dense warm-up; CANN's
 * aclnnDenseLightningIndexerKLLossGrad), phase 1. docs/contract.md 2.9.
 *   query, key, weights, the lengths, cmp_residual_k, layout, mask_mode, cmp_ratio
 *            as for lig_dense_indexer_softmax_lse (row t sees the entries of contract 4.1)
 *   attn_softmax_l1_norm  FLOAT32 [B,S1,N2,W] | [T1,N2,W], W >= every batch's entry count: the
 *            target p (the main attention's head-mean softmax), entry j of row t at [.., j]
 *   softmax_lse FLOAT32 [B,N2,S1] | [N2,T1]: the indexer's lse (lig_dense_indexer_softmax_lse)
 *   deterministic  true: every output bitwise the same for every thread count and run
 * Outputs (over the visible entries j of each valid row; I = sum_h w_h ReLU(q_h . k_j)):
 *   softmax_out  like attn_softmax_l1_norm: y_j = exp(I_j - lse), 0 at every other entry and row
 *   d_query, d_key  the query's dtype and shapes; d_weights the weights' shape, their dtype or
 *            FLOAT32: the gradients through I of dI_j = y_j * sum_j' p_j' - p_j
 *   loss     FLOAT32, one element, or NULL: sum over rows of sum_j p_j (log p_j - log y_j)
 *            (terms with p_j <= 0 add 0), the loss whose gradient dI is when lse is I's
 */
LIG_API lig_status lig_dense_indexer_kl_loss_grad_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *weights,
    const lig_tensor *attn_softmax_l1_norm, const lig_tensor *softmax_lse,
    const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key,
    const lig_tensor *cmp_residual_k /* may be NULL */, const char *layout, int64_t mask_mode,
    int64_t cmp_ratio, bool deterministic, const lig_tensor *d_query, const lig_tensor *d_key,
    const lig_tensor *d_weights, const lig_tensor *softmax_out, const lig_tensor *loss /* may be NULL */,
    uint64_t *workspace_size, lig_executor **executor);

/* The dense KL gradient, phase 2. */
LIG_API lig_status lig_dense_indexer_kl_loss_grad(void *workspace, uint64_t workspace_size,
                                                  lig_executor *executor, void *stream);

/*
 * Compressed keys (DeepSeek-V4's cmp_ratio; docs/contract.md 4.1): how many compressed entries each
 * query row of one batch sees, by the rule every lig operator that takes cmp_ratio applies. For a
 * caller (an inference engine, a front end) that hands lig's forward per-row key lengths or ranges.
 *   mask_mode 0 (every entry) or 3 (right-down causal over the original positions), cmp_ratio 1..128,
 *   cmp_residual_k 0 .. cmp_ratio-1: the batch's original tokens past its last whole block,
 *   key_entries >= 0 compressed entries, query_rows >= 0 rows, `batch` (only named in messages).
 * Writes counts[t], t = 0 .. query_rows-1: row t sees entries 0 .. counts[t]-1. Nothing is written on
 * failure (LIG_ERR_PARAM_INVALID naming the parameter; LIG_ERR_PARAM_NULLPTR for a NULL counts
 * with query_rows > 0). Pure host arithmetic; exact for every int64 length.
 */
LIG_API lig_status lig_compressed_visible_counts(int64_t mask_mode, int64_t cmp_ratio, int64_t cmp_residual_k,
                                                 int64_t key_entries, int64_t query_rows, int64_t batch,
                                                 int64_t *counts);

/*
 * The main attention's head-mean softmax over compressed keys, the target of DeepSeek-V4's indexer
 * training (CANN's aclnnSparseFlashMlaSoftmaxL1Norm), phase 1. docs/contract.md 2.10.
 *   query    [B,S1,N1,D] | [T1,N1,D]   FLOAT32, FLOAT16 or BFLOAT16 (the main attention's heads)
 *   key      [B,S2,1,D]  | [T2,1,D]    the query's dtype: S2 (T2) compressed entries, one latent head
 *   softmax_lse  [B,1,S1,N1] | [1,T1,N1], FLOAT32: the main attention forward's log-sum-exp per
 *            (row, head) of softmax_scale * scores, over whatever keys that attention saw
 *   sparse_indices (NULL: dense) [B,S1,1,K] | [B,S1,K] | [T1,1,K] | [T1,K], INT32 or INT64:
 *            batch-local entries, -1 padding
 *   actual_seq_lengths_query / _key, cmp_residual_k, mask_mode, cmp_ratio: as for
 *            lig_dense_indexer_softmax_lse (the key lengths count compressed entries)
 *   softmax_scale  finite in fp32
 * Output softmax_l1_norm, FLOAT32, with the rows of sparse_indices' shape:
 *   dense  [B,S1,1,W] | [B,S1,W] | [T1,1,W] | [T1,W], W >= every batch's entry count: column j of
 *          row t holds p[j] = (1/N1) sum_h exp(softmax_scale * q_h . k_j - lse_h) for the entries
 *          j < n(t) the row sees (contract 4.1), 0 in the other columns
 *   sparse like sparse_indices: slot s holds p[idx] when 0 <= idx < n(t), else 0 (padding, or an
 *          entry the row may not see); an index < -1 or >= the batch's entries is an error
 * Rows past a batch's valid length, and rows that see nothing, are all 0. Every element is written.
 */
LIG_API lig_status lig_sparse_flash_mla_softmax_l1_norm_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *softmax_lse,
    const lig_tensor *sparse_indices /* may be NULL */, const lig_tensor *actual_seq_lengths_query,
    const lig_tensor *actual_seq_lengths_key, const lig_tensor *cmp_residual_k /* may be NULL */,
    double softmax_scale, int64_t cmp_ratio, int64_t mask_mode, const char *layout,
    const lig_tensor *softmax_l1_norm, uint64_t *workspace_size, lig_executor **executor);

/* The main attention's head-mean softmax target, phase 2. */
LIG_API lig_status lig_sparse_flash_mla_softmax_l1_norm(void *workspace, uint64_t workspace_size,
                                                        lig_executor *executor, void *stream);

/* The target distribution p of lig_sparse_indexer_grad_kl_loss (docs/contract.md 2.5), from the main
 * attention's probabilities P[h,j] at the counted slots of a row:
 *   LIG_KL_TARGET_HEAD_MEAN  p[j] = (1/N1) sum_h P[h,j]                   (CANN's kernel's target)
 *   LIG_KL_TARGET_L1         p[j] = sum_h P[h,j] / sum_j' sum_h P[h,j']   (DeepSeek-V3.2's paper)
 *   LIG_KL_TARGET_CANN       CANN's kernel as it is: the head-mean target, the gradient
 *                            dI = y - p (not y sum(p) - p) and a loss with p and y clamped below at
 *                            1e-8: sum_j max(p,1e-8) (log max(p,1e-8) - log max(y,1e-8)) */
typedef enum lig_kl_target {
    LIG_KL_TARGET_HEAD_MEAN = 0,
    LIG_KL_TARGET_L1 = 1,
    LIG_KL_TARGET_CANN = 2
} lig_kl_target;

/*
 * The indexer's training loss with the target taken from the main attention, fused
 * (CANN's SparseLightningIndexerGradKLLoss, in CANN's parameter order), phase 1.
 *   query      [B,S1,N1,Dm] | [T1,N1,Dm]      key      [B,S2,1,Dm] | [T2,1,Dm]   (the main attention)
 *   query_index [B,S1,Nidx1,D] | [T1,Nidx1,D] key_index [B,S2,Nidx2,D] | [T2,Nidx2,D]
 *   weights    [B,S1,Nidx1] | [T1,Nidx1]
 *   sparse_indices [B,S1,Nidx2,K] | [T1,Nidx2,K] (or without Nidx2 when Nidx2 == 1), INT32 or INT64
 *   softmax_max, softmax_sum  [B,1,S1,N1] | [1,T1,N1], FLOAT32: the main attention's row maxima
 *              (of scale * scores) and sums of exponentials; both NULL when softmax_lse is given
 *   softmax_lse  [B,1,S1,N1] | [1,T1,N1], FLOAT32, or NULL: log-sum-exp per (row, head)
 *   query_rope [B,S1,N1,Dr], key_rope [B,S2,1,Dr] (or TND forms): both present or both NULL
 *   scale      the main attention's score scale (e.g. 1/sqrt(Dm + Dr))
 * Floating tensors share query_index's dtype (FLOAT32, FLOAT16 or BFLOAT16). Lengths, layout,
 * sparse_mode and the band as for lig_indexer_grad; the slots that count are the backward's.
 * Outputs: d_query_index, d_key_index (the dtype of query_index), d_weights (that dtype or FLOAT32),
 * shaped like their inputs; loss FLOAT32 with one element (shape [] or [1]):
 *   loss = sum over rows of sum_j p[j] (log p[j] - log softmax(I)[j]),  dI = softmax(I) sum(p) - p,
 * with the gradients of lig_indexer_grad for dy = dI, dI kept in fp32 (LIG_KL_TARGET_CANN: CANN's
 * dI = softmax(I) - p and its clamped loss, see lig_kl_target).
 */
LIG_API lig_status lig_sparse_indexer_grad_kl_loss_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *query_index, const lig_tensor *key_index,
    const lig_tensor *weights, const lig_tensor *sparse_indices, const lig_tensor *softmax_max,
    const lig_tensor *softmax_sum, const lig_tensor *softmax_lse, const lig_tensor *query_rope,
    const lig_tensor *key_rope, const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key,
    double scale, const char *layout, int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
    lig_kl_target target, bool deterministic, const lig_tensor *d_query_index, const lig_tensor *d_key_index,
    const lig_tensor *d_weights, const lig_tensor *loss, uint64_t *workspace_size, lig_executor **executor);

/*
 * The same loss with attention sinks in the main attention's softmax (CANN's
 * SparseLightningIndexerGradKLLossV2), phase 1; phase 2 is lig_sparse_indexer_grad_kl_loss.
 *   sinks  FLOAT32 [N1] (one logit per main query head), or NULL: then every output is bitwise
 *          the one of lig_sparse_indexer_grad_kl_loss_get_workspace_size's plan
 * The statistics are those of the softmax over the keys and the sink, so head h's probabilities
 * over the keys sum to 1 - P_sink[h], P_sink[h] = exp(sinks[h] - max_h) / sum_h (exp(sinks[h] -
 * lse_h) with softmax_lse). The head-mean targets (LIG_KL_TARGET_HEAD_MEAN, LIG_KL_TARGET_CANN)
 * remove the sinks' mass from the normaliser, as CANN's kernel does:
 *   p[j] = sum_h P[h,j] / (N1 - sum_h P_sink[h])
 * (sinks[h] = -inf: P_sink[h] = 0, the plain head mean). LIG_KL_TARGET_L1 normalises by the row's
 * own mass, so the sinks cancel and its results are bitwise those without sinks.
 */
LIG_API lig_status lig_sparse_indexer_grad_kl_loss_v2_get_workspace_size(
    const lig_tensor *query, const lig_tensor *key, const lig_tensor *query_index, const lig_tensor *key_index,
    const lig_tensor *weights, const lig_tensor *sparse_indices, const lig_tensor *softmax_max,
    const lig_tensor *softmax_sum, const lig_tensor *softmax_lse, const lig_tensor *query_rope,
    const lig_tensor *key_rope, const lig_tensor *actual_seq_lengths_query, const lig_tensor *actual_seq_lengths_key,
    const lig_tensor *sinks, double scale, const char *layout, int64_t sparse_mode, int64_t pre_tokens,
    int64_t next_tokens, lig_kl_target target, bool deterministic, const lig_tensor *d_query_index,
    const lig_tensor *d_key_index, const lig_tensor *d_weights, const lig_tensor *loss, uint64_t *workspace_size,
    lig_executor **executor);

/* The indexer's fused KL training loss (with or without sinks), phase 2. */
LIG_API lig_status lig_sparse_indexer_grad_kl_loss(void *workspace, uint64_t workspace_size, lig_executor *executor,
                                              void *stream);

/*
 * The verdict of the checks a device's phase 2 runs on the device itself. Phase 2 of a device plan
 * (CUDA) only enqueues work on `stream`; the checks that read tensor contents (index ranges, KL
 * targets) run there and leave their verdict in the head of the workspace, and when they fail no
 * later kernel writes anything. After the stream has completed the call (or with `stream` given,
 * this function waits for it), lig_workspace_status reads that verdict: LIG_SUCCESS, or
 * LIG_ERR_PARAM_INVALID with lig_get_last_error() naming the offending element as the CPU backend
 * would. The workspace must not be reused before the status is read. For LIG_DEVICE_HOST it is
 * LIG_SUCCESS (the CPU's phase 2 returns its verdict itself); for a device this build has no
 * backend for, LIG_ERR_PARAM_INVALID naming it.
 */
LIG_API lig_status lig_workspace_status(lig_device device, const void *workspace, void *stream);

/* How many bytes from the start of a device workspace hold its status (the status sits at the
 * workspace's first 64-byte boundary). */
#define LIG_WORKSPACE_STATUS_BYTES 192
/*
 * lig_workspace_status's verdict from `copy`, a host copy of the first LIG_WORKSPACE_STATUS_BYTES
 * bytes of the workspace at `workspace` (only that address is read, for its alignment), made after
 * phase 2 on the same stream (e.g. asynchronously into pinned memory) and completed. It never
 * touches the device, so a caller can check without waiting for the stream.
 */
LIG_API lig_status lig_workspace_status_from_copy(lig_device device, const void *workspace, const void *copy);

/* Frees an executor that will never be run (phase 2 frees the ones it runs). */
LIG_API lig_status lig_destroy_executor(lig_executor *executor);

/* 0 = default: the environment variable LIG_NUM_THREADS, else all online CPUs. */
LIG_API void lig_set_num_threads(int n);
LIG_API int lig_get_num_threads(void);

/*
 * CPU kernel sets. Each set is the micro-kernels of one ISA level ("scalar", "avx2", ...);
 * phase 1 plans with the set in effect: the one forced with lig_set_kernel_set, else the
 * environment variable LIG_ISA, else the widest set the CPU supports. Results are bitwise
 * reproducible for a given set; two sets may differ in the last bits.
 */
/* The sets this build and CPU support, comma-separated, portable first, e.g. "scalar,avx2". */
LIG_API const char *lig_kernel_sets(void);
/* Forces a set for the plans made from now on; NULL or "" returns to automatic selection.
 * LIG_ERR_PARAM_INVALID (nothing changed) for an unknown set or one the CPU lacks. */
LIG_API lig_status lig_set_kernel_set(const char *name);
/* The set new plans use; "" when LIG_ISA names a set this CPU cannot run (phase 1 then fails). */
LIG_API const char *lig_get_kernel_set(void);
/* The kernels a plan runs, e.g. "avx2" (a set can fall back to a narrower one for some
 * dtypes); "" for NULL. */
LIG_API const char *lig_executor_kernel_set(const lig_executor *executor);

/*
 * The scalar conversions lig applies to FLOAT16 (IEEE binary16) and BFLOAT16 data, as bit
 * patterns: round to nearest even, NaN stays NaN (quieted, sign kept), Inf stays Inf, subnormals
 * exact both ways. For callers that prepare data the way lig reads and writes it.
 */
LIG_API float lig_float16_to_float(uint16_t bits);
LIG_API uint16_t lig_float_to_float16(float value);
LIG_API float lig_bfloat16_to_float(uint16_t bits);
LIG_API uint16_t lig_float_to_bfloat16(float value);
/*
 * FLOAT8_E4M3FN (OCP 8-bit float, E4M3 without infinities) as bit patterns. Decoding is exact
 * (every code is an fp32 value; 0x7F and 0xFF are NaN; subnormals are multiples of 2^-9).
 * Encoding rounds to nearest even and follows PyTorch's tensor.to(torch.float8_e4m3fn): a finite
 * value or an infinity beyond the largest finite code saturates to +-448 (0x7E / 0xFE), NaN
 * becomes 0x7F with the sign bit of the input.
 */
LIG_API float lig_float8_e4m3fn_to_float(uint8_t bits);
LIG_API uint8_t lig_float_to_float8_e4m3fn(float value);
/*
 * MXFP4's formats (OCP Microscaling v1.0) as bit patterns (docs/contract.md section 5, "MXFP4").
 * FLOAT4_E2M1: a code in the low nibble of `bits` (the high nibble is ignored), S.EE.M, magnitudes
 * 0, 0.5, 1, 1.5, 2, 3, 4, 6; decoding is exact. Encoding rounds to nearest even, saturates every
 * magnitude above 6 (infinities included) to +-6, keeps the sign of a value that rounds to zero
 * (0x8 is -0) and maps NaN, which has no code, to 0x7 (+6); the result's high nibble is 0.
 * FLOAT8_E8M0FNU (the ue8m0 block scale): byte E is 2^(E-127) exactly (E = 0 is 2^-127), 0xFF NaN.
 */
LIG_API float lig_float4_e2m1_to_float(uint8_t bits);
LIG_API uint8_t lig_float_to_float4_e2m1(float value);
LIG_API float lig_float8_e8m0fnu_to_float(uint8_t bits);

/* How a block scale and the codes are chosen (the sources differ; docs/inference.md):
 *   LIG_MXFP4_RECIPE_ENGINE          the engines' kernels (vLLM, SGLang, DeepSeek-V4's inference
 *                                    code): a = max(amax, 6 * 2^-126), scale = the smallest power of
 *                                    two >= fp32(a * fp32(1/6)), codes by lig_float_to_float4_e2m1
 *   LIG_MXFP4_RECIPE_DEEPGEMM_TEST   DeepGEMM's per_token_cast_to_fp4 (its tests' reference):
 *                                    a = max(amax, fp32(1e-4)), scale = the smallest power of two
 *                                    >= fp32(a / 6), codes rounded with every tie towards zero and
 *                                    no negative zero */
typedef enum lig_mxfp4_recipe {
    LIG_MXFP4_RECIPE_ENGINE = 0,
    LIG_MXFP4_RECIPE_DEEPGEMM_TEST = 1
} lig_mxfp4_recipe;

/*
 * MXFP4 quantization of the rows of a host tensor (contract 5, "MXFP4"), as DeepGEMM's fp8_fp4_*
 * functions take queries and keys:
 *   x       [rows, cols], FLOAT32, FLOAT16 or BFLOAT16, cols even, any strides
 *   codes   [rows, cols/2], UINT8 or INT8 (DeepGEMM's packed FP4 is int8): byte j holds element 2j
 *           in its low nibble and element 2j+1 in its high nibble
 *   scales  the e8m0 byte of each block of 32 values (the last block of a row may be shorter),
 *           padded with 127 (2^0) to whole words: UINT8 [rows, 4*ceil(ceil(cols/32)/4)], or INT32
 *           [rows, ceil(ceil(cols/32)/4)] with word j holding blocks 4j..4j+3 in bits 0-7, 8-15,
 *           16-23, 24-31 (DeepGEMM's packed ue8m0, one int32 per token for D <= 128)
 * Element i of a block with scale byte E is code(x_i * 2^(127-E)); a block holding a NaN or an
 * infinity gets scale byte 0xFF (NaN) and codes 0. Nothing is written on failure.
 */
LIG_API lig_status lig_mxfp4_quantize(const lig_tensor *x, lig_mxfp4_recipe recipe, const lig_tensor *codes,
                                      const lig_tensor *scales);
/*
 * Writes keys into DeepGEMM's fused FP4 paged cache (the layout fp8_fp4_paged_mqa_logits reads):
 *   k             [T, D] host tensor, as x of lig_mxfp4_quantize
 *   slot_mapping  [T], INT32 or INT64: token t goes to block slot / block_size, offset slot % block_size;
 *                 a negative slot skips the token; slots must be < num_blocks * block_size and distinct
 *   kv_cache      UINT8 [num_blocks, block_size, 1, D/2 + S] or [num_blocks, block_size, D/2 + S],
 *                 S = 4*ceil(ceil(D/32)/4) (4 for D <= 128); each block's bytes contiguous (any block
 *                 stride): block_size * D/2 code bytes, token-major, then block_size * S scale bytes
 * Each token's codes and scales are lig_mxfp4_quantize's row for it. Nothing is written on failure.
 */
LIG_API lig_status lig_mxfp4_cache_write(const lig_tensor *k, const lig_tensor *slot_mapping, lig_mxfp4_recipe recipe,
                                         const lig_tensor *kv_cache);

/* This thread's last failure message, "" if none. */
LIG_API const char *lig_get_last_error(void);

/* A shape as lig's error messages write it, "[2,3,4]" ("[]" for rank 0), into buf (capacity
 * bytes, cut short and terminated when it does not fit); returns buf. For front ends and bindings
 * whose own messages should read like lig's. */
LIG_API const char *lig_format_shape(char *buf, size_t capacity, int64_t ndim, const int64_t *shape);
LIG_API const char *lig_status_string(lig_status status);
LIG_API const char *lig_version(void);

/*
 * Names before 0.2 (deprecated; docs/contract.md "Renamed operators"): programs written against them
 * still build, each name standing for the operator now named for what it returns.
 */
#define lig_indexer_kl_grad_get_workspace_size lig_kl_loss_and_dy_get_workspace_size /* the loss and dy */
#define lig_indexer_kl_grad lig_kl_loss_and_dy
#define lig_sparse_indexer_kl_loss_get_workspace_size lig_sparse_indexer_grad_kl_loss_get_workspace_size
#define lig_sparse_indexer_kl_loss lig_sparse_indexer_grad_kl_loss /* the gradients and the loss */

#ifdef __cplusplus
}
#endif

#endif /* LIG_H */

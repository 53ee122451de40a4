"""lig::fp8_paged_mqa_topk, lig's fused decode top-k over DeepGEMM's fused FP8 paged cache, and
lig.fp8_paged_mqa_topk.

The cache is uint8 ``[num_blocks, block_kv, 1, D + 4]``: each block holds its ``block_kv * D`` fp8
codes (token-major), then its ``block_kv`` fp32 scales. lig reads it in place, without a copy,
through two strided views handed to lig_quant_indexer as a PA_BSND key cache: the codes
``[num_blocks, block_kv, 1, D]`` (element strides ``[block_stride, D, D, 1]``) and the scales
``[num_blocks, block_kv, 1]`` (float strides ``[block_stride / 4, 1, 1]``, starting at byte
``block_kv * D`` of the block). The decode rows of a sequence are the query rows of a right-down
causal problem (sparse_mode 3) with ``S1 = next_n`` and key lengths ``context_lens``, so row ``i``
of batch ``b`` sees keys ``< context_lens[b] - next_n + i + 1``: DeepGEMM's visibility. With 2-D
``context_lens`` ``[B, next_n]`` every row is a batch of its own (``S1 = 1``, its table row repeated),
so row ``(b, i)`` sees keys ``< context_lens[b, i]``.
"""
from __future__ import annotations

from typing import Tuple, Union

import torch
from torch import Tensor

from . import _args
from ._args import FLOAT_DTYPES, INDEX_DTYPES
from ._fused_cache import cache_views
from ._capi import INT64_MAX
from ._op_quant_indexer import run_quant_indexer
from ._registry import op, tensors


def _check(q, kv_cache, weights, context_lens, block_table, topk) -> None:
    """Everything about the shapes, by DeepGEMM's parameter names (the library then sees only
    views it cannot name: what it could refuse is checked here first)."""
    _args.tensor(q, "q", (torch.float8_e4m3fn,))
    _args.tensor(kv_cache, "kv_cache", (torch.uint8,))
    _args.tensor(weights, "weights", FLOAT_DTYPES)
    _args.tensor(context_lens, "context_lens", INDEX_DTYPES)
    _args.tensor(block_table, "block_table", INDEX_DTYPES)
    _args.integer(topk, "topk", minimum=1)
    shape = _args._shape
    if q.dim() != 4:
        raise _args.invalid(f"q: expected rank 4 ([B,next_n,H,D]), got rank {q.dim()} shape {shape(q)}")
    B, next_n, H, D = q.shape
    if D % 4:
        raise _args.invalid(f"q: expected a head dimension D that is a multiple of 4 (the cache's fp32 scales follow "
                            f"block_kv * D code bytes and must be aligned), got D = {D}")
    if kv_cache.dim() != 4 or kv_cache.shape[2] != 1 or kv_cache.shape[3] != D + 4:
        raise _args.invalid(f"kv_cache: expected shape [num_blocks,block_kv,1,{D + 4}] (D + 4 bytes per token, "
                            f"D = {D} like q), got {shape(kv_cache)}")
    num_blocks, block_kv = kv_cache.shape[:2]
    s = kv_cache.stride()
    if (block_kv > 1 and s[1] != D + 4) or s[3] != 1 or (num_blocks > 1 and s[0] % 4):
        raise _args.invalid(f"kv_cache: expected each block's {block_kv * (D + 4)} bytes contiguous and blocks 4-byte "
                            f"aligned (strides [4n,{D + 4},*,1]), got strides [{','.join(map(str, s))}]")
    if kv_cache.storage_offset() % 4:  # torch's allocations are aligned; a view may start anywhere
        raise _args.invalid(f"kv_cache: expected a 4-byte aligned start (its fp32 scales are read in place), got a "
                            f"view at byte {kv_cache.storage_offset()} of its storage")
    if tuple(weights.shape) != (B * next_n, H):
        raise _args.invalid(f"weights: expected shape [{B * next_n},{H}] ([B*next_n,H] like q), got {shape(weights)}")
    if tuple(context_lens.shape) not in ((B,), (B, next_n)):
        raise _args.invalid(f"context_lens: expected shape [{B}] or [{B},{next_n}] ([B] or [B,next_n] like q), got "
                            f"{shape(context_lens)}")
    if block_table.dim() != 2 or block_table.shape[0] != B:
        raise _args.invalid(f"block_table: expected shape [{B},max_blocks] ([B,max_blocks] like q), got "
                            f"{shape(block_table)}")


def _check_lengths(context_lens: Tensor, block_table: Tensor, block_kv: int) -> None:
    """Each context length within the keys its table row can hold (read on the host, as phase 1
    reads every length; named here, where the library would name its actual_seq_lengths_key)."""
    cap = block_table.shape[1] * block_kv
    lens = context_lens.cpu()
    bad = ((lens < 0) | (lens > cap)).nonzero()
    if bad.numel():
        at = tuple(int(i) for i in bad[0])
        where = f"batch {at[0]}" if len(at) == 1 else f"batch {at[0]} row {at[1]}"
        raise _args.invalid(f"context_lens: expected values in [0, max_blocks * block_kv = {cap}], got "
                            f"{int(lens[at])} at {where}")


def _outputs(q: Tensor, topk: int, return_values: bool, fake: bool = False) -> Tuple[Tensor, Tensor]:
    rows = q.shape[0] * q.shape[1]
    new = q.new_empty if fake else (lambda s, dtype: torch.empty(s, dtype=dtype, device=q.device))
    return new((rows, topk), dtype=torch.int32), new((rows, topk) if return_values else (0,), dtype=torch.float32)


@op("fp8_paged_mqa_topk")
def _fp8_paged_mqa_topk_op(
    q: Tensor,
    kv_cache: Tensor,
    weights: Tensor,
    context_lens: Tensor,
    block_table: Tensor,
    topk: int,
    return_values: bool,
) -> Tuple[Tensor, Tensor]:
    """(indices [B*next_n, topk] int32, values [B*next_n, topk] float32, or empty unless asked)."""
    _check(q, kv_cache, weights, context_lens, block_table, topk)
    _check_lengths(context_lens, block_table, kv_cache.shape[1])
    B, next_n, H, D = q.shape
    indices, values = _outputs(q, topk, return_values)
    codes, scales = cache_views(kv_cache, D)
    if context_lens.dim() == 2:
        # a length per row: each row its own batch of one query (next_n 1), seeing keys < its
        # length through its sequence's table row; the rows and the outputs keep their order
        q, weights = q.reshape(B * next_n, 1, H, D), weights.reshape(B * next_n, H)
        context_lens, block_table = context_lens.reshape(-1), block_table.repeat_interleave(next_n, 0)
        B, next_n = B * next_n, 1
    # one key head: the C outputs' short form [B, next_n, K] is the rows' [B*next_n, K], in place
    inputs = ((q, "q"), (codes, "kv_cache"), (weights.view(B, next_n, H), "weights"), (None, "query_dequant_scale"),
              (scales, "kv_cache"), (None, "actual_seq_lengths_query"), (context_lens, "context_lens"),
              (block_table, "block_table"))
    run_quant_indexer(inputs, 0, 0, "BSND", "PA_BSND", topk, 3, INT64_MAX, INT64_MAX, indices.view(B, next_n, topk),
                      values.view(B, next_n, topk) if return_values else None)
    return indices, values


@_fp8_paged_mqa_topk_op.register_fake
def _(q, kv_cache, weights, context_lens, block_table, topk, return_values):
    _check(q, kv_cache, weights, context_lens, block_table, topk)
    return _outputs(q, topk, return_values, fake=True)


_fp8_paged_mqa_topk_op.refuse_autograd()


def fp8_paged_mqa_topk(q: Tensor, kv_cache: Tensor, weights: Tensor, context_lens: Tensor, block_table: Tensor,
                       topk: int, return_values: bool = False) -> Union[Tensor, Tuple[Tensor, Tensor]]:
    """The decode top-k over DeepGEMM's fused FP8 paged cache (what ``fp8_paged_mqa_logits``
    followed by a top-k computes, fused, without the ``[B*next_n, max_context_len]`` logits).

    ``q`` ``[B,next_n,H,D]`` float8_e4m3fn; ``kv_cache`` uint8 ``[num_blocks,block_kv,1,D+4]``
    (per block: ``block_kv * D`` fp8 codes, then ``block_kv`` fp32 scales; what
    :func:`indexer_k_quant_and_cache` writes with ``quant_block_size = D``); ``weights``
    ``[B*next_n,H]`` (float32 as DeepGEMM's, or float16 / bfloat16; the query scale folded in);
    ``context_lens`` ``[B]`` or ``[B,next_n]`` int32 (or int64); ``block_table`` ``[B,max_blocks]``
    int32 (or int64). Row ``b*next_n + i`` scores keys ``s < context_lens[b] - next_n + i + 1``
    (``[B]``) or ``s < context_lens[b, i]`` (``[B,next_n]``, DeepGEMM's 2-D form: each row its own
    length) of batch ``b``, key ``s`` being slot ``s % block_kv`` of block ``block_table[b, s // block_kv]``:
    ``I = sum_h weights[row,h] * ReLU(scale[s] * (q[b,i,h] . k[s]))`` in lig's fp32 order
    (docs/contract.md 2.4).

    Returns int32 indices ``[B*next_n, topk]`` (batch-local key positions, descending score, ties
    to the lower key, ``-1`` past the visible keys), or ``(indices, values)`` with
    ``return_values=True`` (float32 scores, ``-inf`` in padded slots). The cache is read in place.
    Not differentiable.

    Devices: CPU tensors only. The CUDA backend has no FP8 / INT8 forward yet: CUDA tensors raise
    :class:`LigValueError`, in any build.
    """
    q, kv_cache, weights, context_lens, block_table = tensors(
        (q, "q"), (kv_cache, "kv_cache"), (weights, "weights"), (context_lens, "context_lens"),
        (block_table, "block_table"))
    indices, values = torch.ops.lig.fp8_paged_mqa_topk(q, kv_cache, weights, context_lens, block_table,
                                                      _args.integer(topk, "topk", minimum=1),
                                                      _args.flag(return_values, "return_values"))
    return (indices, values) if return_values else indices

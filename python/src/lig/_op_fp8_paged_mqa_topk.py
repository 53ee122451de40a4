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

from typing import Optional, Tuple, Union

import torch
from torch import Tensor

from . import _args, _capi
from ._args import FLOAT_DTYPES, INDEX_DTYPES
from ._fp4_act_quant import FLOAT4_X2
from ._fused_cache import cache_views
from ._capi import INT64_MAX
from ._op_quant_indexer import run_quant_indexer
from ._registry import op, optional_tensor, tensors

FP4_CODES = (torch.int8, torch.uint8) + ((FLOAT4_X2,) if FLOAT4_X2 is not None else ())


def _check(q, kv_cache, weights, context_lens, block_table, topk, q_sf=None) -> None:
    """Everything about the shapes, by DeepGEMM's parameter names (the library then sees only
    views it cannot name: what it could refuse is checked here first). With ``q_sf``: MXFP4, q's
    last axis and the cache's codes are D/2 bytes a token, the scales int32 words."""
    if q_sf is not None:
        _args.tensor(q, "q[0]", FP4_CODES)
        _args.tensor(q_sf, "q[1]", (torch.int32,))
    else:
        _args.tensor(q, "q", (torch.float8_e4m3fn,))
    _args.tensor(kv_cache, "kv_cache", (torch.uint8,))
    _args.tensor(weights, "weights", FLOAT_DTYPES)
    _args.tensor(context_lens, "context_lens", INDEX_DTYPES)
    _args.tensor(block_table, "block_table", INDEX_DTYPES)
    _args.integer(topk, "topk", minimum=1)
    shape = _args._shape
    if q.dim() != 4:
        raise _args.invalid(f"q: expected rank 4 ([B,next_n,H,D]), got rank {q.dim()} shape {shape(q)}")
    B, next_n, H, D = q.shape  # D: the code bytes of a token (D/2 for MXFP4)
    if q_sf is not None and tuple(q_sf.shape) != (B, next_n, H):
        raise _args.invalid(f"q[1]: expected shape [{B},{next_n},{H}] ([B,next_n,H] like q[0], one int32 word of "
                            f"e8m0 scales a head), got {shape(q_sf)}")
    if q_sf is None and D % 4:
        raise _args.invalid(f"q: expected a head dimension D that is a multiple of 4 (the cache's fp32 scales follow "
                            f"block_kv * D code bytes and must be aligned), got D = {D}")
    if kv_cache.dim() != 4 or kv_cache.shape[2] != 1 or kv_cache.shape[3] != D + 4:
        raise _args.invalid(f"kv_cache: expected shape [num_blocks,block_kv,1,{D + 4}] (D + 4 bytes per token, "
                            f"D = {D} like q), got {shape(kv_cache)}")
    num_blocks, block_kv = kv_cache.shape[:2]
    s = kv_cache.stride()
    if (block_kv * D) % 4:
        raise _args.invalid(f"kv_cache: expected block_kv * {D} a multiple of 4 (the scale words follow the codes), "
                            f"got block_kv {block_kv}")
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
    return _topk(q, None, kv_cache, weights, context_lens, block_table, topk, return_values)


def _topk(q, q_sf, kv_cache, weights, context_lens, block_table, topk, return_values) -> Tuple[Tensor, Tensor]:
    """The checked call: FP8 (q_sf None) or MXFP4 (q and the cache's codes described as
    FLOAT4_E2M1X2, the scales int32 words)."""
    _check_lengths(context_lens, block_table, kv_cache.shape[1])
    B, next_n, H, D = q.shape
    indices, values = _outputs(q, topk, return_values)
    fp4 = q_sf is not None
    codes, scales = cache_views(kv_cache, D, torch.uint8, torch.int32) if fp4 else cache_views(kv_cache, D)
    if context_lens.dim() == 2:
        # a length per row: each row its own batch of one query (next_n 1), seeing keys < its
        # length through its sequence's table row; the rows and the outputs keep their order
        q, weights = q.reshape(B * next_n, 1, H, D), weights.reshape(B * next_n, H)
        q_sf = q_sf.reshape(B * next_n, 1, H) if fp4 else None
        context_lens, block_table = context_lens.reshape(-1), block_table.repeat_interleave(next_n, 0)
        B, next_n = B * next_n, 1
    code = (_capi.LIG_FLOAT4_E2M1X2,) if fp4 else ()
    # one key head: the C outputs' short form [B, next_n, K] is the rows' [B*next_n, K], in place
    inputs = ((q, "q[0]" if fp4 else "q", *code), (codes, "kv_cache", *code), (weights.view(B, next_n, H), "weights"),
              (q_sf, "q[1]" if fp4 else "query_dequant_scale"), (scales, "kv_cache"),
              (None, "actual_seq_lengths_query"), (context_lens, "context_lens"), (block_table, "block_table"))
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


@op("fp8_fp4_paged_mqa_topk")
def _fp8_fp4_paged_mqa_topk_op(q: Tensor, q_sf: Optional[Tensor], kv_cache: Tensor, weights: Tensor,
                               context_lens: Tensor, block_table: Tensor, topk: int,
                               return_values: bool) -> Tuple[Tensor, Tensor]:
    """lig::fp8_paged_mqa_topk's outputs, over the fused FP4 cache when q_sf is given."""
    _check(q, kv_cache, weights, context_lens, block_table, topk, q_sf)
    return _topk(q, q_sf, kv_cache, weights, context_lens, block_table, topk, return_values)


@_fp8_fp4_paged_mqa_topk_op.register_fake
def _(q, q_sf, kv_cache, weights, context_lens, block_table, topk, return_values):
    _check(q, kv_cache, weights, context_lens, block_table, topk, q_sf)
    return _outputs(q, topk, return_values, fake=True)


_fp8_fp4_paged_mqa_topk_op.refuse_autograd()


def fp8_fp4_paged_mqa_topk(q, kv_cache: Tensor, weights: Tensor, context_lens: Tensor, block_table: Tensor,
                           topk: int, return_values: bool = False) -> Union[Tensor, Tuple[Tensor, Tensor]]:
    """The decode top-k of ``fp8_fp4_paged_mqa_logits``, fused (lig's; DeepGEMM has none): ``q =
    (q_fp, q_sf)`` as that function takes it. ``q_sf`` given: MXFP4, ``q_fp [B,next_n,H,D/2]`` int8 /
    uint8 codes, ``q_sf [B,next_n,H]`` int32, ``kv_cache`` DeepGEMM's fused FP4 cache uint8
    ``[num_blocks,block_kv,1,D/2+4]`` (what :func:`indexer_k_mxfp4_quant_and_cache` writes), read in
    place. ``q_sf`` None: exactly :func:`fp8_paged_mqa_topk`. The other arguments, the visibility,
    the order and the outputs are :func:`fp8_paged_mqa_topk`'s; the scores are, bit for bit, the
    float32 logits :func:`fp8_fp4_paged_mqa_logits` gives. Not differentiable.

    Devices: CPU tensors only. The CUDA backend has no quantized forward yet: CUDA tensors raise
    :class:`LigValueError`, in any build.
    """
    if not isinstance(q, (tuple, list)) or len(q) != 2:
        raise TypeError(f"lig: q: expected a pair (q_fp, q_sf or None), got {type(q).__name__}")
    q_fp, q_sf = q
    if q_sf is None:
        return fp8_paged_mqa_topk(q_fp, kv_cache, weights, context_lens, block_table, topk, return_values)
    q_fp, kv_cache, weights, context_lens, block_table = tensors(
        (q_fp, "q[0]"), (kv_cache, "kv_cache"), (weights, "weights"), (context_lens, "context_lens"),
        (block_table, "block_table"))
    indices, values = torch.ops.lig.fp8_fp4_paged_mqa_topk(q_fp, optional_tensor(q_sf, "q[1]"), kv_cache, weights,
                                                          context_lens, block_table,
                                                          _args.integer(topk, "topk", minimum=1),
                                                          _args.flag(return_values, "return_values"))
    return (indices, values) if return_values else indices

"""lig::quant_indexer, the quantized forward (docs/contract.md 2.4: FP8 e4m3 or INT8 queries and
keys with per-(token, head) dequantization scales, keys contiguous or paged), and
lig.quant_lightning_indexer under torch_npu's name and argument order (npu_quant_lightning_indexer).
Not differentiable: it is an inference operator over 8-bit codes."""
from __future__ import annotations

from typing import Optional, Tuple, Union

import torch
from torch import Tensor

from . import _args, _capi, _forward, _registry
from ._args import FLOAT_DTYPES, INDEX_DTYPES
from ._capi import INT64_MAX, LIG_ERR_PARAM_NULLPTR
from ._lib import Descriptors, LigValueError
from ._registry import LengthsLike, op, optional_tensor, tensors

CODE_DTYPES = (torch.float8_e4m3fn, torch.int8)  # query and key (both the same)
SCALE_DTYPES = (torch.float32, torch.float16)  # query_dequant_scale, key_dequant_scale
# key's rank and dimension names per layout_key
_KEY_RANKS = {"BSND": (4, "[B,S2,N2,D]"), "TND": (3, "[T2,N2,D]"), "PA_BSND": (4, "[num_blocks,block_size,N2,D]")}
_QUERY_RANKS = {"BSND": (4, "[B,S1,N1,D]"), "TND": (3, "[T1,N1,D]")}


def _check(query, key, weights, query_dequant_scale, key_dequant_scale, aq, ak, block_table, layout_query,
           layout_key, sparse_count, values_dtype) -> None:
    """What Python checks before allocating the outputs (the library checks everything again, and
    how the tensors relate, before it writes)."""
    for t, name in ((query, "query"), (key, "key")):
        _args.tensor(t, name, CODE_DTYPES)
    _args.tensor(weights, "weights", FLOAT_DTYPES)
    _args.tensor(query_dequant_scale, "query_dequant_scale", SCALE_DTYPES, optional=True)
    _args.tensor(key_dequant_scale, "key_dequant_scale", SCALE_DTYPES)
    for t, name in ((aq, "actual_seq_lengths_query"), (ak, "actual_seq_lengths_key"), (block_table, "block_table")):
        _args.tensor(t, name, INDEX_DTYPES, optional=True)
    _args.integer(sparse_count, "sparse_count", minimum=1)
    for value, name, allowed in ((layout_query, "layout_query", _QUERY_RANKS), (layout_key, "layout_key", _KEY_RANKS)):
        _args.string(value, name)
        if value not in allowed:
            quoted = [f'"{v}"' for v in allowed]
            names = ", ".join(quoted[:-1]) + " or " + quoted[-1]
            raise _args.invalid(f'{name}: expected {names}, got "{value}"')
    for t, name, (rank, dims) in ((query, "query", _QUERY_RANKS[layout_query]), (key, "key", _KEY_RANKS[layout_key])):
        if t.dim() != rank:
            raise _args.invalid(f"{name}: expected rank {rank} ({dims}), got rank {t.dim()} shape {_args._shape(t)}")
    if layout_key == "PA_BSND":
        for t, name, what in ((block_table, "block_table", "a [B,max_blocks_per_seq] table"),
                              (ak, "actual_seq_lengths_key", "a [B] tensor of key lengths")):
            if t is None:  # the library's status for a missing tensor
                raise LigValueError(f"lig: {name}: expected {what} for layout_key \"PA_BSND\", got None",
                                    LIG_ERR_PARAM_NULLPTR)
        if block_table.dim() != 2:
            raise _args.invalid(f"block_table: expected rank 2 ([B,max_blocks_per_seq]), got rank {block_table.dim()} "
                                f"shape {_args._shape(block_table)}")
    _args.dtype_choice(values_dtype, FLOAT_DTYPES, "values_dtype")


def _outputs(query: Tensor, key: Tensor, layout_query: str, K: int, return_value: bool, values_dtype: torch.dtype,
             fake: bool = False) -> Tuple[Tensor, Tensor]:
    """int32 indices [B,S1,N2,K] | [T1,N2,K] (torch_npu's shape, N2 kept even when it is 1) and the
    values in that shape when asked, else an empty tensor."""
    lead = tuple(query.shape[:2]) if layout_query == "BSND" else tuple(query.shape[:1])
    shape = (*lead, key.shape[-2], K)
    new = query.new_empty if fake else (lambda s, dtype: torch.empty(s, dtype=dtype, device=query.device))
    return new(shape, dtype=torch.int32), new(shape if return_value else (0,), dtype=values_dtype)


def run_quant_indexer(named_inputs, query_quant_mode: int, key_quant_mode: int, layout_query: str, layout_key: str,
                      sparse_count: int, sparse_mode: int, pre_tokens: int, next_tokens: int, indices: Tensor,
                      values: Optional[Tensor]) -> None:
    """Phase 1 (lig_quant_indexer_get_workspace_size, with the 8 named inputs in the C order) and
    lig_quant_indexer. Shared with lig::fp8_paged_mqa_topk, which passes views into its cache."""
    with Descriptors() as desc:
        args = (*desc.each(named_inputs), query_quant_mode, key_quant_mode, layout_query.encode(), layout_key.encode(),
                sparse_count, sparse_mode, pre_tokens, next_tokens, desc(indices, "sparse_indices"),
                desc(values, "sparse_values"))
        _registry.run(_capi.lig_quant_indexer_get_workspace_size, _capi.lig_quant_indexer, args, "lig_quant_indexer",
                      desc.device)


@op("quant_indexer")
def _quant_indexer_op(  # the C operator's (CANN's) argument order
    query: Tensor,
    key: Tensor,
    weights: Tensor,
    query_dequant_scale: Optional[Tensor],
    key_dequant_scale: Tensor,
    actual_seq_lengths_query: Optional[Tensor],
    actual_seq_lengths_key: Optional[Tensor],
    block_table: Optional[Tensor],
    query_quant_mode: int,
    key_quant_mode: int,
    layout_query: str,
    layout_key: str,
    sparse_count: int,
    sparse_mode: int,
    pre_tokens: int,
    next_tokens: int,
    return_value: bool,
    values_dtype: torch.dtype,
) -> Tuple[Tensor, Tensor]:
    """(sparse_indices int32, sparse_values): the values empty unless return_value."""
    _check(query, key, weights, query_dequant_scale, key_dequant_scale, actual_seq_lengths_query,
           actual_seq_lengths_key, block_table, layout_query, layout_key, sparse_count, values_dtype)
    indices, values = _outputs(query, key, layout_query, sparse_count, return_value, values_dtype)
    inputs = ((query, "query"), (key, "key"), (weights, "weights"), (query_dequant_scale, "query_dequant_scale"),
              (key_dequant_scale, "key_dequant_scale"), (actual_seq_lengths_query, "actual_seq_lengths_query"),
              (actual_seq_lengths_key, "actual_seq_lengths_key"), (block_table, "block_table"))
    run_quant_indexer(inputs, query_quant_mode, key_quant_mode, layout_query, layout_key, sparse_count, sparse_mode,
                      pre_tokens, next_tokens, indices, values if return_value else None)
    return indices, values


@_quant_indexer_op.register_fake
def _(query, key, weights, query_dequant_scale, key_dequant_scale, aq, ak, block_table, query_quant_mode,
      key_quant_mode, layout_query, layout_key, sparse_count, sparse_mode, pre_tokens, next_tokens, return_value,
      values_dtype):
    _check(query, key, weights, query_dequant_scale, key_dequant_scale, aq, ak, block_table, layout_query, layout_key,
           sparse_count, values_dtype)
    return _outputs(query, key, layout_query, sparse_count, return_value, values_dtype, fake=True)


_quant_indexer_op.refuse_autograd()


def _ascend_only(query_dtype, key_dtype, query, key, metadata, cmp_ratio) -> None:
    """torch_npu's arguments that only mean something on Ascend: accepted at the values that ask
    for nothing lig lacks, refused by name otherwise."""
    for want, t, name in ((query_dtype, query, "query_dtype"), (key_dtype, key, "key_dtype")):
        # torch_npu uses these to carry HIFLOAT8 codes in an int8 tensor; lig has no HIFLOAT8
        if want is not None and want != getattr(t, "dtype", None):
            raise _args.invalid(f"{name}: expected None or the tensor's own dtype ({getattr(t, 'dtype', None)}; lig "
                                f"reads FLOAT8_E4M3FN and INT8 codes as they are and has no HIFLOAT8), got {want}")
    if metadata is not None:
        raise _args.invalid("metadata: expected None (lig plans its own work split across its threads; the tiling "
                            "metadata of npu_quant_lightning_indexer_metadata is Ascend's), got a tensor")
    if _args.integer(cmp_ratio, "cmp_ratio") != 1:
        raise _args.invalid(f"cmp_ratio: expected 1 (lig's keys are uncompressed rows), got {cmp_ratio}")


def quant_lightning_indexer(
    query: Tensor,
    key: Tensor,
    weights: Tensor,
    query_dequant_scale: Optional[Tensor],
    key_dequant_scale: Tensor,
    query_quant_mode: int = 0,
    key_quant_mode: int = 0,
    *,
    actual_seq_lengths_query: LengthsLike = None,
    actual_seq_lengths_key: LengthsLike = None,
    block_table: Optional[Tensor] = None,
    layout_query: str = "BSND",
    layout_key: str = "BSND",
    sparse_count: int = 2048,
    sparse_mode: int = 3,
    pre_tokens: int = INT64_MAX,
    next_tokens: int = INT64_MAX,
    query_dtype: Optional[torch.dtype] = None,
    key_dtype: Optional[torch.dtype] = None,
    metadata: Optional[Tensor] = None,
    cmp_ratio: int = 1,
    return_value: bool = False,
    values_dtype: torch.dtype = torch.float32,
) -> Union[Tensor, Tuple[Tensor, Tensor]]:
    """QuantLightningIndexer (docs/contract.md 2.4), torch_npu's ``npu_quant_lightning_indexer``.

    For each (batch, query row, key head) the ``sparse_count`` visible keys with the largest
    ``I = sum_h w * ReLU(sq * sk * (q . k))`` (descending, ties to the lower key; ``-1`` past the
    visible keys), computed in fp32 in the contract's fixed order: INT8 dots exact, FP8 products
    exact, bitwise reproducible for a kernel set and any thread count.

    ``query`` ``[B,S1,N1,D]`` | ``[T1,N1,D]`` and ``key`` (``layout_key`` "BSND" ``[B,S2,N2,D]``,
    "TND" ``[T2,N2,D]``, "PA_BSND" ``[num_blocks,block_size,N2,D]`` read through ``block_table``
    with per-batch ``actual_seq_lengths_key``) are both ``torch.float8_e4m3fn`` or both
    ``torch.int8``; ``weights`` ``[B,S1,N1]`` | ``[T1,N1]`` float32, float16 or bfloat16;
    ``query_dequant_scale`` like ``weights`` (float32 or float16; ``None``: 1, the scale folded into
    the weights as DeepSeek does); ``key_dequant_scale`` like ``key`` without ``D``. The lengths,
    ``sparse_mode`` (0 band, 3 right-down causal) and ``pre_tokens`` / ``next_tokens`` are
    :func:`indexer`'s.

    Returns int32 ``sparse_indices`` ``[B,S1,N2,K]`` | ``[T1,N2,K]`` (torch_npu's shape: the ``N2``
    axis is kept), or ``(sparse_indices, sparse_values)`` with ``return_value=True`` (the scores,
    ``values_dtype`` float32 by default, ``-inf`` in padded slots).

    torch_npu's Ascend-only arguments: ``query_dtype`` / ``key_dtype`` (HIFLOAT8 carried in another
    dtype) must be ``None`` or the tensor's dtype; ``metadata`` (Ascend's tiling plan) must be
    ``None``, lig splits the work itself; ``cmp_ratio`` must be 1. Unlike Ascend, lig takes any
    ``D``, ``N1``, ``N2`` dividing ``N1``, ``sparse_count`` and block size, and the token band.
    ``values_dtype`` is lig's own. Not differentiable.

    Devices: CPU tensors only. The CUDA backend has no FP8 / INT8 forward yet: CUDA tensors raise
    :class:`LigValueError`, in any build.
    """
    query, key, weights = tensors((query, "query"), (key, "key"), (weights, "weights"))
    _ascend_only(query_dtype, key_dtype, query, key, metadata, cmp_ratio)
    _args.dtype_choice(values_dtype, FLOAT_DTYPES, "values_dtype")
    indices, values = torch.ops.lig.quant_indexer(
        query, key, weights, optional_tensor(query_dequant_scale, "query_dequant_scale"),
        _registry.tensor(key_dequant_scale, "key_dequant_scale"),
        _args.lengths(actual_seq_lengths_query, "actual_seq_lengths_query"),
        _args.lengths(actual_seq_lengths_key, "actual_seq_lengths_key"),
        optional_tensor(block_table, "block_table"),
        _args.integer(query_quant_mode, "query_quant_mode"), _args.integer(key_quant_mode, "key_quant_mode"),
        _args.string(layout_query, "layout_query"), _args.string(layout_key, "layout_key"),
        _args.integer(sparse_count, "sparse_count", minimum=1), _args.integer(sparse_mode, "sparse_mode"),
        _args.integer(pre_tokens, "pre_tokens"), _args.integer(next_tokens, "next_tokens"),
        _args.flag(return_value, "return_value"), values_dtype)
    return (indices, values) if return_value else indices

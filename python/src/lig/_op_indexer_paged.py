"""lig::indexer_paged, the forward over a paged key cache (its values are not differentiable: lig
has no paged backward, and lig::indexer_paged_refuse_grad refuses a gradient that reaches them);
and lig.indexer_paged."""
from __future__ import annotations

from typing import Optional, Sequence, Tuple, Union

import torch
from torch import Tensor

from . import _args, _capi, _forward
from ._capi import INT64_MAX
from ._registry import LengthsLike, op, tensors


def _check(query, key_cache, block_table, weights, sparse_count, aq, ak, layout, index_dtype, values_dtype) -> None:
    _forward.check_args(((query, "query"), (key_cache, "key_cache"), (weights, "weights")),
                        ((block_table, "block_table", False), (aq, "actual_seq_lengths_query", True),
                         (ak, "actual_seq_lengths_key", False)),
                        sparse_count, lambda: _args.paged_layout(layout, query, key_cache, block_table), index_dtype,
                        values_dtype)


def _shape(query: Tensor, key_cache: Tensor, layout: str, K: int):
    return _forward.slots_shape(query, key_cache.shape[2], layout, K)  # [num_blocks, block_size, N2, D]


@op("indexer_paged")
def _indexer_paged_op(
    query: Tensor,
    key_cache: Tensor,
    block_table: Tensor,
    weights: Tensor,
    sparse_count: int,
    actual_seq_lengths_query: Optional[Tensor],
    actual_seq_lengths_key: Tensor,
    layout: str,
    sparse_mode: int,
    pre_tokens: int,
    next_tokens: int,
    index_dtype: torch.dtype,
    values_dtype: Optional[torch.dtype],
) -> Tuple[Tensor, Tensor]:
    _check(query, key_cache, block_table, weights, sparse_count, actual_seq_lengths_query, actual_seq_lengths_key,
           layout, index_dtype, values_dtype)
    indices, values = _forward.outputs(query, _shape(query, key_cache, layout, sparse_count), index_dtype,
                                       values_dtype)
    inputs = ((query, "query"), (key_cache, "key_cache"), (block_table, "block_table"), (weights, "weights"),
              (actual_seq_lengths_query, "actual_seq_lengths_query"), (actual_seq_lengths_key, "actual_seq_lengths_key"))
    _forward.run(_capi.lig_indexer_paged_get_workspace_size, "lig_indexer_paged", inputs, layout, sparse_count,
                 sparse_mode, pre_tokens, next_tokens, indices, values)
    return indices, values


@_indexer_paged_op.register_fake
def _(query, key_cache, block_table, weights, sparse_count, aq, ak, layout, sparse_mode, pre_tokens, next_tokens,
      index_dtype, values_dtype):
    _check(query, key_cache, block_table, weights, sparse_count, aq, ak, layout, index_dtype, values_dtype)
    return _forward.outputs(query, _shape(query, key_cache, layout, sparse_count), index_dtype, values_dtype,
                            fake=True)


PAGED_NOT_DIFFERENTIABLE = (
    "lig.indexer_paged: sparse_values is not differentiable (lig has no backward over a paged key cache), "
    "but a gradient reached it; to train through the scores, gather the keys into a contiguous tensor and call "
    "lig.lightning_indexer, or pass detached inputs to lig.indexer_paged"
)


@op("indexer_paged_refuse_grad")
def _indexer_paged_refuse_grad_op(
    grad_values: Tensor, query: Tensor, key_cache: Tensor, weights: Tensor, need_query: bool, need_key_cache: bool,
    need_weights: bool,
) -> Tuple[Tensor, Tensor, Tensor]:
    """The gradient of lig::indexer_paged's values: refused.

    Any non-zero (or NaN) element in the incoming gradient raises. Only an all-zero incoming
    gradient gets an answer, zeros, which is then the exact vector-Jacobian product whatever the
    Jacobian: torch.compile's backward hands zeros to the outputs a loss does not use, and a
    compiled function returning sparse_values next to a differentiated output must not fail.
    The gradients of (query, key_cache, weights) that the ``need_*`` flags do not ask for are
    empty (a key cache can be large).
    """
    if bool((grad_values != 0).any()):
        raise RuntimeError(PAGED_NOT_DIFFERENTIABLE)
    return tuple(torch.zeros(t.shape if need else (0,), dtype=t.dtype, device=t.device)
                 for t, need in ((query, need_query), (key_cache, need_key_cache), (weights, need_weights)))


@_indexer_paged_refuse_grad_op.register_fake
def _(grad_values, query, key_cache, weights, need_query, need_key_cache, need_weights):
    return tuple(t.new_empty(t.shape if need else (0,))
                 for t, need in ((query, need_query), (key_cache, need_key_cache), (weights, need_weights)))


_indexer_paged_refuse_grad_op.refuse_autograd()


def _setup_context(ctx, inputs, output):
    query, key_cache, _, weights = inputs[:4]
    ctx.mark_non_differentiable(output[0])
    ctx.save_for_backward(query, key_cache, weights)


def _backward(ctx, grad_indices, grad_values):
    # A gradient asked of sparse_values is refused (by an op, so that a compiled backward refuses
    # it when it runs, not when it is traced), never answered with a zero that would be wrong.
    query, key_cache, weights = ctx.saved_tensors
    need = ctx.needs_input_grad
    d_query, d_key_cache, d_weights = torch.ops.lig.indexer_paged_refuse_grad(
        grad_values, query, key_cache, weights, need[0], need[1], need[3])
    return (d_query if need[0] else None, d_key_cache if need[1] else None, None,
            d_weights if need[3] else None, None, None, None, None, None, None, None, None, None)


_indexer_paged_op.register_autograd(_backward, setup_context=_setup_context)


def indexer_paged(
    query: Tensor,
    key_cache: Tensor,
    block_table: Tensor,
    weights: Tensor,
    sparse_count: int,
    actual_seq_lengths_key: Union[Tensor, Sequence[int]],
    *,
    actual_seq_lengths_query: LengthsLike = None,
    layout: str = "BSND",
    sparse_mode: int = 3,
    pre_tokens: int = INT64_MAX,
    next_tokens: int = INT64_MAX,
    index_dtype: torch.dtype = torch.int32,
    values_dtype: Optional[torch.dtype] = None,
) -> Tuple[Tensor, Tensor]:
    """LightningIndexer over a paged key cache: returns ``(sparse_indices, sparse_values)``.

    As :func:`indexer`, except that the keys are read from ``key_cache``
    ``[num_blocks, block_size, N2, D]`` (the query's dtype) through ``block_table``
    ``[B, max_blocks_per_seq]`` (int32 or int64): key ``s`` of batch ``b`` is
    ``key_cache[block_table[b, s // block_size], s % block_size]``. ``actual_seq_lengths_key`` is
    required and holds per-batch key lengths (not cumulative ends), each at most
    ``max_blocks_per_seq * block_size``, whatever the query's layout ("BSND" or "TND"; for TND, B is
    the length of ``actual_seq_lengths_query``, which holds cumulative ends as for :func:`indexer`).
    Indices are batch-local positions ``s``. The table entries of the blocks that hold a batch's
    keys must lie in ``[0, num_blocks)`` (checked before anything is written); other entries, other
    blocks and the rows past a batch's length in its last block are never read.

    ``sparse_values`` is not differentiable (lig has no paged backward): when an input requires
    grad and a gradient reaches ``sparse_values``, the backward raises ``RuntimeError`` instead of
    returning a zero gradient (an incoming gradient that is zero everywhere, which torch.compile
    hands to unused outputs, gets its exact answer: zeros). Use :func:`lightning_indexer` on
    contiguous keys to train through the scores. There is no ``deterministic`` argument: it
    concerns only a backward.

    Devices: CPU tensors only. The CUDA backend has no paged forward yet: CUDA tensors raise
    :class:`LigValueError`, in any build.
    """
    _forward.check_output_dtypes(index_dtype, values_dtype)
    return tuple(
        torch.ops.lig.indexer_paged(
            *tensors((query, "query"), (key_cache, "key_cache"), (block_table, "block_table"), (weights, "weights")),
            _args.integer(sparse_count, "sparse_count", minimum=1),
            _args.lengths(actual_seq_lengths_query, "actual_seq_lengths_query"),
            _args.required_lengths(actual_seq_lengths_key, "actual_seq_lengths_key",
                                   "key lengths (required for a paged key cache)"),
            *_args.band(layout, sparse_mode, pre_tokens, next_tokens),
            index_dtype,
            values_dtype,
        )
    )

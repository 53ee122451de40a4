"""lig::indexer, the forward over contiguous keys (scores + top-k), differentiable in its values
through lig's backward (lig::indexer_grad); and lig.indexer / lig.lightning_indexer."""
from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

from . import _args, _capi, _forward
from ._capi import INT64_MAX
from ._registry import LengthsLike, op, tensors


def _check(query, key, weights, sparse_count, aq, ak, layout, index_dtype, values_dtype) -> None:
    _forward.check_args(((query, "query"), (key, "key"), (weights, "weights")),
                        ((aq, "actual_seq_lengths_query", True), (ak, "actual_seq_lengths_key", True)),
                        sparse_count, lambda: _args.layout(layout, query, key), index_dtype, values_dtype)


def _shape(query: Tensor, key: Tensor, layout: str, K: int):
    return _forward.slots_shape(query, key.shape[2] if layout == "BSND" else key.shape[1], layout, K)


@op("indexer")
def _indexer_op(
    query: Tensor,
    key: Tensor,
    weights: Tensor,
    sparse_count: int,
    actual_seq_lengths_query: Optional[Tensor],
    actual_seq_lengths_key: Optional[Tensor],
    layout: str,
    sparse_mode: int,
    pre_tokens: int,
    next_tokens: int,
    index_dtype: torch.dtype,
    values_dtype: Optional[torch.dtype],
    deterministic: bool,
) -> Tuple[Tensor, Tensor]:
    _check(query, key, weights, sparse_count, actual_seq_lengths_query, actual_seq_lengths_key, layout, index_dtype,
           values_dtype)
    indices, values = _forward.outputs(query, _shape(query, key, layout, sparse_count), index_dtype, values_dtype)
    inputs = ((query, "query"), (key, "key"), (weights, "weights"),
              (actual_seq_lengths_query, "actual_seq_lengths_query"), (actual_seq_lengths_key, "actual_seq_lengths_key"))
    _forward.run(_capi.lig_indexer_get_workspace_size, "lig_indexer", inputs, layout, sparse_count, sparse_mode,
                 pre_tokens, next_tokens, indices, values)
    return indices, values


@_indexer_op.register_fake
def _(query, key, weights, sparse_count, aq, ak, layout, sparse_mode, pre_tokens, next_tokens, index_dtype,
      values_dtype, deterministic):
    _check(query, key, weights, sparse_count, aq, ak, layout, index_dtype, values_dtype)
    return _forward.outputs(query, _shape(query, key, layout, sparse_count), index_dtype, values_dtype, fake=True)


def _setup_context(ctx, inputs, output):
    query, key, weights, _, aq, ak, layout, sparse_mode, pre_tokens, next_tokens, _, _, deterministic = inputs
    indices, _ = output
    ctx.save_for_backward(query, key, weights, indices, aq, ak)
    ctx.config = (layout, sparse_mode, pre_tokens, next_tokens, deterministic)


def _backward(ctx, grad_indices, grad_values):
    query, key, weights, indices, aq, ak = ctx.saved_tensors
    layout, sparse_mode, pre_tokens, next_tokens, deterministic = ctx.config
    # dy = dL/d(sparse_values); padded slots (index -1) are skipped by lig whatever dy holds there.
    dy = grad_values.to(query.dtype)
    d_query, d_key, d_weights = torch.ops.lig.indexer_grad(
        query, key, dy, indices, weights, aq, ak, layout, sparse_mode, pre_tokens, next_tokens,
        deterministic, weights.dtype,
    )
    return d_query, d_key, d_weights, None, None, None, None, None, None, None, None, None, None


_indexer_op.register_autograd(_backward, setup_context=_setup_context)


def indexer(
    query: Tensor,
    key: Tensor,
    weights: Tensor,
    sparse_count: int,
    *,
    actual_seq_lengths_query: LengthsLike = None,
    actual_seq_lengths_key: LengthsLike = None,
    layout: str = "BSND",
    sparse_mode: int = 3,
    pre_tokens: int = INT64_MAX,
    next_tokens: int = INT64_MAX,
    index_dtype: torch.dtype = torch.int32,
    values_dtype: Optional[torch.dtype] = None,
    deterministic: bool = True,
) -> Tuple[Tensor, Tensor]:
    """LightningIndexer (forward): returns ``(sparse_indices, sparse_values)``.

    For each (batch, query row, key head) the ``sparse_count`` visible keys with the largest
    ``I = sum_h w * ReLU(q . k)``, by descending score, ties to the lower key index; ``-1`` indices
    and ``-inf`` values fill the slots left over when fewer keys are visible (mask them before
    summing the values). Outputs are ``[B,S1,N2,K]`` | ``[T1,N2,K]``, without the N2 axis when
    N2 == 1 (as CANN and DeepSeek do). ``index_dtype`` is int32 or int64; ``values_dtype`` the query
    dtype (default) or float32. The contract is docs/contract.md in the repository.

    ``sparse_values`` carries gradients to query, key and weights: its backward is lig's
    LightningIndexerGrad, fed with dy = the gradient of ``sparse_values`` (padded slots hold index
    -1 and are skipped, whatever their gradient; ``deterministic`` is passed to it); the selection
    is not differentiable. Works under ``torch.compile(fullgraph=True)`` (the op has fake and
    autograd rules).

    ``lig.lightning_indexer`` is this same function under DeepSeek's and CANN's name for the
    operator; ``lig.indexer`` is the name of lig's C operator (``lig_indexer``) and of
    ``torch.ops.lig.indexer``. Both names exist so that code written either way reads as it is.

    Devices: CPU tensors; CUDA tensors too when the library was built with the CUDA backend
    (``-DLIG_CUDA=ON``, docs/cuda.md; without it they raise :class:`LigValueError`), all on one device,
    sequence lengths on the CPU. A CUDA call runs on ``torch.cuda.current_stream()``, puts its outputs
    on that device, and its checks of tensor contents, made on the device, raise later: at the next lig
    call on a CUDA device or in :func:`check_errors`.
    """
    _forward.check_output_dtypes(index_dtype, values_dtype)
    return tuple(
        torch.ops.lig.indexer(
            *tensors((query, "query"), (key, "key"), (weights, "weights")),
            _args.integer(sparse_count, "sparse_count", minimum=1),
            _args.lengths(actual_seq_lengths_query, "actual_seq_lengths_query"),
            _args.lengths(actual_seq_lengths_key, "actual_seq_lengths_key"),
            *_args.band(layout, sparse_mode, pre_tokens, next_tokens),
            index_dtype,
            values_dtype,
            _args.flag(deterministic, "deterministic"),
        )
    )


lightning_indexer = indexer

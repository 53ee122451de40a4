"""lig::indexer_grad, LightningIndexerGrad (dQ, dK, dW; not itself differentiable), and
lig.indexer_grad."""
from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

from . import _args, _capi
from ._args import FLOAT_DTYPES
from ._capi import INT64_MAX
from ._lib import Descriptors
from ._registry import LengthsLike, op, run, tensors


def _check(query, key, dy, sparse_indices, weights, aq, ak, d_weights_dtype) -> None:
    _args.tensors(((query, "query"), (key, "key"), (dy, "dy"), (weights, "weights")),
                  ((sparse_indices, "sparse_indices", False), (aq, "actual_seq_lengths_query", True),
                   (ak, "actual_seq_lengths_key", True)))
    _args.optional_dtype_choice(d_weights_dtype, FLOAT_DTYPES, "d_weights_dtype")


@op("indexer_grad")
def _indexer_grad_op(
    query: Tensor,
    key: Tensor,
    dy: Tensor,
    sparse_indices: Tensor,
    weights: Tensor,
    actual_seq_lengths_query: Optional[Tensor],
    actual_seq_lengths_key: Optional[Tensor],
    layout: str,
    sparse_mode: int,
    pre_tokens: int,
    next_tokens: int,
    deterministic: bool,
    d_weights_dtype: Optional[torch.dtype],
) -> Tuple[Tensor, Tensor, Tensor]:
    _check(query, key, dy, sparse_indices, weights, actual_seq_lengths_query, actual_seq_lengths_key,
                     d_weights_dtype)
    d_query = torch.empty(query.shape, dtype=query.dtype, device=query.device)
    d_key = torch.empty(key.shape, dtype=query.dtype, device=query.device)
    d_weights = torch.empty(weights.shape, dtype=d_weights_dtype if d_weights_dtype is not None else query.dtype,
                            device=query.device)
    inputs = ((query, "query"), (key, "key"), (dy, "dy"), (sparse_indices, "sparse_indices"), (weights, "weights"),
              (actual_seq_lengths_query, "actual_seq_lengths_query"), (actual_seq_lengths_key, "actual_seq_lengths_key"))
    with Descriptors() as desc:
        args = (
            *desc.each(inputs),
            0,  # head_num: taken from query
            layout.encode(),
            sparse_mode,
            pre_tokens,
            next_tokens,
            bool(deterministic),
            *desc.each(((d_query, "d_query"), (d_key, "d_key"), (d_weights, "d_weights"))),
        )
        run(_capi.lig_indexer_grad_get_workspace_size, _capi.lig_indexer_grad, args, "lig_indexer_grad", desc.device)
    return d_query, d_key, d_weights


@_indexer_grad_op.register_fake
def _(query, key, dy, sparse_indices, weights, aq, ak, layout, sparse_mode, pre_tokens, next_tokens,
      deterministic, d_weights_dtype):
    _check(query, key, dy, sparse_indices, weights, aq, ak, d_weights_dtype)
    return (
        query.new_empty(query.shape),
        key.new_empty(key.shape, dtype=query.dtype),
        weights.new_empty(weights.shape, dtype=d_weights_dtype if d_weights_dtype is not None else query.dtype),
    )


_indexer_grad_op.refuse_autograd()


def indexer_grad(
    query: Tensor,
    key: Tensor,
    dy: Tensor,
    sparse_indices: Tensor,
    weights: Tensor,
    *,
    actual_seq_lengths_query: LengthsLike = None,
    actual_seq_lengths_key: LengthsLike = None,
    layout: str = "BSND",
    sparse_mode: int = 3,
    pre_tokens: int = INT64_MAX,
    next_tokens: int = INT64_MAX,
    deterministic: bool = True,
    d_weights_dtype: Optional[torch.dtype] = None,
) -> Tuple[Tensor, Tensor, Tensor]:
    """LightningIndexerGrad: returns ``(d_query, d_key, d_weights)``.

    The contract (formulas, which slots count, errors) is docs/contract.md in the repository.
    Shapes: query ``[B,S1,N1,D]`` | ``[T1,N1,D]``, key ``[B,S2,N2,D]`` | ``[T2,N2,D]``,
    dy and sparse_indices ``[B,S1,N2,K]`` | ``[T1,N2,K]`` (or without N2 when N2 == 1), weights
    ``[B,S1,N1]`` | ``[T1,N1]``. query, key, dy and weights share one dtype (float32, float16 or
    bfloat16); indices are int32 or int64. Sequence lengths: BSND optional per-batch lengths, TND
    required cumulative ends; a list of ints or an int32/int64 tensor. ``d_weights_dtype`` is the
    query dtype (default) or float32. Strided (non-contiguous) tensors are read in place.

    ``deterministic=True`` (the default) makes the results bitwise reproducible, across runs and
    thread counts; ``deterministic=False`` lets d_key's sums run in any order (last-bit differences).

    Devices: CPU tensors; CUDA tensors too when the library was built with the CUDA backend
    (``-DLIG_CUDA=ON``, docs/cuda.md; without it they raise :class:`LigValueError`), all on one device,
    sequence lengths on the CPU. A CUDA call runs on ``torch.cuda.current_stream()``, puts its outputs
    on that device, and its checks of tensor contents, made on the device, raise later: at the next lig
    call on a CUDA device or in :func:`check_errors`.
    """
    _args.optional_dtype_choice(d_weights_dtype, FLOAT_DTYPES, "d_weights_dtype")
    return tuple(
        torch.ops.lig.indexer_grad(
            *tensors((query, "query"), (key, "key"), (dy, "dy"), (sparse_indices, "sparse_indices"),
                     (weights, "weights")),
            _args.lengths(actual_seq_lengths_query, "actual_seq_lengths_query"),
            _args.lengths(actual_seq_lengths_key, "actual_seq_lengths_key"),
            *_args.band(layout, sparse_mode, pre_tokens, next_tokens),
            _args.flag(deterministic, "deterministic"),
            d_weights_dtype,
        )
    )
